// Package layout has no code. Its tests keep the import rules of
// docs/architecture.md true for every package of the module, and check
// that every path that page names exists. They also keep
// docs/environment.md's table of SERVEGATE_* variables equal to the
// names the code reads.
package layout
