package compare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// command runs name with args in dir and returns its trimmed standard
// output; the error carries its standard error.
func command(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// A repo is the git repository that holds the module.
type repo struct {
	// root is the repository's top directory; rel the module root
	// relative to it ("." when they are one).
	root, rel string
}

// findRepo finds the git repository of the module root dir.
func findRepo(ctx context.Context, dir string) (*repo, error) {
	top, err := command(ctx, dir, nil, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, inputErrorf("%s is not in a git repository: compare checks BASE out with git", dir)
	}
	top, err = filepath.EvalSymlinks(top)
	if err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("module root: %w", err)
	}
	rel, err := filepath.Rel(top, real)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("module root %s is not under the repository %s", dir, top)
	}
	return &repo{root: top, rel: rel}, nil
}

// commit resolves ref to a commit hash; what names no commit is bad input.
func (r *repo) commit(ctx context.Context, what, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", inputErrorf("%s %q is not a commit", what, ref)
	}
	sha, err := command(ctx, r.root, nil, "git", "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil || sha == "" {
		return "", inputErrorf("%s %s is not a commit of %s (in a shallow clone, fetch it first: actions/checkout with fetch-depth: 0)", what, ref, r.root)
	}
	return sha, nil
}

// worktree checks sha out, detached, in a new directory under parent
// and returns the directory and the function that removes it.
func (r *repo) worktree(ctx context.Context, parent, name, sha string) (string, func(), error) {
	dir := filepath.Join(parent, name)
	if _, err := command(ctx, r.root, nil, "git", "worktree", "add", "--quiet", "--detach", dir, sha); err != nil {
		return "", func() {}, fmt.Errorf("check %s out: %w", name, err)
	}
	remove := func() {
		// The context may be cancelled by now; removing must not be.
		_, _ = command(context.Background(), r.root, nil, "git", "worktree", "remove", "--force", dir)
		_ = os.RemoveAll(dir)
	}
	return dir, remove, nil
}
