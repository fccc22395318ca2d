package twin

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
)

// fakeRecords are a good run's records, measured on fakeReplay.
func fakeRecords(tb testing.TB) ([]metrics.Record, time.Duration) {
	tb.Helper()
	r := fakeRun(tb, trueCosts())
	return r.Records, r.Duration
}

// TestBadInput: each kind of run calibration cannot use is an error that
// names the file and the field, before anything is fitted.
func TestBadInput(t *testing.T) {
	good, dur := fakeRecords(t)
	vllm := resultFile{model: "TinyLlama/TinyLlama-1.1B-Chat-v1.0", target: "vllm", detailed: true}
	with := func(f resultFile, fields ...metrics.Field) resultFile {
		f.appendix = append(slices.Clone(f.appendix), fields...)
		return f
	}
	okMetrics := serverMetrics(good)
	metricsWith := func(key string, v float64) metrics.Field {
		obj := slices.Clone(okMetrics.Value.([]metrics.Field))
		for i := range obj {
			if obj[i].Key == key {
				obj[i].Value = v
			}
		}
		return metrics.Field{Key: "server_metrics", Value: obj}
	}
	gen, prompt := 0.0, 0.0
	for _, r := range good {
		gen += float64(r.OutputTokens)
		prompt += float64(r.ServerPromptTokens)
	}
	failed := slices.Clone(good)
	failed[5].Success, failed[5].Failure, failed[5].Error = false, metrics.FailureHTTPStatus, "HTTP 500: boom"
	apart := slices.Clone(good) // one request at a time: every token at batch size 1
	for i := range apart {
		apart[i].Start = time.Duration(i) * 10 * time.Second
	}
	for _, tc := range []struct {
		name  string
		file  resultFile
		recs  []metrics.Record
		dur   time.Duration
		extra []string // more files, written from good with vllm
		want  []string // substrings of the error besides the file name
	}{
		{name: "no per-request detail", file: resultFile{model: "m", target: "vllm"}, want: []string{"not a detailed result", "--save-detailed"}},
		{name: "too few requests", file: with(vllm, serverMetrics(good[:3])), recs: good[:3], want: []string{"too small to fit", "fewer than 12"}},
		{name: "one batch size", file: with(vllm, serverMetrics(apart)), recs: apart, dur: 500 * time.Second, want: []string{"too small to fit", "one batch size"}},
		{name: "simulator by its info metric", file: with(vllm, okMetrics, metrics.Field{Key: "server_config", Value: []metrics.Field{
			{Key: SimInfoMetric, Value: []metrics.Field{{Key: "engine", Value: "0"}}}}}), want: []string{"simulator, not a server", SimInfoMetric}},
		{name: "simulator by target kind", file: with(resultFile{model: "meta-llama/Meta-Llama-3-8B-Instruct", target: "inproc", detailed: true}, okMetrics),
			want: []string{"simulator, not a server", `target is "inproc"`}},
		{name: "simulator by model", file: with(resultFile{model: "servegate/sim-cpu-small", target: "url", detailed: true}, okMetrics),
			want: []string{"simulator, not a server", "servegate/sim-cpu-small"}},
		{name: "generated tokens contradict", file: with(vllm, metricsWith("generation_tokens", 2*gen)), want: []string{"server_metrics.generation_tokens", "contradict"}},
		{name: "prompt tokens contradict", file: with(vllm, metricsWith("prompt_tokens", prompt/2)), want: []string{"server_metrics.prompt_tokens", "contradict"}},
		{name: "prefix cache hits", file: with(vllm, metricsWith("prefix_cache_hits", prompt/2)), want: []string{"server_metrics.prefix_cache_hits", "share no prefix"}},
		{name: "failed request", file: with(vllm, serverMetrics(failed)), recs: failed, want: []string{"errors", "request 5 failed", "boom"}},
		{name: "invalid run", file: with(vllm, okMetrics, metrics.Field{Key: "invalid", Value: "p99 lateness 80ms > 50ms"}), want: []string{"invalid", "p99 lateness"}},
		{name: "bad cache config", file: with(vllm, okMetrics, metrics.Field{Key: "server_config", Value: []metrics.Field{
			{Key: CacheConfigInfo, Value: []metrics.Field{{Key: "num_gpu_blocks", Value: "lots"}}}}}), want: []string{CacheConfigInfo, "num_gpu_blocks", `"lots"`}},
		{name: "differently configured servers", file: with(vllm, okMetrics, vllmConfig(4096)), extra: []string{"8192"},
			want: []string{"differently configured", "num_kv_blocks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			recs, d := cmpRecs(tc.recs, good), dur
			if tc.dur > 0 {
				d = tc.dur
			}
			paths := []string{tc.file.write(t, dir, "run.json", recs, d)}
			for i, blocks := range tc.extra {
				f := with(vllm, okMetrics, vllmConfig(atoi(t, blocks)))
				paths = append(paths, f.write(t, dir, "other"+string(rune('a'+i))+".json", good, dur))
			}
			err := calibrateFiles(t, paths)
			require.Error(t, err)
			msg := err.Error()
			assert.Contains(t, msg, filepath.Join(dir, "run.json"), "the error names the file")
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
		})
	}
}

