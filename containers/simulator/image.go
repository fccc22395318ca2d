package simulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/internal/tokenizer"
)

// ImageRepo is the repository name of the simulator's local images; the tag
// is the content hash of everything that goes into them.
const ImageRepo = "servegate-sim"

// mainPackage is the simulator command built into the image.
const mainPackage = "./containers/simulator/cmd/servegate-sim"

// imageTokenizer is where the image keeps the Llama-3 tokenizer.
const imageTokenizer = "tokenizer.json"

// hashedSources are the repository paths whose content decides the image:
// the simulator command and every servegate package it imports, and the
// module files. TestHashedSourcesCoverDeps keeps the list whole.
var hashedSources = []string{
	"containers/simulator/cmd", "internal/sim", "internal/tokenizer",
	"internal/kstamp", "internal/jsonscan", "go.mod", "go.sum",
}

var imageMu sync.Mutex

// Image returns the tag of the simulator image for the current sources,
// building it first when the Docker daemon does not have it: a static
// binary (cgo with libtokenizers linked in; a pure-Go binary with the word
// tokenizer when that link fails) and the Llama-3 tokenizer, in a FROM
// scratch image. logw receives progress lines; nil discards them.
func Image(ctx context.Context, logw io.Writer) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return ImageAt(ctx, root, logw)
}

// ImageAt is Image for the servegate sources at root, such as a checkout
// of another revision: paired mode (benchtest, SERVEGATE_PAIRED_BASE)
// builds the base side's simulator from the base checkout this way. The
// image's recipe is this build's; the simulator's code is root's.
func ImageAt(ctx context.Context, root string, logw io.Writer) (string, error) {
	if logw == nil {
		logw = io.Discard
	}
	imageMu.Lock()
	defer imageMu.Unlock()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("simulator image: the servegate sources are not at %s (%w)", root, err)
	}
	tok, err := tokenizer.BundledJSON(tokenizer.Llama3)
	if err != nil {
		return "", fmt.Errorf("simulator image: %w", err)
	}
	hash, err := sourceHash(root, tok)
	if err != nil {
		return "", err
	}
	tag := ImageRepo + ":" + hash
	dockertest.SetDefaults()
	if ok, err := imageExists(ctx, tag); err != nil {
		return "", err
	} else if ok {
		return tag, nil
	}
	fmt.Fprintf(logw, "simulator: building image %s\n", tag)
	bin, cgo, err := buildBinary(ctx, root, hash, logw)
	if err != nil {
		return "", err
	}
	var args []string
	extra := map[string][]byte{}
	if cgo {
		args = []string{"--tokenizer", "/" + imageTokenizer}
		extra[imageTokenizer] = tok
	}
	archive, err := dockertest.ScratchContext(bin, args, extra)
	if err != nil {
		return "", fmt.Errorf("simulator image: %w", err)
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", fmt.Errorf("simulator image: %w", err)
	}
	defer p.Close()
	_, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: archive, Repo: ImageRepo, Tag: hash, KeepImage: true,
	}})
	if err != nil {
		return "", fmt.Errorf("simulator image: build %s: %w", tag, err)
	}
	return tag, nil
}

func imageExists(ctx context.Context, tag string) (bool, error) {
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false, fmt.Errorf("simulator image: %w", err)
	}
	defer p.Close()
	if _, err := p.Client().ImageInspect(ctx, tag); err != nil {
		return false, nil
	}
	return true, nil
}

// modulePath is servegate's module path.
const modulePath = "github.com/servegate/servegate"

// repoRoot is the directory of the servegate module that the current
// directory's module builds with: the checkout itself, a replace target or
// the Go module cache. The image is built from its sources, so building it
// needs the go command (as building any Go test does).
func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modulePath).Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("simulator image: find the %s sources from this directory: %v %s; run from a module that requires servegate, or give target.image", modulePath, err, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("simulator image: the servegate sources are not at %s (%w)", root, err)
	}
	return root, nil
}

// sourceHash hashes the Go version, the platform, the simulator's sources
// (tests excluded) and the tokenizer file.
func sourceHash(root string, tokenizer []byte) (string, error) {
	var files []string
	for _, src := range hashedSources {
		err := filepath.WalkDir(filepath.Join(root, src), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, "_test.go") {
				return nil
			}
			if name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".yaml") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("simulator image: hash sources: %w", err)
		}
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("simulator image: hash sources: %w", err)
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "tokenizer %d\n", len(tokenizer))
	h.Write(tokenizer)
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// buildBinary compiles the simulator into a static Linux binary, cached by
// hash under the user cache directory. It links the tokenizer statically
// with cgo; when that fails it builds without cgo (word tokenizer) and says
// so on logw.
func buildBinary(ctx context.Context, root, hash string, logw io.Writer) ([]byte, bool, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "servegate", "sim-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("simulator binary: %w", err)
	}
	for _, cgo := range []bool{true, false} {
		path := filepath.Join(dir, hash+map[bool]string{true: "-cgo", false: "-pure"}[cgo])
		if bin, err := os.ReadFile(path); err == nil {
			return bin, cgo, nil
		}
	}
	// Each build writes into its own temporary directory: processes that
	// build the same hash at once (go test runs packages in parallel) must
	// not rename one another's output away.
	tmpDir, err := os.MkdirTemp(dir, hash+"-*.tmp")
	if err != nil {
		return nil, false, fmt.Errorf("simulator binary: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "servegate-sim")
	out, err := goBuild(ctx, root, tmp, true)
	if err == nil {
		return finishBinary(tmp, filepath.Join(dir, hash+"-cgo"), true)
	}
	fmt.Fprintf(logw, "simulator: static cgo link failed (%v): %s\nsimulator: falling back to a pure-Go binary with the word tokenizer\n", err, out)
	if out, err := goBuild(ctx, root, tmp, false); err != nil {
		return nil, false, fmt.Errorf("simulator binary: go build: %w: %s", err, out)
	}
	return finishBinary(tmp, filepath.Join(dir, hash+"-pure"), false)
}

func finishBinary(tmp, final string, cgo bool) ([]byte, bool, error) {
	if err := os.Rename(tmp, final); err != nil {
		return nil, false, fmt.Errorf("simulator binary: %w", err)
	}
	bin, err := os.ReadFile(final)
	if err != nil {
		return nil, false, fmt.Errorf("simulator binary: %w", err)
	}
	return bin, cgo, nil
}

func goBuild(ctx context.Context, root, out string, cgo bool) ([]byte, error) {
	ldflags := "-s -w"
	env := []string{"GOOS=linux", "GOFLAGS="}
	if cgo {
		ldflags += " -linkmode external -extldflags -static"
		env = append(env, "CGO_ENABLED=1")
	} else {
		env = append(env, "CGO_ENABLED=0")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "netgo,osusergo", "-ldflags", ldflags, "-o", out, mainPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if err == nil && cgo {
		// The static link succeeds with warnings; the binary must be
		// static to run in an empty image.
		if data, rerr := os.ReadFile(out); rerr == nil && bytes.Contains(data, []byte("/lib64/ld-linux")) {
			err = errors.New("the binary is not static")
		}
	}
	return buf.Bytes(), err
}
