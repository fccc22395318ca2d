package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
)

// runInfo is the header of the result JSON.
func (r *benchRun) runInfo(res *engine.Result) metrics.RunInfo {
	a := r.args
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	info := metrics.RunInfo{
		Date:        now().Format("20060102-150405"),
		Backend:     a.Backend,
		ModelID:     a.Model,
		TokenizerID: r.plan.TokenizerID,
		NumPrompts:  a.NumPrompts,
		RequestRate: a.RequestRate,
		Burstiness:  a.Burstiness,
		RPSChanges:  res.RPSChanges,
	}
	if a.Label != nil {
		info.Label = *a.Label
	}
	for _, kv := range r.plan.Metadata {
		info.Metadata = append(info.Metadata, [2]string{kv.Key, kv.Value})
	}
	if a.MaxConcurrency != nil {
		info.MaxConcurrency = *a.MaxConcurrency
	}
	if a.RampUpStrategy != nil {
		info.RampUpStrategy = *a.RampUpStrategy
		info.RampUpStartRPS, info.RampUpEndRPS = *a.RampUpStartRPS, *a.RampUpEndRPS
	}
	return info
}

// resultPath names the result file as vLLM does:
// {label}-{rate}qps[-concurrency{n}]-{model}-{date}.json, or
// {label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{n}]-{model}-{date}.json,
// unless --result-filename is given; under --result-dir when given.
func resultPath(a *benchArgs, date string) string {
	label := a.Backend
	if a.Label != nil && *a.Label != "" {
		label = *a.Label
	}
	model := a.Model[strings.LastIndex(a.Model, "/")+1:]
	conc := ""
	if a.MaxConcurrency != nil {
		conc = fmt.Sprintf("-concurrency%d", *a.MaxConcurrency)
	}
	var name string
	if a.RampUpStrategy != nil {
		name = fmt.Sprintf("%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json", label, *a.RampUpStrategy, *a.RampUpStartRPS, *a.RampUpEndRPS, conc, model, date)
	} else {
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, metrics.PyFloat(a.RequestRate), conc, model, date)
	}
	if a.ResultFilename != nil && *a.ResultFilename != "" {
		name = *a.ResultFilename
	}
	if a.ResultDir != nil && *a.ResultDir != "" {
		name = filepath.Join(*a.ResultDir, name)
	}
	return name
}

// saveResult writes the result JSON (and the PyTorch records when
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT asks for them).
func (r *benchRun) saveResult(sum *metrics.Summary, info metrics.RunInfo) error {
	a := r.args
	path := resultPath(a, info.Date)
	if err := metrics.WriteResult(path, sum.ResultJSON(info, a.SaveDetailed), a.AppendResult); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "Saved result: %s\n", path)
	if pt := sum.PytorchRecords(info, a.SaveDetailed, r.parser.values()); pt != nil {
		if err := metrics.WriteResult(metrics.PytorchPath(path), pt, false); err != nil {
			return err
		}
	}
	return nil
}