func cmpRecs(a, b []metrics.Record) []metrics.Record {
	if a != nil {
		return a
	}
	return b
}

func atoi(tb testing.TB, s string) int {
	tb.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(tb, err)
	return n
}

// calibrateFiles reads and calibrates files on the fake engine.
func calibrateFiles(tb testing.TB, paths []string) error {
	tb.Helper()
	var runs []*Run
	for _, p := range paths {
		r, err := ReadRunFile(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	_, err := Calibrate(context.Background(), runs, Options{Replay: fakeReplay, MaxEvals: 30})
	return err
}

// TestGoodInputPasses is the control of TestBadInput: the good run with
// agreeing metrics and a stated configuration calibrates, and the stated
// values are taken, not fitted.
func TestGoodInputPasses(t *testing.T) {
	good, dur := fakeRecords(t)
	f := resultFile{model: "TinyLlama/TinyLlama-1.1B-Chat-v1.0", target: "vllm", detailed: true,
		appendix: []metrics.Field{serverMetrics(good), vllmConfig(2500, "--max-num-seqs", "12", "--max-num-batched-tokens=1024", "--max-model-len", "2048")}}
	path := f.write(t, t.TempDir(), "run.json", good, dur)
	r, err := ReadRunFile(path)
	require.NoError(t, err)
	res, err := Calibrate(t.Context(), []*Run{r}, Options{Replay: fakeReplay, MaxEvals: 200, Given: Given{MaxModelLen: 4096}})
	require.NoError(t, err)
	p := res.Params
	assert.Equal(t, "TinyLlama/TinyLlama-1.1B-Chat-v1.0", p.Model)
	assert.Equal(t, 12, p.MaxNumSeqs)
	assert.Equal(t, 1024, p.MaxNumBatchedTokens)
	assert.Equal(t, 4096, p.MaxModelLen, "a flag wins over serve_args")
	assert.Equal(t, 2500, p.NumKVBlocks)
	assert.Equal(t, 16, p.BlockSize)
	assert.True(t, p.EnablePrefixCaching)
	sources := map[string]string{}
	for _, s := range res.Settings {
		sources[s.Key] = s.Source
		assert.True(t, s.Pinned, "%s is stated", s.Key)
	}
	assert.Equal(t, "flag --max-model-len", sources["max_model_len"])
	assert.Equal(t, "serve_args --max-num-seqs of "+path, sources["max_num_seqs"])
	assert.Equal(t, CacheConfigInfo+" of "+path, sources["num_kv_blocks"])
}

// TestNotStatedIsSaid: without server_config or flags, the batch limit
// and the KV cache are not pinned down, and the report says so.
func TestNotStatedIsSaid(t *testing.T) {
	r := fakeRun(t, trueCosts())
	res, err := Calibrate(t.Context(), []*Run{r}, Options{Replay: fakeReplay, MaxEvals: 100})
	require.NoError(t, err)
	var report strings.Builder
	res.WriteReport(&report)
	for _, s := range res.Settings {
		switch s.Key {
		case "max_num_seqs", "num_kv_blocks", "max_num_batched_tokens", "max_model_len", "block_size":
			assert.False(t, s.Pinned, s.Key)
			assert.NotEmpty(t, s.Note, s.Key)
			assert.Contains(t, report.String(), s.Note)
		}
	}
	assert.Contains(t, report.String(), "not pinned down")
	assert.Contains(t, report.String(), "median TTFT")
}

// TestInputErrorType: refusals are *InputError, for callers that must
// tell bad input from a failed fit.
func TestInputErrorType(t *testing.T) {
	r := fakeRun(t, trueCosts())
	r.Target = "sim"
	_, err := Calibrate(t.Context(), []*Run{r}, Options{Replay: fakeReplay})
	var ie *InputError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, "fake.json", ie.Path)
}
