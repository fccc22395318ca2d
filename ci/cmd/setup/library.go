package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// tokenizersModule is the Go binding whose Rust library we link.
const tokenizersModule = "github.com/daulet/tokenizers"

// pinnedVersion is the binding's version servegate requires; it is used when
// the current directory is not in a module that requires the binding. Later
// versions pull a git dependency that machines reaching only crates.io
// cannot fetch.
const pinnedVersion = "v1.22.1"

// A module is one version of the binding and its source directory in the Go
// module cache.
type module struct {
	Version string
	Dir     string
}

// findModule asks the go command for the binding's version in the current
// module's graph and its source directory, downloading the source (a Go
// module zip, no cgo) when the module cache lacks it.
func findModule(ctx context.Context) (module, error) {
	var m module
	out, err := goCmd(ctx, nil, "list", "-m", "-json", tokenizersModule)
	if err != nil || json.Unmarshal(out, &m) != nil || m.Version == "" {
		m = module{Version: pinnedVersion}
	}
	if m.Dir != "" {
		return m, nil
	}
	out, err = goCmd(ctx, nil, "mod", "download", "-json", tokenizersModule+"@"+m.Version)
	if err != nil {
		return m, fmt.Errorf("download %s@%s: %w", tokenizersModule, m.Version, err)
	}
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return m, fmt.Errorf("download %s@%s: no source directory in %q", tokenizersModule, m.Version, out)
	}
	return m, nil
}

// cacheRoot is where servegate caches what it builds:
// $SERVEGATE_CACHE, else <user cache dir>/servegate.
func cacheRoot() (string, error) {
	if d := os.Getenv("SERVEGATE_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: %w (set SERVEGATE_CACHE)", err)
	}
	return filepath.Join(d, "servegate"), nil
}

// libDir is the cache directory of one version's library.
func libDir(version string) (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "libtokenizers", version), nil
}

// versionSymbol is the symbol each libtokenizers release defines for its
// version: tokenizers_version_1_22_1 for v1.22.1.
func versionSymbol(version string) string {
	return "tokenizers_version_" + strings.NewReplacer(".", "_", "-", "_").Replace(strings.TrimPrefix(version, "v"))
}

// ensureLibrary returns the path of the cached libtokenizers.a for mod's
// version: prebuilt (a non-empty prebuilt path), cached, or built now.
func ensureLibrary(ctx context.Context, mod module, prebuilt string, stdout, stderr io.Writer) (string, error) {
	dir, err := libDir(mod.Version)
	if err != nil {
		return "", err
	}
	lib := filepath.Join(dir, "libtokenizers.a")
	sym := versionSymbol(mod.Version)
	if prebuilt != "" {
		if err := checkLibrary(prebuilt, sym); err != nil {
			return "", fmt.Errorf("LIBTOKENIZERS=%s: %w; get the %s release of %s", prebuilt, err, mod.Version, tokenizersModule)
		}
		if err := copyFile(prebuilt, lib); err != nil {
			return "", err
		}
		fmt.Fprintf(stdout, "setup: libtokenizers %s from LIBTOKENIZERS, cached at %s\n", mod.Version, lib)
		return lib, nil
	}
	if checkLibrary(lib, sym) == nil {
		fmt.Fprintf(stdout, "setup: libtokenizers %s cached at %s\n", mod.Version, lib)
		return lib, nil
	}
	if err := build(ctx, mod, lib, stdout, stderr); err != nil {
		return "", err
	}
	if err := checkLibrary(lib, sym); err != nil {
		return "", fmt.Errorf("built %s: %w", lib, err)
	}
	fmt.Fprintf(stdout, "setup: libtokenizers %s built, cached at %s\n", mod.Version, lib)
	return lib, nil
}

// checkLibrary reports whether path is a library that defines sym. It looks
// for the symbol's name in the archive's string tables (NUL-terminated in
// ELF and Mach-O alike), reading the file in a stream.
func checkLibrary(path, sym string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	want := []byte(sym + "\x00")
	r := bufio.NewReaderSize(f, 1<<20)
	buf := make([]byte, 0, 2<<20)
	chunk := make([]byte, 1<<20)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, want) {
			return nil
		}
		if err == io.EOF {
			return fmt.Errorf("not libtokenizers of this version (no symbol %s)", sym)
		}
		if err != nil {
			return err
		}
		// Keep a tail that can hold the start of a symbol split between reads.
		if keep := len(want) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
	}
}

// build compiles the library with cargo from a writable copy of the module
// source (the module cache is read-only) and moves it to lib.
func build(ctx context.Context, mod module, lib string, stdout, stderr io.Writer) error {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return errors.New("cargo not found: install Rust (https://rustup.rs) or give a prebuilt library: " +
			"download libtokenizers.<os>-<arch>.tar.gz of release " + mod.Version + " from github.com/daulet/tokenizers, " +
			"unpack it and run with LIBTOKENIZERS=/path/to/libtokenizers.a")
	}
	work, err := os.MkdirTemp("", "servegate-libtokenizers-")
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(work)
	if err := copyTree(mod.Dir, work); err != nil {
		return fmt.Errorf("build: copy %s: %w", mod.Dir, err)
	}
	fmt.Fprintf(stdout, "setup: building libtokenizers %s with cargo (a few minutes, once)\n", mod.Version)
	cmd := exec.CommandContext(ctx, cargo, "build", "--release", "--locked")
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cargo build --release --locked in a copy of %s: %w (its output is above)", mod.Dir, err)
	}
	return copyFile(filepath.Join(work, "target", "release", "libtokenizers.a"), lib)
}

// copyFile copies src to dst through a temporary file and a rename, so that
// a reader never sees half a library.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// copyTree copies the regular files and directories under src into dst,
// writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
}

// goCmd runs the go command and returns its standard output; an error
// carries its standard error. env entries are added to the environment.
func goCmd(ctx context.Context, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("go %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return out, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
