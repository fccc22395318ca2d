// Command twintable compares a twin's predictions with measured runs
// and prints the table figure × scenario (predicted, measured,
// error) and whether the goal is met: the median |error| of each figure
// (median and p90 TTFT, median TPOT, output throughput) across the
// held-out scenarios within the tolerance, and the capacity within it.
// internal/twin/twin-check.sh runs it.
//
//	go run ./internal/twin/twintable -measured OUT -predicted PRED \
//	    -capacity twin-ho-capacity twin-ho-a twin-ho-b ...
//
// -measured may be repeated: each figure is then the median of the
// directories' measurements.
//
// -repeat (no -predicted, at least 3 -measured sessions) prints the
// floor instead: each session against the median of the others, the
// error a perfect twin would still show against one measurement.
//
// -cross (at least 3 -measured sessions, each followed by the -predicted
// directory of the twin calibrated from that session) prints the error
// across sessions instead: each session's twin against the median of the
// other sessions, what a twin calibrated once can be expected to miss by.
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
	var predicted []string
	fs.Func("predicted", "directory of the predictions (<name>.json); with -cross, one per -measured directory, in the same order", func(s string) error {
		predicted = append(predicted, s)
		return nil
	})
	capacity := fs.String("capacity", "", "name of the capacity scenario (empty: none)")
	tol := fs.Float64("tolerance", 0.10, "goal on each median error and on the capacity error, a fraction in (0, 1]")
	repeat := fs.Bool("repeat", false, "print the repeatability floor of the -measured sessions (at least 3) instead of comparing a prediction")
	cross := fs.Bool("cross", false, "print each session's twin (its -predicted) against the median of the other sessions (at least 3)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !(*tol > 0 && *tol <= 1) {
		fmt.Fprintln(stderr, "twintable: -tolerance must be in (0, 1]")
		return 2
	}
	if *cross {
		r, err := Cross(measured, predicted, fs.Args(), *capacity, *tol)
		if err != nil {
			fmt.Fprintf(stderr, "twintable: %v\n", err)
			return 2
		}
		r.Write(stdout)
		return 0
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
	if len(measured) == 0 || len(predicted) != 1 {
		fmt.Fprintln(stderr, "twintable: -measured and one -predicted are required")
		return 2
	}
	v, err := Compare(measured, predicted[0], fs.Args(), *capacity, *tol)
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
