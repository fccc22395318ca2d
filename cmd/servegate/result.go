package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
)

// resultPath names the result file as vLLM does:
// {label}-{rate}qps[-concurrency{n}]-{model}-{date}.json, or
// {label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{n}]-{model}-{date}.json,
// unless --result-filename is given; under --result-dir when given.
func resultPath(a *benchArgs, info metrics.RunInfo) string {
	label := info.Backend
	if info.Label != "" {
		label = info.Label
	}
	model := info.ModelID[strings.LastIndex(info.ModelID, "/")+1:]
	conc := ""
	if info.MaxConcurrency > 0 {
		conc = fmt.Sprintf("-concurrency%d", info.MaxConcurrency)
	}
	var name string
	if info.RampUpStrategy != "" {
		name = fmt.Sprintf("%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json", label, info.RampUpStrategy, info.RampUpStartRPS, info.RampUpEndRPS, conc, model, info.Date)
	} else {
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, metrics.PyFloat(info.RequestRate), conc, model, info.Date)
	}
	for _, kv := range info.Metadata {
		if kv[0] == "shard" { // shards of one run must not overwrite each other
			name = strings.TrimSuffix(name, ".json") + "-shard" + strings.Replace(kv[1], "/", "of", 1) + ".json"
		}
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
func (r *benchRun) saveResult(o *pipeline.Outcome, info metrics.RunInfo) error {
	a := r.args
	path := resultPath(a, info)
	if err := metrics.WriteResult(path, o.ResultJSON(info, a.SaveDetailed), a.AppendResult); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "Saved result: %s\n", path)
	if pt := o.Summary.PytorchRecords(info, a.SaveDetailed, r.parser.values()); pt != nil {
		if err := metrics.WriteResult(metrics.PytorchPath(path), pt, false); err != nil {
			return err
		}
	}
	return nil
}
