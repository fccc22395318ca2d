package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCargo puts on PATH (alone) a cargo that runs script with sh; an empty
// script means no cargo at all.
func fakeCargo(t *testing.T, script string) {
	t.Helper()
	bin := t.TempDir()
	if script != "" {
		require.NoError(t, os.WriteFile(filepath.Join(bin, "cargo"), []byte("#!/bin/sh\n"+script), 0o755))
	}
	t.Setenv("PATH", bin)
}

// cacheLibrary puts the library at src in the cache as version's.
func cacheLibrary(t *testing.T, cache, version, src string) string {
	t.Helper()
	lib := filepath.Join(cache, "libtokenizers", version, "libtokenizers.a")
	require.NoError(t, copyFile(src, lib))
	return lib
}

func ensure(t *testing.T, ctx context.Context, mod module) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	lib, err := ensureLibrary(ctx, mod, "", &stdout, &stderr)
	return lib, stdout.String() + stderr.String(), err
}

// TestNoCargoOneMessage: without cargo, set-up fails with one message that
// says what to install and how to use a prebuilt library instead.
func TestNoCargoOneMessage(t *testing.T) {
	_, _ = isolate(t)
	fakeCargo(t, "")
	mod := module{Version: "v9.1.0", Dir: fakeModule(t, "tokenizers_version_9_1_0")}
	_, out, err := ensure(t, context.Background(), mod)
	require.Error(t, err)
	assert.Empty(t, out)
	msg := err.Error()
	assert.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %s", msg)
	for _, want := range []string{"cargo not found", "install Rust (https://rustup.rs", "release v9.1.0", "LIBTOKENIZERS=/path/to/libtokenizers.a"} {
		assert.Contains(t, msg, want)
	}
}

// TestChangedVersionRebuilds: a go.mod that moves to another binding
// version gets that version's library, never the cached one of the old
// version, nor one of the old version placed under the new name.
func TestChangedVersionRebuilds(t *testing.T) {
	_, cache := isolate(t)
	old := fakeLibrary(t, "tokenizers_version_1_22_1", 0)
	cacheLibrary(t, cache, "v1.22.1", old)
	mod := module{Version: "v9.1.0", Dir: fakeModule(t, "tokenizers_version_9_1_0")}

	// The build runs (and here fails: no cargo) instead of reusing v1.22.1.
	fakeCargo(t, "")
	_, _, err := ensure(t, context.Background(), mod)
	assert.ErrorContains(t, err, "cargo not found")

	// An old library under the new version's name is not trusted either.
	lib := cacheLibrary(t, cache, "v9.1.0", old)
	_, _, err = ensure(t, context.Background(), mod)
	assert.ErrorContains(t, err, "cargo not found")

	// A build that yields the right library replaces it.
	good := fakeLibrary(t, "tokenizers_version_9_1_0", 0)
	fakeCargo(t, "/bin/mkdir -p \"$CARGO_TARGET_DIR/release\" && exec /bin/cp "+good+" \"$CARGO_TARGET_DIR/release/libtokenizers.a\"\n")
	got, out, err := ensure(t, context.Background(), mod)
	require.NoError(t, err, out)
	assert.Equal(t, lib, got)
	assert.Contains(t, out, "libtokenizers v9.1.0 built")
	assert.NoError(t, checkLibrary(got, "tokenizers_version_9_1_0"))
}

// TestRunDropsOtherVersionFlag: set-up for a new version takes the old
// version's -L out of CGO_LDFLAGS, so the linker cannot find the old
// library first.
func TestRunDropsOtherVersionFlag(t *testing.T) {
	goenv, cache := isolate(t)
	oldFlag := "-L" + filepath.Join(cache, "libtokenizers", "v1.22.1")
	require.NoError(t, os.WriteFile(goenv, []byte("CGO_LDFLAGS=-O2 -g "+oldFlag+" -L/opt/other\n"), 0o644))
	t.Setenv("LIBTOKENIZERS", fakeLibrary(t, pinnedSymbol(t), 0))
	code, out := runSetup(t)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "dropping "+oldFlag)
	data, err := os.ReadFile(goenv)
	require.NoError(t, err)
	newFlag := "-L" + filepath.Join(cache, "libtokenizers", pinnedVersion)
	assert.Contains(t, string(data), "CGO_LDFLAGS=-O2 -g "+newFlag+" -L/opt/other\n")

	// Our flag after another directory (a library elsewhere) moves first.
	require.NoError(t, os.WriteFile(goenv, []byte("CGO_LDFLAGS=-O2 -L/opt/other "+newFlag+"\n"), 0o644))
	code, out = runSetup(t)
	require.Equal(t, 0, code, out)
	data, err = os.ReadFile(goenv)
	require.NoError(t, err)
	assert.Contains(t, string(data), "CGO_LDFLAGS=-O2 "+newFlag+" -L/opt/other\n")
	code, out = runSetup(t)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "nothing changed")
}

