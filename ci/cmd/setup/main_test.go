package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitJoinFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		join string
	}{
		{"-O2 -g", []string{"-O2", "-g"}, "-O2 -g"},
		{"  -O2\t-g  ", []string{"-O2", "-g"}, "-O2 -g"},
		{"", nil, ""},
		{"-O2 '-L/my dir' -g", []string{"-O2", "-L/my dir", "-g"}, "-O2 '-L/my dir' -g"},
		{`-L"/it's here"`, []string{"-L/it's here"}, `"-L/it's here"`},
	} {
		got := splitFlags(tc.in)
		assert.Equal(t, tc.want, got, "split %q", tc.in)
		assert.Equal(t, tc.join, joinFlags(got), "join %q", tc.in)
	}
}

func TestVersionSymbol(t *testing.T) {
	assert.Equal(t, "tokenizers_version_1_22_1", versionSymbol("v1.22.1"))
}

// fakeLibrary writes a file holding sym (NUL-terminated) at offset, among
// other bytes, as a library's string table holds it.
func fakeLibrary(tb testing.TB, sym string, offset int) string {
	tb.Helper()
	data := bytes.Repeat([]byte{'x'}, offset)
	data = append(data, sym...)
	data = append(data, 0)
	data = append(data, bytes.Repeat([]byte{'y'}, 100)...)
	path := filepath.Join(tb.TempDir(), "libtokenizers.a")
	require.NoError(tb, os.WriteFile(path, data, 0o644))
	return path
}

func TestCheckLibrary(t *testing.T) {
	sym := versionSymbol("v1.22.1")
	// A symbol that straddles the 1 MiB read boundary is still found.
	for _, off := range []int{0, 1<<20 - 5, 3 << 20} {
		assert.NoError(t, checkLibrary(fakeLibrary(t, sym, off), sym), "offset %d", off)
	}
	err := checkLibrary(fakeLibrary(t, versionSymbol("v1.24.0"), 10), sym)
	assert.ErrorContains(t, err, "no symbol tokenizers_version_1_22_1")
	// A longer version's symbol is not this one.
	assert.Error(t, checkLibrary(fakeLibrary(t, sym+"0", 10), sym))
	assert.Error(t, checkLibrary(filepath.Join(t.TempDir(), "missing.a"), sym))
}

// isolate points the go env file and the cache at temporary places, so a
// test never changes this user's settings.
func isolate(t *testing.T) (goenv, cache string) {
	t.Helper()
	dir := t.TempDir()
	goenv = filepath.Join(dir, "go.env")
	cache = filepath.Join(dir, "cache")
	t.Setenv("GOENV", goenv)
	t.Setenv("SERVEGATE_CACHE", cache)
	os.Unsetenv("CGO_LDFLAGS")
	return goenv, cache
}

func runSetup(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), args, &out, &out)
	return code, out.String()
}

// TestRunPrebuiltAndUndo takes a prebuilt library, adds the flag to the go
// env file keeping its value, finds nothing to add the second time, and
// takes the change back with -undo.
func TestRunPrebuiltAndUndo(t *testing.T) {
	goenv, cache := isolate(t)
	require.NoError(t, os.WriteFile(goenv, []byte("CGO_LDFLAGS=-O2 -g -L/opt/other\n"), 0o644))
	t.Setenv("LIBTOKENIZERS", fakeLibrary(t, versionSymbol(pinnedVersion), 100))

	code, out := runSetup(t)
	require.Equal(t, 0, code, out)
	dir := filepath.Join(cache, "libtokenizers", pinnedVersion)
	assert.FileExists(t, filepath.Join(dir, "libtokenizers.a"))
	data, err := os.ReadFile(goenv)
	require.NoError(t, err)
	assert.Contains(t, string(data), "CGO_LDFLAGS=-O2 -g -L/opt/other -L"+dir+"\n")
	assert.Contains(t, out, "changed go env CGO_LDFLAGS")

	code, out = runSetup(t)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "nothing changed")

	code, out = runSetup(t, "-undo")
	require.Equal(t, 0, code, out)
	data, err = os.ReadFile(goenv)
	require.NoError(t, err)
	assert.Contains(t, string(data), "CGO_LDFLAGS=-O2 -g -L/opt/other\n", "the user's own flags stay")

	// Only our flag on top of the default: undo unsets the variable.
	t.Setenv("LIBTOKENIZERS", "")
	require.NoError(t, os.WriteFile(goenv, nil, 0o644))
	code, out = runSetup(t)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "cached at")
	code, out = runSetup(t, "-undo")
	require.Equal(t, 0, code, out)
	data, err = os.ReadFile(goenv)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "CGO_LDFLAGS")
}

func TestRunWrongPrebuilt(t *testing.T) {
	isolate(t)
	bad := fakeLibrary(t, versionSymbol("v1.24.0"), 0)
	t.Setenv("LIBTOKENIZERS", bad)
	code, out := runSetup(t)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "LIBTOKENIZERS="+bad)
	assert.Contains(t, out, "no symbol tokenizers_version_1_22_1")
	assert.Contains(t, out, "get the v1.22.1 release")

	t.Setenv("LIBTOKENIZERS", filepath.Join(t.TempDir(), "nope.a"))
	code, out = runSetup(t)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "no such file")
}

// TestRunEnvironmentOverride fails when CGO_LDFLAGS in the environment hides
// the go env file's value, and says what to do.
func TestRunEnvironmentOverride(t *testing.T) {
	isolate(t)
	t.Setenv("LIBTOKENIZERS", fakeLibrary(t, versionSymbol(pinnedVersion), 0))
	t.Setenv("CGO_LDFLAGS", "-O2")
	code, out := runSetup(t)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `your environment sets CGO_LDFLAGS="-O2", which overrides go env`)
}

func TestRunBadFlags(t *testing.T) {
	code, out := runSetup(t, "extra")
	assert.Equal(t, 2, code)
	assert.True(t, strings.Contains(out, `unexpected argument "extra"`), out)
}
