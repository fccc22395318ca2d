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
	"regexp"
	"strings"
)

// tokenizersModule is the Go binding whose Rust library we link.
const tokenizersModule = "github.com/daulet/tokenizers"

// pinnedVersion is the binding's version servegate requires; it is used when
// the current directory is not in a module that requires the binding. Its
// Cargo.toml takes one crate from a git branch; the build swaps it for a
// crates.io release (see patches).
const pinnedVersion = "v1.24.0"

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

// linkCheck is the line of the binding's tokenizer.go that makes the link
// fail unless the library defines the symbol of the Rust source it was
// built from.
var linkCheck = regexp.MustCompile(`extern void (tokenizers_version_[0-9A-Za-z_]+)\(void\);`)

// linkSymbol returns the version symbol that the binding in dir links
// against: tokenizers_version_1_22_1 for v1.22.1. It is read from the
// source, not derived from the Go version, because releases do not always
// rename it (v1.24.0 keeps v1.23.0's tokenizers_version_1_23_0).
func linkSymbol(dir string) (string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "tokenizer.go"))
	if err != nil {
		return "", fmt.Errorf("read the binding's link check: %w", err)
	}
	m := linkCheck.FindSubmatch(src)
	if m == nil {
		return "", fmt.Errorf("%s has no link-time version check (extern void tokenizers_version_...); this setup cannot tell which library it needs", filepath.Join(dir, "tokenizer.go"))
	}
	return string(m[1]), nil
}

// ensureLibrary returns the path of the cached libtokenizers.a for mod's
// version: prebuilt (a non-empty prebuilt path), cached, or built now.
func ensureLibrary(ctx context.Context, mod module, prebuilt string, stdout, stderr io.Writer) (string, error) {
	dir, err := libDir(mod.Version)
	if err != nil {
		return "", err
	}
	lib := filepath.Join(dir, "libtokenizers.a")
	sym, err := linkSymbol(mod.Dir)
	if err != nil {
		return "", err
	}
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
	if err := build(ctx, mod, sym, lib, stdout, stderr); err != nil {
		return "", err
	}
	fmt.Fprintf(stdout, "setup: libtokenizers %s built, cached at %s\n", mod.Version, lib)
	return lib, nil
}

// checkLibrary reports whether path is a whole static library that defines
// sym. A file that is not a complete ar archive (a copy cut short, a build
// killed half-way) fails, and so does a library of another version.
func checkLibrary(path, sym string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkArchive(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return findSymbol(f, sym)
}

// arMagic starts every ar archive (GNU and BSD alike).
const arMagic = "!<arch>\n"

// checkArchive walks the member headers of an ar archive and fails unless
// the members end exactly at the end of the file: a truncated archive has a
// member that runs past it. It seeks over member data and reads headers only.
func checkArchive(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	magic := make([]byte, len(arMagic))
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != arMagic {
		return errors.New("not a static library (no ar archive header)")
	}
	off := int64(len(arMagic))
	if off == size {
		return errors.New("incomplete archive: no members")
	}
	hdr := make([]byte, 60)
	for off < size {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return fmt.Errorf("incomplete archive: member header at byte %d cut off (%d bytes)", off, size)
		}
		if string(hdr[58:60]) != "`\n" {
			return fmt.Errorf("incomplete or damaged archive: bad member header at byte %d", off)
		}
		var n int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(hdr[48:58])), &n); err != nil || n < 0 {
			return fmt.Errorf("damaged archive: bad member size at byte %d", off)
		}
		off += 60 + n + n%2 // members are padded to an even length
		if off > size+1 || (off == size+1 && n%2 == 0) {
			return fmt.Errorf("incomplete archive: a member runs past the end of the file (%d bytes)", size)
		}
	}
	return nil
}

// findSymbol reports whether r holds sym's name in a string table
// (NUL-terminated in ELF and Mach-O alike), reading it in a stream.
func findSymbol(r io.Reader, sym string) error {
	want := []byte(sym + "\x00")
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 0, 2<<20)
	chunk := make([]byte, 1<<20)
	for {
		n, err := br.Read(chunk)
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
// source (the module cache is read-only), patched where patches says so,
// checks that it is whole and defines sym, and only then copies it to lib.
func build(ctx context.Context, mod module, sym, lib string, stdout, stderr io.Writer) error {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return errors.New("cargo not found: install Rust (https://rustup.rs, then open a new shell) and run set-up again, " +
			"or give a prebuilt library: download libtokenizers.<os>-<arch>.tar.gz of release " + mod.Version +
			" from https://github.com/daulet/tokenizers/releases, unpack it and run set-up with LIBTOKENIZERS=/path/to/libtokenizers.a")
	}
	work, err := os.MkdirTemp("", "servegate-libtokenizers-")
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(work)
	if err := copyTree(mod.Dir, work); err != nil {
		return fmt.Errorf("build: copy %s: %w", mod.Dir, err)
	}
	why, err := applyPatch(work, mod.Version)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if why != "" {
		fmt.Fprintf(stdout, "setup: patched %s's Cargo.toml and Cargo.lock: %s\n", mod.Version, why)
	}
	fmt.Fprintf(stdout, "setup: building libtokenizers %s with cargo (a few minutes, once)\n", mod.Version)
	cmd := exec.CommandContext(ctx, cargo, "build", "--release", "--locked")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+filepath.Join(work, "target"))
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cargo build --release --locked in a copy of %s: %w (its output is above); "+
			"without cargo access to crates.io, give a prebuilt library with LIBTOKENIZERS", mod.Dir, err)
	}
	built := filepath.Join(work, "target", "release", "libtokenizers.a")
	if err := checkLibrary(built, sym); err != nil {
		return fmt.Errorf("cargo built %s: %w", built, err)
	}
	return copyFile(built, lib)
}

// copyFile copies src to dst through a temporary file, flushed to disk, and
// a rename, so that a reader never sees half a library: a set-up killed
// half-way leaves at most a *.tmp file that no later set-up reads.
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
	// On disk before the rename, so that a crash cannot leave a library
	// name that points at missing data.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
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
