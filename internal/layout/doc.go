// Package layout has no code. Its test keeps the import rules of
// docs/architecture.md true for every package of the module.
package layout
