package metrics

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PytorchEnv is the environment variable that makes WritePytorch write
// anything, as in vLLM.
const PytorchEnv = "SAVE_TO_PYTORCH_BENCHMARK_FORMAT"

// pytorchMetrics are the result keys vLLM turns into PyTorch OSS benchmark
// records, in its order.
var pytorchMetrics = []string{
	"median_ttft_ms", "mean_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
	"median_itl_ms", "mean_itl_ms", "std_itl_ms", "p99_itl_ms",
}

// pytorchIgnored are result keys too big for the records' extra_info.
var pytorchIgnored = []string{"ttfts", "itls", "generated_texts", "errors"}

// PytorchRecords renders the summary in the PyTorch OSS benchmark database
// format the way vLLM's save_to_pytorch_benchmark_format does: one record
// per latency metric present in the result (mean, median, std and p99 of
// TTFT, TPOT and ITL), each carrying args (the command's arguments), the
// model name and every other result key as extra_info. It returns nil when
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT is unset or empty, as vLLM does.
func (s *Summary) PytorchRecords(info RunInfo, detailed bool, args map[string]any) []byte {
	if os.Getenv(PytorchEnv) == "" {
		return nil
	}
	res := s.resultObject(info, detailed)
	var extra object
	values := map[string]any{}
	for _, f := range res {
		switch {
		case slices.Contains(pytorchMetrics, f.Key):
			values[f.Key] = f.Value
		case !slices.Contains(pytorchIgnored, f.Key):
			extra = append(extra, f)
		}
	}
	var records []any
	for _, name := range pytorchMetrics {
		v, ok := values[name]
		if !ok {
			continue
		}
		a := map[string]any{}
		for k, x := range args {
			a[k] = x
		}
		if tp, ok := a["tensor_parallel_size"]; !ok || tp == nil || tp == 0 {
			for _, f := range extra {
				if f.Key == "tensor_parallel_size" {
					a["tensor_parallel_size"] = f.Value
				}
			}
		}
		records = append(records, object{
			{"benchmark", object{{"name", "vLLM benchmark"}, {"extra_info", object{{"args", a}}}}},
			{"model", object{{"name", info.ModelID}}},
			{"metric", object{{"name", name}, {"benchmark_values", []any{v}}, {"extra_info", extra}}},
		})
	}
	if records == nil {
		return nil
	}
	return writePyJSON(nil, clearInf(records))
}

// PytorchPath is where vLLM writes the PyTorch records of a result file:
// the result file's name with its extension replaced by ".pytorch.json".
func PytorchPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, filepath.Ext(resultPath)) + ".pytorch.json"
}

// clearInf replaces infinite floats by the string "inf", like vLLM's
// InfEncoder.
func clearInf(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) {
			return "inf"
		}
	case object:
		out := make(object, len(x))
		for i, f := range x {
			out[i] = Field{f.Key, clearInf(f.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clearInf(e)
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clearInf(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clearInf(e)
		}
		return out
	}
	return v
}
