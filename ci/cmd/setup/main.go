// Command setup makes a plain `go test` link servegate in any module on this
// machine. servegate's tokenizer binds the Hugging Face tokenizers library
// (Rust) through cgo, and the linker needs libtokenizers.a:
//
//	go run github.com/servegate/servegate/ci/cmd/setup         # once per machine
//	go run github.com/servegate/servegate/ci/cmd/setup -undo   # take the go env change back
//
// It finds the version of github.com/daulet/tokenizers in the current
// module's graph (the pinned v1.24.0 outside a module), then:
//
//  1. puts libtokenizers.a for that version in the cache,
//     ${SERVEGATE_CACHE:-<user cache dir>/servegate}/libtokenizers/<version>/:
//     the file named by LIBTOKENIZERS when set (a prebuilt release), else the
//     cached one, else one built with cargo from the Rust source in the Go
//     module cache (a few minutes, once; a version whose Cargo.toml takes a
//     crate from git is patched to a crates.io release first, see patches).
//     Every library must be a whole ar archive that defines the version
//     symbol the binding's source links against
//     (tokenizers_version_1_23_0 for v1.24.0); it enters the cache by an
//     atomic rename, so an interrupted set-up leaves nothing trusted;
//  2. adds -L<that directory> to CGO_LDFLAGS with `go env -w`, before any
//     other -L, keeping what was there but dropping -L into another
//     version's cache directory, so every go command of this user finds
//     this library and no older one.
//
// It prints what it changed. The command is pure Go with no cgo (it must not
// import the tokenizer package): it runs before the library exists.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: exit status 0 done, 1 failed, 2 bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	undo := fs.Bool("undo", false, "remove the -L this command added to CGO_LDFLAGS (the cached library stays)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run github.com/servegate/servegate/ci/cmd/setup [-undo]\n\n"+
			"Builds or finds libtokenizers.a and adds its directory to CGO_LDFLAGS (go env -w).\n"+
			"LIBTOKENIZERS=path uses a prebuilt library; SERVEGATE_CACHE=dir moves the cache.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "setup: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *undo {
		if err := undoLinkFlags(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "setup:", err)
			return 1
		}
		return 0
	}
	mod, err := findModule(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "setup:", err)
		return 1
	}
	lib, err := ensureLibrary(ctx, mod, os.Getenv("LIBTOKENIZERS"), stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "setup:", err)
		return 1
	}
	if err := addLinkFlags(ctx, lib, stdout); err != nil {
		fmt.Fprintln(stderr, "setup:", err)
		return 1
	}
	return 0
}
