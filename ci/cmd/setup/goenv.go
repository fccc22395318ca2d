package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// defaultLDFlags is the go command's CGO_LDFLAGS when nobody set it.
const defaultLDFlags = "-O2 -g"

// goEnvFileValue reads one variable from the go env file (GOENV), or
// returns the default when the file does not set it.
func goEnvFileValue(ctx context.Context, key string) (string, error) {
	out, err := goCmd(ctx, nil, "env", "GOENV")
	if err != nil {
		return "", err
	}
	path := strings.TrimSpace(string(out))
	if path == "" || path == "off" {
		return defaultLDFlags, nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return defaultLDFlags, nil
	}
	if err != nil {
		return "", fmt.Errorf("read the go env file: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v, nil
		}
	}
	return defaultLDFlags, nil
}

// linkFlag is the linker flag that adds dir to the library search path.
func linkFlag(dir string) string { return "-L" + dir }

// addLinkFlags puts -L<directory of lib> in CGO_LDFLAGS in the go env file,
// before any other -L, and prints the change. The linker takes the first
// libtokenizers.a on its path, so a directory that holds another version
// (an older set-up, a library of the user's own) must not come first: the
// binding's version check would fail every link or, for a release that kept
// its version symbol, the wrong code would be linked. -L into another
// version's cache directory is dropped altogether. It fails when the
// process environment sets a CGO_LDFLAGS without that directory: the
// environment wins over the file, so go test would still not link.
func addLinkFlags(ctx context.Context, lib string, w io.Writer) error {
	dir := filepath.Dir(lib)
	flag := linkFlag(dir)
	old, err := goEnvFileValue(ctx, "CGO_LDFLAGS")
	if err != nil {
		return err
	}
	fields := splitFlags(old)
	others := linkPrefix(filepath.Dir(dir))
	kept := slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return f == flag || strings.HasPrefix(f, others) })
	for _, f := range fields {
		if f != flag && strings.HasPrefix(f, others) {
			fmt.Fprintf(w, "setup: dropping %s from CGO_LDFLAGS: another libtokenizers version; one go env links one version\n", f)
		}
	}
	at := slices.IndexFunc(kept, func(f string) bool { return strings.HasPrefix(f, "-L") })
	if at < 0 {
		at = len(kept)
	}
	kept = slices.Insert(kept, at, flag)
	if slices.Equal(kept, fields) {
		fmt.Fprintf(w, "setup: go env CGO_LDFLAGS already has %s first; nothing changed\n", flag)
	} else {
		value := joinFlags(kept)
		if _, err := goCmd(ctx, nil, "env", "-w", "CGO_LDFLAGS="+value); err != nil {
			return fmt.Errorf("%w\nset it in your shell instead: export CGO_LDFLAGS=%q", err, value)
		}
		fmt.Fprintf(w, "setup: changed go env CGO_LDFLAGS from %q to %q\n", old, value)
		fmt.Fprintf(w, "setup: undo with: go run github.com/servegate/servegate/ci/cmd/setup -undo\n")
	}
	if env, ok := os.LookupEnv("CGO_LDFLAGS"); ok && !slices.Contains(splitFlags(env), flag) {
		return fmt.Errorf("your environment sets CGO_LDFLAGS=%q, which overrides go env: add %s to it or unset it", env, flag)
	}
	fmt.Fprintf(w, "setup: done; go test links libtokenizers in any module\n")
	return nil
}

// linkPrefix is the start of every -L flag into a directory under root.
func linkPrefix(root string) string { return linkFlag(root) + string(filepath.Separator) }

// undoLinkFlags removes from CGO_LDFLAGS in the go env file every -L into
// the libtokenizers cache, and unsets the variable when only the default
// is left.
func undoLinkFlags(ctx context.Context, w io.Writer) error {
	root, err := cacheRoot()
	if err != nil {
		return err
	}
	prefix := linkPrefix(filepath.Join(root, "libtokenizers"))
	old, err := goEnvFileValue(ctx, "CGO_LDFLAGS")
	if err != nil {
		return err
	}
	fields := splitFlags(old)
	kept := slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return strings.HasPrefix(f, prefix) })
	if len(kept) == len(fields) {
		fmt.Fprintf(w, "setup: go env CGO_LDFLAGS (%q) has no -L into %s; nothing changed\n", old, filepath.Join(root, "libtokenizers"))
		return nil
	}
	value := joinFlags(kept)
	if value == defaultLDFlags {
		if _, err := goCmd(ctx, nil, "env", "-u", "CGO_LDFLAGS"); err != nil {
			return err
		}
		fmt.Fprintf(w, "setup: unset go env CGO_LDFLAGS (was %q)\n", old)
		return nil
	}
	if _, err := goCmd(ctx, nil, "env", "-w", "CGO_LDFLAGS="+value); err != nil {
		return err
	}
	fmt.Fprintf(w, "setup: changed go env CGO_LDFLAGS from %q to %q\n", old, value)
	return nil
}

// splitFlags splits a flags value the way the go command does: on spaces,
// with single or double quotes around fields that hold spaces.
func splitFlags(s string) []string {
	var fields []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				fields = append(fields, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		fields = append(fields, cur.String())
	}
	return fields
}

// joinFlags is the inverse of splitFlags.
func joinFlags(fields []string) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		switch {
		case !strings.ContainsAny(f, " \t\n'\""):
			out[i] = f
		case !strings.Contains(f, "'"):
			out[i] = "'" + f + "'"
		default:
			out[i] = `"` + f + `"`
		}
	}
	return strings.Join(out, " ")
}
