package main

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

// A cratePatch makes one binding version build from crates.io alone. Some
// releases of github.com/daulet/tokenizers take a Rust dependency from a git
// branch, which machines that reach only crates.io (and any build that must
// be reproducible from registries) cannot fetch. The patch swaps that one
// dependency for a crates.io release with the same API and ships the
// resulting Cargo.lock, so the build stays `cargo build --locked`.
//
// The shipped lock is the module's own Cargo.lock with only the swapped
// crate and the crates that it alone pulls in changed (TestPatchLocks checks
// this against the module's lock); every other crate, the Hugging Face
// tokenizers crate included, is built at the version the module pins.
type cratePatch struct {
	// GitDep is the Cargo.toml line that names the git dependency.
	GitDep string
	// CratesDep is the line that replaces it.
	CratesDep string
	// Why says what the replacement is and why its API fits.
	Why string
}

// patches holds the patch of each binding version that needs one, by Go
// module version. Its Cargo.lock is patches/<version>.Cargo.lock.
//
// v1.24.0 (the same Rust source as v1.23.0, whose version symbol it keeps)
// takes tiktoken-rs from github.com/steved/tiktoken-rs, branch
// steved/bump-fancy-regex: tiktoken-rs 0.8.0 moved to fancy-regex 0.16.
// tiktoken-rs 0.9.1 on crates.io has the same CoreBPE API that the
// binding's src/lib.rs calls (CoreBPE::new with a rank map, encode with an
// allowed-special set, decode of a Vec<Rank>; 0.10 changed decode to a
// slice) on fancy-regex 0.13. tiktoken-rs serves only the binding's
// FromTiktoken, which servegate does not call; Hugging Face tokenizer.json
// files go through the tokenizers crate (0.22.0) alone.
var patches = map[string]cratePatch{
	"v1.24.0": {
		GitDep:    `tiktoken-rs = { git = "https://github.com/steved/tiktoken-rs", branch = "steved/bump-fancy-regex" }`,
		CratesDep: `tiktoken-rs = "=0.9.1"`,
		Why:       "tiktoken-rs 0.9.1 from crates.io instead of a git branch",
	},
}

//go:embed patches/*.Cargo.lock
var patchLocks embed.FS

// patchLock returns the shipped Cargo.lock of a patched version.
func patchLock(version string) ([]byte, error) {
	return patchLocks.ReadFile("patches/" + version + ".Cargo.lock")
}

// applyPatch rewrites the Cargo.toml and Cargo.lock in dir, a writable copy
// of the binding's source at version, when that version has a patch. It
// reports what it did, or fails when the source is not the one the patch
// was written for (the git line is missing): it never builds a half-patched
// tree.
func applyPatch(dir, version string) (string, error) {
	p, ok := patches[version]
	if !ok {
		return "", nil
	}
	tomlPath := filepath.Join(dir, "Cargo.toml")
	toml, err := os.ReadFile(tomlPath)
	if err != nil {
		return "", fmt.Errorf("patch %s: %w", version, err)
	}
	if bytes.Count(toml, []byte(p.GitDep)) != 1 {
		return "", fmt.Errorf("patch %s: Cargo.toml lacks the line %s; the module source is not the release this patch was written for", version, p.GitDep)
	}
	lock, err := patchLock(version)
	if err != nil {
		return "", fmt.Errorf("patch %s: %w", version, err)
	}
	toml = bytes.Replace(toml, []byte(p.GitDep), []byte(p.CratesDep), 1)
	if err := os.WriteFile(tomlPath, toml, 0o644); err != nil {
		return "", fmt.Errorf("patch %s: %w", version, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Cargo.lock"), lock, 0o644); err != nil {
		return "", fmt.Errorf("patch %s: %w", version, err)
	}
	return p.Why, nil
}
