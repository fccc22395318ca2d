// Package accuracy measures how often servegate's verdicts are right:
// the experiments that run the verdict against in-process simulators,
// on a quiet machine and beside a CPU burner, and report its false-fail
// and detection rates, the pairs it used and its wall time.
//
// The experiments are tests that run only when asked (an environment
// variable each, named in its comment). The package's non-test code is
// their fixture, shared with internal/gate's tests: an in-process
// simulator runner (SimulatorRun), a writer of benchfmt files
// (WriteRuns) and the load average (LoadAverage). It is not an API.
package accuracy
