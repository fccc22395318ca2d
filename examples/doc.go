// Package examples holds servegate's examples and the tests that keep them
// working:
//
//   - quickstart: a user repository of its own (its own go.mod), with a
//     scenarios folder and the _test.go file that runs it. TestQuickstart
//     copies it out of the checkout, runs the setup command and go test
//     there, as a user would.
//   - router: a reverse proxy measured in front of simulator backends
//     through the container target (see its README).
//   - gated: a user repository whose pull requests servegate compare
//     gates: a server of its own, built from its own Dockerfile, and a
//     scenario. TestCompareFromOutside copies it out of the checkout,
//     gives it a git history and runs the documented command there.
package examples
