// Package compare is servegate compare: it gates a pull request on the
// latency and goodput of the servegate scenarios in a Go module.
//
// Usage:
//
//	servegate compare [flags] BASE [HEAD]
//
// Run it from the root of a Go module that requires servegate, as a tool
// of that module, so that the servegate version its go.mod names runs it:
//
//	go get -tool github.com/servegate/servegate/cmd/servegate
//	go tool servegate compare origin/main
//
// Do not use go run: it turns every exit status but 0 into 1.
//
// BASE is a commit: a branch, a tag or a hash. HEAD is another commit, or
// by default the working tree with its uncommitted changes. BASE is
// checked out in a temporary git worktree, and so is HEAD when given.
//
// Compare finds the packages whose tests import servegate's benchtest
// and builds each one's test binary from HEAD. Then it runs pairs. In a
// pair, a scenario of BenchDir or Bench runs on base's target and on
// head's at the same time, with one schedule of requests. After each
// round of pairs the verdict judges every scenario again. A scenario
// runs pairs until its verdict ends.
//
// Each side runs its own target, a server started for that side alone
// even when both sides' targets are the same. A container target is
// built from that side's build context or runs that side's image, args
// and env; a sim target serves that side's profile file; a vllm target
// runs that side's image, model and serve flags. A url target is a
// server CI deployed for each side: -base-url and -head-url. A scenario
// pairs when its workload is the same on both sides: dataset, load and
// SLOs. Its target may differ, and the report says how at its top.
//
// Servers that fit on the machine side by side (sim, container, url)
// run their pairs together. vllm targets alternate: each side's server
// starts for its run and stops after it, base first in odd pairs and
// head first in even ones, so that two servers never fight for the
// same CPU cores or GPU. -pair-mode overrides the choice.
//
// The simulator, a sim target or a container target's backends, is
// built from the servegate version that HEAD's go.mod names, for both
// sides. When BASE's go.mod names another version, HEAD's version
// measures and judges both sides, and the report says so. The servegate
// running compare must be HEAD's version; `go tool servegate` is.
//
// -mode interleaved is the older way, kept for what pairs cannot judge:
// a capacity search, which does not pair, and a sharded suite, whose
// jobs' reports servegate gate -merge joins. Each side's tests are
// built from that side's tree. Then base's benchmarks run alone, then
// head's, then base's again, -count times each, so that a drift of the
// machine hits both sides alike. servegate gate compares the two sets
// of runs (benchstat's U test, the policy's thresholds), ignoring the
// image key. Its reports are compare's, and its gate.json is the one
// servegate gate -merge reads. It takes longer than the paired verdict
// for the same power: the runs of one side do not share the machine's
// noise with the other's.
//
// -mode stored judges head's runs against main's runs of BASE's commit
// in a results store (servegate history add files them) instead of
// running base as often. -fresh base runs alternate with head's first
// runs and check the machine's drift since main's runs were stored.
// Then head runs alone, after each run the sequential test judges
// median TTFT (only that) of each scenario still open, head run k
// against stored run k. A stored baseline that cannot serve, missing,
// stale, of another runner type or scenario version, or drifted, makes
// compare run base and head paired instead, in -out's fallback/, and
// that verdict is the comparison's; with -no-fallback it is exit 2.
//
// The exit status is the verdict's:
//
//	0  no regression
//	1  a regression in at least one scenario
//	2  no verdict: bad input, a side that did not build or start, an
//	   invalid run, or a scenario the verdict could not judge
//
// The flags are:
//
//	-packages PATTERNS
//		the packages to search for scenarios, space-separated (default ./...)
//	-run REGEXP
//		compare only the scenarios whose names match
//	-out DIR
//		where the results go (default out/compare)
//	-policy FILE
//		the verdict's policy (default: the built-in policy)
//	-parallel N
//		scenario processes to run at once, each with its own targets;
//		0 starts with 2 and halves it when the typical run of a round
//		shows the load generator short of CPU (default 0)
//	-prepare COMMAND
//		a shell command run in each side's module root before anything
//		is built, such as one that builds a binary into a build context
//	-pair-mode MODE
//		how a pair runs: together, base and head at the same time, or
//		alternate, in turn (default: by each scenario's target kind);
//		a scenario whose pairs alternate runs with no other scenario
//		beside it
//	-base-url URL, -head-url URL
//		servers deployed for base and for head: every scenario runs on
//		a url target, base's at one, head's at the other (or at its
//		scenario file's target.url). They must differ
//	-mode MODE
//		how the runs come to be: paired, interleaved or stored (see
//		above) (default paired)
//	-count N
//		-mode interleaved: runs per side, 4 or more (default 10)
//	-baseline-store DIR
//		-mode stored: the results store of main's runs
//	-runner TYPE
//		-mode stored: the runner type head runs on, whose stored runs
//		are the baseline (default $SERVEGATE_RUNNER, else local)
//	-fresh N
//		-mode stored: fresh base runs for the drift check, 1 to 8
//		(default 2)
//	-no-fallback
//		-mode stored: exit 2 when the stored baseline cannot serve,
//		rather than compare base and head paired
//
// Under -out compare writes:
//
//	gate.md           the verdict in Markdown: job summary, pull request comment
//	gate.json         the verdict as JSON
//	gate.txt          the verdict as text, as printed
//	base.benchfmt     base's runs in benchstat's format, labelled by pair
//	head.benchfmt     head's runs likewise
//	runs/pair-N/      each round's result JSON, pair records and test logs
//	base.txt          -mode interleaved: base's go test output
//	head.txt          head's likewise
//	runs/SIDE-N/      -mode interleaved or stored: each run's outputs and test log
//	fallback/         -mode stored: the paired comparison it fell back to
//
// Each bad input is one message on standard error and exit status 2.
// BASE that is not a commit, a directory outside a Go module, no package
// that runs scenarios, a scenario whose workload differs between the
// sides, a side whose target does not build or start (with the end of
// its log): each is one of these. Some that need no repository:
//
//	$ servegate compare
//	compare: want BASE and at most one HEAD, got 0 arguments (servegate compare -h: the usage)
//	$ servegate compare -parallel -1 main
//	compare: -parallel -1: want 0 (by the harness's health) or more
//	$ servegate compare -run ( main
//	compare: -run: error parsing regexp: missing closing ): `(`
//	$ servegate compare -pair-mode sometimes main
//	compare: -pair-mode sometimes: want one of together, alternate
//	$ servegate compare -base-url http://10.0.0.5:8000 -head-url http://10.0.0.5:8000/ main
//	compare: -base-url and -head-url are both http://10.0.0.5:8000, one server: deploy base and head each, and give each side's URL
//	$ servegate compare -mode interleaved -count 3 main
//	compare: -count 3: -mode interleaved wants 4 or more runs a side (with fewer no change is ever significant at alpha 0.05)
//	$ servegate compare -mode stored main
//	compare: -mode stored: want -baseline-store, the results store of main's runs
//	$ servegate compare -no-such-flag main
//	compare: flag provided but not defined: -no-such-flag (servegate compare -h: the flags)
package compare
