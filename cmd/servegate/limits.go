package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/engine"
)

// A flagLimit is the largest value of one numeric bench flag. The owning
// packages (dataset, engine) enforce the same limits on what the flags
// become; checking here first names the flag, and keeps a seconds flag
// from overflowing its time.Duration. docs/scenarios.md lists them.
type flagLimit struct {
	flag string
	// over is true when the value passes the limit; value and max are
	// written as the error shows them.
	over       bool
	value, max string
}

func intFlag(flag string, v, max int) flagLimit {
	return flagLimit{flag, v > max, strconv.Itoa(v), strconv.Itoa(max)}
}

func floatFlag(flag string, v, max float64) flagLimit {
	return flagLimit{flag, !(v <= max), strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(max, 'f', -1, 64)}
}

func optInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func optFloat(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// maxSeconds is engine.MaxTimeout in seconds.
var maxSeconds = engine.MaxTimeout.Seconds()

func flagLimits(a *benchArgs) []flagLimit {
	n := intFlag
	return []flagLimit{
		n("num-prompts", a.NumPrompts, dataset.MaxNumPrompts),
		n("random-input-len", a.RandomInputLen, dataset.MaxLen),
		n("random-output-len", a.RandomOutputLen, dataset.MaxLen),
		n("random-prefix-len", a.RandomPrefixLen, dataset.MaxLen),
		n("random-batch-size", a.RandomBatchSize, dataset.MaxBatchSize),
		n("custom-output-len", a.CustomOutputLen, dataset.MaxLen),
		n("spec-bench-output-len", a.SpecBenchOutputLen, dataset.MaxLen),
		n("sonnet-input-len", a.SonnetInputLen, dataset.MaxLen),
		n("sonnet-output-len", a.SonnetOutputLen, dataset.MaxLen),
		n("sonnet-prefix-len", a.SonnetPrefixLen, dataset.MaxLen),
		n("sharegpt-output-len", optInt(a.SharegptOutputLen), dataset.MaxLen),
		n("txt-slices-input-len", a.TxtSlicesInputLen, dataset.MaxLen),
		n("txt-slices-output-len", a.TxtSlicesOutputLen, dataset.MaxLen),
		n("hf-output-len", optInt(a.HFOutputLen), dataset.MaxLen),
		n("prefix-repetition-prefix-len", a.PrefixRepetitionPrefixLen, dataset.MaxLen),
		n("prefix-repetition-suffix-len", a.PrefixRepetitionSuffixLen, dataset.MaxLen),
		n("prefix-repetition-num-prefixes", a.PrefixRepetitionNumPrefix, dataset.MaxNumPrefixes),
		n("prefix-repetition-output-len", a.PrefixRepetitionOutputLen, dataset.MaxLen),
		n("common-prefix-len", optInt(a.CommonPrefixLen), dataset.MaxLen),
		n("max-concurrency", optInt(a.MaxConcurrency), engine.MaxConcurrencyLimit),
		n("num-warmups", a.NumWarmups, engine.MaxWarmups),
		n("top-k", optInt(a.TopK), dataset.MaxLen),
		n("logprobs", optInt(a.Logprobs), 1<<10),
		n("port", a.Port, math.MaxUint16),
		n("ready-check-timeout-sec", a.ReadyCheckTimeoutSec, int(maxSeconds)),
		floatFlag("request-timeout-sec", a.RequestTimeoutSec, maxSeconds),
		floatFlag("max-duration-sec", a.MaxDurationSec, maxSeconds),
		floatFlag("temperature", optFloat(a.Temperature), 100),
		floatFlag("repetition-penalty", optFloat(a.RepetitionPenalty), 100),
		floatFlag("frequency-penalty", optFloat(a.FrequencyPenalty), 2),
		floatFlag("presence-penalty", optFloat(a.PresencePenalty), 2),
	}
}

// checkFlagLimits returns an error naming the first flag past its limit.
func checkFlagLimits(a *benchArgs) error {
	for _, l := range flagLimits(a) {
		if l.over {
			return fmt.Errorf("--%s %s is over the maximum %s", l.flag, l.value, l.max)
		}
	}
	return nil
}
