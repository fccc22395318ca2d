package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// fakeModule writes a binding source directory whose tokenizer.go links
// against sym, and returns it.
func fakeModule(tb testing.TB, sym string) string {
	tb.Helper()
	dir := tb.TempDir()
	src := "package tokenizers\n\n/*\nextern void " + sym + "(void);\nvoid (*tokenizers_version_check)(void) = &" + sym + ";\n*/\nimport \"C\"\n"
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "tokenizer.go"), []byte(src), 0o644))
	return dir
}

// pinnedSymbol is the version symbol of the binding this module requires,
// read from its source in the module cache.
func pinnedSymbol(tb testing.TB) string {
	tb.Helper()
	mod := requiredModule(tb)
	sym, err := linkSymbol(mod.Dir)
	require.NoError(tb, err)
	return sym
}

// requiredModule is the binding in this module's graph, from the module
// cache (set-up downloads it; a test never does).
func requiredModule(tb testing.TB) module {
	tb.Helper()
	out, err := goCmd(context.Background(), nil, "list", "-m", "-json", tokenizersModule)
	require.NoError(tb, err)
	var m module
	require.NoError(tb, json.Unmarshal(out, &m))
	require.NotEmpty(tb, m.Dir, "%s@%s is not in the module cache: run make setup", tokenizersModule, m.Version)
	return m
}

func TestLinkSymbol(t *testing.T) {
	sym, err := linkSymbol(fakeModule(t, "tokenizers_version_1_22_1"))
	require.NoError(t, err)
	assert.Equal(t, "tokenizers_version_1_22_1", sym)

	// The pinned release kept its predecessor's symbol: the check is read
	// from the source, never made up from the Go version.
	require.Equal(t, pinnedVersion, requiredModule(t).Version, "go.mod and pinnedVersion disagree")
	assert.Equal(t, "tokenizers_version_1_23_0", pinnedSymbol(t))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.go"), []byte("package tokenizers\n"), 0o644))
	_, err = linkSymbol(dir)
	assert.ErrorContains(t, err, "no link-time version check")
	_, err = linkSymbol(t.TempDir())
	assert.ErrorContains(t, err, "read the binding's link check")
}

// arArchive returns an ar archive holding one member per body, as a static
// library is laid out.
func arArchive(bodies ...[]byte) []byte {
	out := []byte(arMagic)
	for i, b := range bodies {
		out = append(out, fmt.Sprintf("%-16s%-12d%-6d%-6d%-8s%-10d`\n", fmt.Sprintf("m%d.o/", i), 0, 0, 0, "644", len(b))...)
		out = append(out, b...)
		if len(b)%2 == 1 {
			out = append(out, '\n')
		}
	}
	return out
}

// fakeLibrary writes an ar archive whose first member holds sym
// (NUL-terminated) at offset among other bytes, as a library's string table
// holds it, followed by a second member.
func fakeLibrary(tb testing.TB, sym string, offset int) string {
	tb.Helper()
	data := bytes.Repeat([]byte{'x'}, offset)
	data = append(data, sym...)
	data = append(data, 0)
	data = append(data, bytes.Repeat([]byte{'y'}, 101)...)
	path := filepath.Join(tb.TempDir(), "libtokenizers.a")
	require.NoError(tb, os.WriteFile(path, arArchive(data, []byte("code")), 0o644))
	return path
}

func TestCheckLibrary(t *testing.T) {
	sym := "tokenizers_version_1_22_1"
	// A symbol that straddles the 1 MiB read boundary is still found.
	for _, off := range []int{0, 1<<20 - 5, 3 << 20} {
		assert.NoError(t, checkLibrary(fakeLibrary(t, sym, off), sym), "offset %d", off)
	}
	err := checkLibrary(fakeLibrary(t, "tokenizers_version_1_23_0", 10), sym)
	assert.ErrorContains(t, err, "no symbol tokenizers_version_1_22_1")
	// A longer version's symbol is not this one.
	assert.Error(t, checkLibrary(fakeLibrary(t, sym+"0", 10), sym))
	assert.Error(t, checkLibrary(filepath.Join(t.TempDir(), "missing.a"), sym))
}

// TestCheckLibraryIncomplete: a library cut short anywhere (a copy or a
// build stopped half-way) is refused even when the symbol table, which
// comes first, made it to disk.
func TestCheckLibraryIncomplete(t *testing.T) {
	sym := "tokenizers_version_1_22_1"
	whole, err := os.ReadFile(fakeLibrary(t, sym, 10))
	require.NoError(t, err)
	dir := t.TempDir()
	for _, n := range []int{0, 5, len(arMagic), len(arMagic) + 30, len(arMagic) + 60 + 50, len(whole) - 3, len(whole) - 1} {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.a", n))
		require.NoError(t, os.WriteFile(path, whole[:n], 0o644))
		err := checkLibrary(path, sym)
		if assert.Error(t, err, "cut at %d of %d bytes", n, len(whole)) {
			assert.Regexp(t, "incomplete|not a static library", err.Error())
		}
	}
	notAr := filepath.Join(dir, "sym.txt")
	require.NoError(t, os.WriteFile(notAr, []byte(sym+"\x00"), 0o644))
	assert.ErrorContains(t, checkLibrary(notAr, sym), "not a static library")
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
	t.Setenv("LIBTOKENIZERS", fakeLibrary(t, pinnedSymbol(t), 100))

	code, out := runSetup(t)
	require.Equal(t, 0, code, out)
	dir := filepath.Join(cache, "libtokenizers", pinnedVersion)
	assert.FileExists(t, filepath.Join(dir, "libtokenizers.a"))
	data, err := os.ReadFile(goenv)
	require.NoError(t, err)
	assert.Contains(t, string(data), "CGO_LDFLAGS=-O2 -g -L"+dir+" -L/opt/other\n", "ours first: the linker takes the first libtokenizers.a")
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
	bad := fakeLibrary(t, "tokenizers_version_1_22_1", 0)
	t.Setenv("LIBTOKENIZERS", bad)
	code, out := runSetup(t)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "LIBTOKENIZERS="+bad)
	assert.Contains(t, out, "no symbol "+pinnedSymbol(t))
	assert.Contains(t, out, "get the "+pinnedVersion+" release")

	t.Setenv("LIBTOKENIZERS", filepath.Join(t.TempDir(), "nope.a"))
	code, out = runSetup(t)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "no such file")
}

// TestRunEnvironmentOverride fails when CGO_LDFLAGS in the environment hides
// the go env file's value, and says what to do.
func TestRunEnvironmentOverride(t *testing.T) {
	isolate(t)
	t.Setenv("LIBTOKENIZERS", fakeLibrary(t, pinnedSymbol(t), 0))
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
