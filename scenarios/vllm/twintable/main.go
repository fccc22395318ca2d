// Command twintable compares a twin's predictions with measured runs
// (issue #30) and prints the table figure × scenario (predicted, measured,
// error) and whether the goal is met: the median |error| of each figure
// (median and p90 TTFT, median TPOT, output throughput) across the
// held-out scenarios within the tolerance, and the capacity within it.
// scenarios/vllm/twin-check.sh runs it.
//
//	go run ./scenarios/vllm/twintable -measured OUT -predicted PRED \
//	    -capacity twin-ho-capacity twin-ho-a twin-ho-b ...
//
// -measured may be repeated: each figure is then the median of the
// directories' measurements.
//
// -repeat (no -predicted, at least 3 -measured sessions) prints the
// floor instead: each session against the median of the others, the
// error a perfect twin would still show against one measurement.
//
// Exit status: 0 goal met, 1 goal missed, 2 the comparison could not be
// made (a file or a figure missing).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("twintable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var measured []string
	fs.Func("measured", "directory of the measured results (<name>.test.<n>.json, SERVEGATE_OUT); repeat it to compare with the median of several checks' measurements", func(s string) error {
		measured = append(measured, s)
		return nil
	})
	predicted := fs.String("predicted", "", "directory of the predictions (<name>.json)")
	capacity := fs.String("capacity", "", "name of the capacity scenario (empty: none)")
	tol := fs.Float64("tolerance", 0.10, "goal on each median error and on the capacity error, a fraction in (0, 1]")
	repeat := fs.Bool("repeat", false, "print the repeatability floor of the -measured sessions (at least 3) instead of comparing a prediction")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *repeat {
		r, err := Repeat(measured, fs.Args(), *capacity, *tol)
		if err != nil {
			fmt.Fprintf(stderr, "twintable: %v\n", err)
			return 2
		}
		r.Write(stdout)
		return 0
	}
	if len(measured) == 0 || *predicted == "" || !(*tol > 0 && *tol <= 1) {
		fmt.Fprintln(stderr, "twintable: -measured and -predicted are required; -tolerance in (0, 1]")
		return 2
	}
	v, err := Compare(measured, *predicted, fs.Args(), *capacity, *tol)
	if err != nil {
		// Every error of Compare is errInvalid: the comparison could not
		// be made, which is neither a pass nor a miss.
		fmt.Fprintf(stderr, "twintable: %v\n", err)
		return 2
	}
	v.Write(stdout)
	if !v.Met() {
		return 1
	}
	return 0
}
