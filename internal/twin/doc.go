// Package twin makes and uses a calibrated twin of a real server. The
// twin is experimental: it misses its 10% accuracy goal on real vLLM
// (docs/twin.md).
//
// Calibrate fits a simulator profile (sim.Params) to the detailed result
// files of runs against the real server. It takes what the server states,
// such as block size, KV blocks and batch limits, rather than fitting it.
// Predict runs a plan against a profile in virtual time (sim.Replay). It
// uses the benchmark's own arrival schedule and summary, so a prediction
// reads like a measurement.
//
// The twin's pieces sit together here: this library, the twintable
// command that checks predictions against measured runs, and
// twin-check.sh, which runs the whole check on real vLLM. The commands
// are `servegate sim calibrate`, `servegate sim predict` and
// `servegate capacity --virtual`.
package twin
