package generic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
)

// imageRepoPrefix starts the repository name of built target images; the
// context directory's name follows, and the tag is the content hash.
const imageRepoPrefix = "servegate-target-"

// Image returns the tag of b's image, building it first with testcontainers'
// FromDockerfile when the Docker daemon does not have it. The tag is
// servegate-target-<context dir name>:<hash of the Dockerfile name, the
// build args and every file in the context>, so an unchanged context is
// never built twice and a changed one always is. logw receives the build
// log; nil discards it. A failed build's error carries the log's tail.
func Image(ctx context.Context, b Build, logw io.Writer) (string, error) {
	if logw == nil {
		logw = io.Discard
	}
	if b.Dockerfile == "" {
		b.Dockerfile = "Dockerfile"
	}
	dir, err := filepath.Abs(b.Context)
	if err != nil {
		return "", fmt.Errorf("build: context %s: %w", b.Context, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("build: context %s: not a directory (%v)", b.Context, err)
	}
	df := filepath.Join(dir, filepath.FromSlash(b.Dockerfile))
	if st, err := os.Stat(df); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("build: dockerfile %s: no such file", df)
	} else if err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("build: dockerfile %s: not a regular file (%v)", df, err)
	}
	hash, err := contextHash(dir, b)
	if err != nil {
		return "", err
	}
	repo := imageRepoPrefix + repoName(filepath.Base(dir))
	tag := repo + ":" + hash
	dockertest.SetDefaults()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	defer p.Close()
	if _, err := p.Client().ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	args := map[string]*string{}
	for k, v := range b.Args {
		args[k] = &v
	}
	log := newTail(logTailLines, 8<<10)
	_, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context: dir, Dockerfile: b.Dockerfile, BuildArgs: args,
		Repo: repo, Tag: hash, KeepImage: true,
		BuildLogWriter: io.MultiWriter(logw, log),
	}})
	if err != nil {
		msg := fmt.Errorf("build %s from %s: %w", tag, df, err)
		if s := log.String(); s != "" {
			msg = fmt.Errorf("%w\nbuild log, last lines:\n%s", msg, s)
		}
		return "", msg
	}
	return tag, nil
}

// contextHash hashes the Dockerfile's name, the build args and every
// regular file under dir (path, executable bit, content), in path order.
// .git is skipped; every other file counts, even one .dockerignore
// excludes: a needless rebuild is cheap, a stale image is wrong.
func contextHash(dir string, b Build) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "dockerfile %q\n", b.Dockerfile)
	for _, k := range slices.Sorted(maps.Keys(b.Args)) {
		fmt.Fprintf(h, "arg %q=%q\n", k, b.Args[k])
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "file %q %d %v\n", filepath.ToSlash(rel), info.Size(), info.Mode()&0o111 != 0)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("build: hash context %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// repoName makes a directory name a valid image repository component:
// lower case letters, digits, '.', '_' and '-'.
func repoName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), ".-_")
	if name == "" {
		return "context"
	}
	return name
}