// TestInterruptedBuild: a set-up stopped during the cargo build (Ctrl-C)
// leaves no library in the cache, and a build that leaves a cut-off
// library is refused before anything is cached.
func TestInterruptedBuild(t *testing.T) {
	_, cache := isolate(t)
	mod := module{Version: "v9.1.0", Dir: fakeModule(t, "tokenizers_version_9_1_0")}
	lib := filepath.Join(cache, "libtokenizers", "v9.1.0", "libtokenizers.a")

	started := filepath.Join(t.TempDir(), "started")
	fakeCargo(t, "/bin/mkdir -p \"$CARGO_TARGET_DIR/release\"\necho partial > \"$CARGO_TARGET_DIR/release/libtokenizers.a\"\n: > "+started+"\nexec /bin/sleep 60\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ensureLibrary(ctx, mod, "", &bytes.Buffer{}, &bytes.Buffer{})
		done <- err
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, 30*time.Second, 10*time.Millisecond)
	cancel()
	assert.Error(t, <-done)
	assert.NoFileExists(t, lib)

	// cargo "succeeds" but its library is cut short.
	good, err := os.ReadFile(fakeLibrary(t, "tokenizers_version_9_1_0", 0))
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.a")
	require.NoError(t, os.WriteFile(cut, good[:len(good)-20], 0o644))
	fakeCargo(t, "/bin/mkdir -p \"$CARGO_TARGET_DIR/release\" && exec /bin/cp "+cut+" \"$CARGO_TARGET_DIR/release/libtokenizers.a\"\n")
	_, _, err = ensure(t, context.Background(), mod)
	assert.ErrorContains(t, err, "incomplete archive")
	assert.NoFileExists(t, lib)

	// A cut-off library in the cache (as an unsafe writer would leave it)
	// is not trusted: set-up builds again.
	require.NoError(t, os.MkdirAll(filepath.Dir(lib), 0o755))
	require.NoError(t, os.WriteFile(lib, good[:len(good)-20], 0o644))
	fakeCargo(t, "")
	_, _, err = ensure(t, context.Background(), mod)
	assert.ErrorContains(t, err, "cargo not found")
}

// TestPatchApplies: the pinned version's Cargo.toml gets its crates.io
// line and the shipped lock; a source without the git line is refused.
func TestPatchApplies(t *testing.T) {
	mod := requiredModule(t)
	work := t.TempDir()
	require.NoError(t, copyTree(mod.Dir, work))
	why, err := applyPatch(work, mod.Version)
	require.NoError(t, err)
	assert.NotEmpty(t, why)
	toml, err := os.ReadFile(filepath.Join(work, "Cargo.toml"))
	require.NoError(t, err)
	assert.NotContains(t, string(toml), "git =", "a git dependency is left")
	assert.Contains(t, string(toml), patches[mod.Version].CratesDep)
	lock, err := os.ReadFile(filepath.Join(work, "Cargo.lock"))
	require.NoError(t, err)
	assert.NotContains(t, string(lock), "source = \"git+", "a git source is left in the lock")

	// Patched twice (the line is gone): refused, not half-applied.
	_, err = applyPatch(work, mod.Version)
	assert.ErrorContains(t, err, "not the release this patch was written for")
	// A version with no patch is built as it is.
	why, err = applyPatch(work, "v1.22.1")
	assert.NoError(t, err)
	assert.Empty(t, why)
}

// TestPatchLocks: each shipped Cargo.lock is the module's own with only the
// swapped crate and the crates that it alone pulls in changed; every other
// crate keeps the version and checksum the module pins.
func TestPatchLocks(t *testing.T) {
	mod := requiredModule(t)
	require.Contains(t, patches, mod.Version, "the pinned version builds from git without a patch")
	orig, err := os.ReadFile(filepath.Join(mod.Dir, "Cargo.lock"))
	require.NoError(t, err)
	patched, err := patchLock(mod.Version)
	require.NoError(t, err)
	a, b := lockPackages(string(orig)), lockPackages(string(patched))
	var removed, added []string
	for k, v := range a {
		if b[k] != v {
			removed = append(removed, k)
		}
	}
	for k, v := range b {
		if a[k] != v {
			added = append(added, k)
		}
	}
	// tiktoken-rs 0.8.0 (git) used fancy-regex 0.16, which used bit-set and
	// bit-vec 0.8; 0.9.1 uses fancy-regex 0.13 with bit-set 0.5, bit-vec 0.6.
	assert.ElementsMatch(t, []string{"tiktoken-rs 0.8.0", "fancy-regex 0.16.1", "bit-set 0.8.0", "bit-vec 0.8.0"}, removed)
	assert.ElementsMatch(t, []string{"tiktoken-rs 0.9.1", "fancy-regex 0.13.0", "bit-set 0.5.3", "bit-vec 0.6.3"}, added)
	// The crate that tokenizes tokenizer.json is the module's.
	assert.Contains(t, b, "tokenizers 0.22.0")
}

// lockPackages maps "name version" to the text of each [[package]] entry of
// a Cargo.lock, dependency lists put in one form (a dependency's version is
// written only when two versions of it are locked).
func lockPackages(lock string) map[string]string {
	out := map[string]string{}
	for _, entry := range strings.Split(lock, "[[package]]")[1:] {
		var name, version string
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(entry), "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "name = "); ok {
				name = strings.Trim(v, `"`)
			}
			if v, ok := strings.CutPrefix(line, "version = "); ok {
				version = strings.Trim(v, `"`)
			}
			if strings.HasPrefix(line, `"`) { // a dependency: drop its version
				line, _, _ = strings.Cut(strings.Trim(line, `",`), " ")
			}
			lines = append(lines, line)
		}
		out[name+" "+version] = strings.Join(lines, "\n")
	}
	return out
}
