package main

import (
	"fmt"
	"math"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/limit"
)

// optInt is an optional flag's value, 0 when unset.
func optInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// maxSeconds is engine.MaxTimeout in seconds.
var maxSeconds = engine.MaxTimeout.Seconds()

// flagLimits checks every numeric bench flag with a maximum. The owning
// packages (dataset, engine) enforce the same maxima on what the flags
// become; checking here first names the flag, and keeps a seconds flag
// from overflowing its time.Duration. docs/scenarios.md lists them.
func flagLimits(a *benchArgs) []limit.Check {
	n := limit.Int
	return []limit.Check{
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
		n("max-line-bytes", a.MaxLineBytes, client.MaxLineBytesLimit),
		n("top-k", optInt(a.TopK), dataset.MaxLen),
		n("logprobs", optInt(a.Logprobs), 1<<10),
		n("port", a.Port, math.MaxUint16),
		n("ready-check-timeout-sec", a.ReadyCheckTimeoutSec, int(maxSeconds)),
		limit.Float("request-timeout-sec", &a.RequestTimeoutSec, maxSeconds),
		limit.Float("max-duration-sec", &a.MaxDurationSec, maxSeconds),
		limit.Float("temperature", a.Temperature, 100),
		limit.Float("repetition-penalty", a.RepetitionPenalty, 100),
		limit.Float("frequency-penalty", a.FrequencyPenalty, 2),
		limit.Float("presence-penalty", a.PresencePenalty, 2),
	}
}

// checkFlagLimits returns an error naming the first flag past its limit.
func checkFlagLimits(a *benchArgs) error {
	if c, over := limit.FirstOver(flagLimits(a)); over {
		return fmt.Errorf("--%s %s is over the maximum %s", c.Name, c.Value, c.Max)
	}
	return nil
}
