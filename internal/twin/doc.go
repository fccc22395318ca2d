// Package twin makes and uses a calibrated twin of a real server (issue
// #30): Calibrate fits a simulator profile (sim.Params) to the detailed
// result files of runs against the real server, taking what the server
// states (block size, KV blocks, batch limits) rather than fitting it;
// Predict runs a plan against a profile in virtual time (sim.Replay),
// with the benchmark's own arrival schedule and summary, so that a
// prediction and a measurement are read the same way.
//
// It imports benchtest's lower packages (metrics, dataset, engine's
// schedule) and containers/simulator/sim; Predict also imports benchtest
// itself (the Plan it runs, NewOutcome to judge it). Nothing below
// imports it: `servegate sweep --virtual` hands Predict to
// pipeline.RunSweep through SweepHooks.Execute.
//
// Files: predict.go (virtual-time runs of a plan; branch "virtual"),
// calibrate.go (the checks of the runs and the fit's course),
// calibrate_input.go (reading result files), calibrate_stated.go (the
// configuration: stated, inferred or not pinned down), fit.go (the
// replays, the loss, Nelder-Mead, the jitter, the flat directions) and
// calibrate_report.go (the residuals and the profile YAML).
package twin
