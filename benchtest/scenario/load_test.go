package scenario

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDefaults(t *testing.T) {
	scs, err := Parse("min.yaml", []byte("name: min\n"))
	require.NoError(t, err)
	require.Len(t, scs, 1)
	sc := scs[0]
	assert.Equal(t, "sim", sc.Target.Kind)
	assert.Equal(t, "openai", sc.Backend)
	assert.Equal(t, "/v1/completions", sc.Endpoint)
	assert.Equal(t, "random", sc.Dataset.Name)
	assert.Equal(t, 1000, sc.Dataset.NumPrompts)
	assert.Equal(t, 1024, sc.Dataset.InputLen)
	assert.Equal(t, 128, sc.Dataset.OutputLen)
	assert.True(t, math.IsInf(sc.Load.RequestRate, 1))
	assert.Equal(t, 1.0, sc.Load.Burstiness)
	assert.Equal(t, 600*time.Second, sc.Load.ReadyTimeout.D())
	assert.Equal(t, 10*time.Minute, sc.Target.StartTimeout.D())
	assert.Equal(t, []string{"ttft", "tpot", "itl"}, sc.Metrics.PercentileMetrics)
	assert.Equal(t, []float64{99}, sc.Metrics.Percentiles)
	assert.Equal(t, 1, sc.Line)
	assert.Len(t, sc.SHA, 64)
}

func TestParseFull(t *testing.T) {
	src := `
name: chat
description: everything set
target:
  kind: url
  url: http://127.0.0.1:8000
  model: m
  served_model_name: served
  tokenizer: tok.json
backend: openai-chat
dataset:
  name: prefix_repetition
  num_prompts: 20
  seed: 7
  prefix_len: 64
load:
  ramp_up: {strategy: linear, start_rps: 1, end_rps: 5}
  max_concurrency: 4
  warmups: 2
  max_duration: 1m
  request_timeout: 30s
  ready_timeout: 0s
sampling:
  temperature: 0.5
  top_k: 10
  ignore_eos: true
extra_body: {foo: [1, 2], bar: {x: true}}
headers: {X-Team: 42}
slo:
  goodput: {ttft: 500, e2el: 3000}
  bounds:
    - p99_ttft_ms <= 800
    - failed==0
    - goodput_ratio >= 0.95
    - p95_e2el_ms < 4000
`
	scs, err := Parse("dir/full.yaml", []byte(src))
	require.NoError(t, err)
	sc := scs[0]
	assert.Equal(t, "/v1/chat/completions", sc.Endpoint)
	assert.Equal(t, filepath.Join("dir", "tok.json"), sc.Target.Tokenizer)
	assert.Equal(t, 64, sc.Dataset.PrefixLen)
	assert.Equal(t, 256, sc.Dataset.SuffixLen)
	assert.Equal(t, 10, sc.Dataset.NumPrefixes)
	assert.Equal(t, &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 5}, sc.Load.RampUp)
	assert.Equal(t, time.Duration(0), sc.Load.ReadyTimeout.D())
	assert.Equal(t, 30*time.Second, sc.Load.RequestTimeout.D())
	assert.Equal(t, 0.5, *sc.Sampling.Temperature)
	assert.Equal(t, 10, *sc.Sampling.TopK)
	assert.Nil(t, sc.Sampling.TopP)
	assert.Equal(t, map[string]any{"foo": []any{1, 2}, "bar": map[string]any{"x": true}}, sc.ExtraBody)
	assert.Equal(t, map[string]string{"X-Team": "42"}, sc.Headers)
	assert.Equal(t, []Bound{
		{"p99_ttft_ms", "<=", 800}, {"failed", "==", 0}, {"goodput_ratio", ">=", 0.95}, {"p95_e2el_ms", "<", 4000},
	}, sc.SLO.Bounds)
	assert.Equal(t, []float64{99, 95}, sc.Metrics.Percentiles, "SLO percentiles are added")
	assert.Equal(t, []string{"ttft", "tpot", "itl", "e2el"}, sc.Metrics.PercentileMetrics)
}

func TestParseListAndDocuments(t *testing.T) {
	src := "- name: a\n- name: b\n  load: {request_rate: 2}\n---\nname: c\n"
	scs, err := Parse("l.yaml", []byte(src))
	require.NoError(t, err)
	require.Len(t, scs, 3)
	assert.Equal(t, []int{1, 2, 5}, []int{scs[0].Line, scs[1].Line, scs[2].Line})
	assert.Equal(t, 2.0, scs[1].Load.RequestRate)
	assert.NotEqual(t, scs[0].SHA, scs[2].SHA)

	// The SHA ignores comments and the scenario's neighbours.
	alone, err := Parse("x.yaml", []byte("# comment\nname: a\n"))
	require.NoError(t, err)
	assert.Equal(t, scs[0].SHA, alone[0].SHA)

	// Bounds and the description do not change what is measured; the
	// goodput definition and the load do.
	base := "name: a\nload: {request_rate: 2}\nslo:\n  goodput: {ttft: 100}\n  bounds: [\"failed == 0\"]\n"
	sha := func(src string) string {
		scs, err := Parse("s.yaml", []byte(src))
		require.NoError(t, err)
		return scs[0].SHA
	}
	assert.Equal(t, sha(base), sha(strings.Replace(base, "failed == 0", "p99_ttft_ms <= 5", 1)+"description: new\n"))
	assert.Equal(t, sha(base), sha(base+"harness: {max_cpu: 0.5}\n"), "a harness limit changes what is measured")
	assert.NotEqual(t, sha(base), sha(strings.Replace(base, "ttft: 100", "ttft: 200", 1)))
	assert.NotEqual(t, sha(base), sha(strings.Replace(base, "request_rate: 2", "request_rate: 3", 1)))
}

// TestParseErrors covers each kind of bad input with its exact message.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"yaml syntax", "name: a\n  bad: [\n", "bad.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"yaml list item in a mapping", "name: a\n- b\n", "bad.yaml:2: invalid YAML: did not find expected key"},
		{"yaml bad indent", "name: a\nload:\n  warmups: 1\n max_concurrency: 2\n", "bad.yaml:4: invalid YAML: did not find expected key"},
		{"yaml unclosed flow mapping", "name: a\nload: {warmups: 1\nx: 2\n", "bad.yaml:2: invalid YAML: did not find expected ',' or '}'"},
		{"yaml tab", "name: a\nload:\n\twarmups: 3\n", "bad.yaml:3: invalid YAML: found character that cannot start any token"},
		{"empty file", "# nothing\n", "bad.yaml: no scenario in the file"},
		{"not a mapping", "42\n", "bad.yaml:1: want a scenario (a mapping) or a list of scenarios, got number 42"},
		{"list item not a mapping", "- name: a\n- 3\n", "bad.yaml:2: [1]: want a scenario (a mapping), got number 3"},
		{"missing name", "description: x\n", "bad.yaml:1: name: required"},
		{"bad name", "name: a b\n", `bad.yaml:1: name: "a b": use letters, digits, '.', '_' and '-' only, starting with a letter or digit`},
		{"long name", "name: " + strings.Repeat("n", 129) + "\n", "bad.yaml:1: name: 129 characters is over the maximum 128: the name goes into file names and every request's id"},
		{"duplicate name", "- name: a\n- name: a\n", `bad.yaml:2: name: "a" is also the name of the scenario at line 1`},
		{"unknown top-level key", "name: a\nrate: 3\n", "bad.yaml:2: rate: unknown key (known keys here: name, description, target, backend, endpoint, dataset, load, sampling, extra_body, headers, metrics, slo, harness, server_metrics, capacity, sessions)"},
		{"unknown nested key", "name: a\nload:\n  request_rate: 1\n  rps: 3\n", "bad.yaml:4: load.rps: unknown key (known keys here: request_rate, burstiness, ramp_up, max_concurrency, warmups, max_duration, request_timeout, ready_timeout, trace_replay, trace_speed, warm_connections, max_line_bytes)"},
		{"duplicate key", "name: a\nname: b\n", "bad.yaml:2: name: duplicate key"},
		{"harness cpu above 1", "name: a\nharness:\n  max_cpu: 1.5\n", "bad.yaml:3: harness.max_cpu: must be a share of the CPUs in [0, 1] (0 turns the check off), got 1.5"},
		{"harness negative lateness", "name: a\nharness: {max_lateness_p99: -1ms}\n", "bad.yaml:2: harness.max_lateness_p99: must not be negative (0 turns the check off), got -1ms"},
		{"harness lateness not a duration", "name: a\nharness: {max_sched_latency_p99: 50}\n", "bad.yaml:2: harness.max_sched_latency_p99: want a duration such as 30s or 5m, got number 50"},
		{"harness unknown key", "name: a\nharness: {max_gc: 1}\n", "bad.yaml:2: harness.max_gc: unknown key (known keys here: max_lateness_p99, max_cpu, max_sched_latency_p99, reruns)"},
		{"harness reruns negative", "name: a\nharness: {reruns: -1}\n", "bad.yaml:2: harness.reruns: must be in [0, 10], got -1"},
		{"wrong type string", "name: a\nload:\n  request_rate: fast\n", `bad.yaml:3: load.request_rate: want a number, got string "fast"`},
		{"wrong type int", "name: a\ndataset:\n  num_prompts: 1.5\n", "bad.yaml:3: dataset.num_prompts: want an integer, got number 1.5"},
		{"wrong type mapping", "name: a\nload: 3\n", "bad.yaml:2: load: want a mapping of keys, got number 3"},
		{"wrong type list", "name: a\nslo:\n  bounds: failed == 0\n", `bad.yaml:3: slo.bounds: want a list, got string "failed == 0"`},
		{"wrong type bool", "name: a\nsampling:\n  ignore_eos: yes\n", `bad.yaml:3: sampling.ignore_eos: want true or false, got string "yes"`},
		{"wrong type string field", "name: a\ntarget:\n  model: [x]\n", "bad.yaml:3: target.model: want a string, got a list"},
		{"bad duration", "name: a\nload:\n  request_timeout: 30\n", "bad.yaml:3: load.request_timeout: want a duration such as 30s or 5m, got number 30"},
		{"bad target kind", "name: a\ntarget:\n  kind: k8s\n", `bad.yaml:3: target.kind: must be one of sim, inproc, vllm, url, container; got "k8s"`},
		{"url target without url", "name: a\ntarget:\n  kind: url\n", "bad.yaml:2: target.url: required when target.kind is url (or set SERVEGATE_URL)"},
		{"url target bad url", "name: a\ntarget:\n  kind: url\n  url: localhost:8000\n", `bad.yaml:4: target.url: want http://host:port, got "localhost:8000"`},
		{"bad url with credentials", "name: a\ntarget:\n  kind: url\n  url: ftp://u:planted-pw-9@h/\n", `bad.yaml:4: target.url: want http://host:port, got "ftp://xxxxx@h/"`},
		{"gpus zero", "name: a\ntarget: {kind: vllm, gpus: 0}\n", "bad.yaml:2: target.gpus: want all, a count of GPUs, or a list of device ids such as [0, 1]; got number 0"},
		{"gpus word", "name: a\ntarget: {kind: vllm, gpus: some}\n", `bad.yaml:2: target.gpus: want all, a count of GPUs, or a list of device ids such as [0, 1]; got string "some"`},
		{"gpus empty list", "name: a\ntarget: {kind: container, image: s, gpus: []}\n", "bad.yaml:2: target.gpus: want all, a count of GPUs, or a list of device ids such as [0, 1]; got a list"},
		{"gpus on sim", "name: a\ntarget: {kind: sim, gpus: all}\n", "bad.yaml:2: target.gpus: only for target.kind vllm or container; this target is sim"},
		{"vllm block unknown key", "name: a\ntarget: {kind: sim, vllm: {argz: [x]}}\n", "bad.yaml:2: target.vllm.argz: unknown key (known keys here: model, image, args, env)"},
		{"profile on vllm", "name: a\ntarget: {kind: vllm, model: m, profile: cpu}\n", "bad.yaml:2: target.profile: a simulator profile needs target.kind sim or inproc; this target is vllm"},
		{"bad backend", "name: a\nbackend: tgi\n", `bad.yaml:2: backend: must be one of openai, vllm, openai-chat, openai-embeddings, vllm-rerank, openai-responses; got "tgi"`},
		{"bad endpoint", "name: a\nendpoint: v1/completions\n", `bad.yaml:2: endpoint: must be a path starting with /, got "v1/completions"`},
		{"bad dataset", "name: a\ndataset: {name: imdb}\n", `bad.yaml:2: dataset.name: must be one of random, random-rerank, sharegpt, custom, spec_bench, sonnet, burstgpt, prefix_repetition, txt-slices; got "imdb"`},
		{"file dataset without path", "name: a\ndataset:\n  name: sharegpt\n", "bad.yaml:2: dataset.path: required for the sharegpt dataset"},
		{"zero prompts", "name: a\ndataset:\n  num_prompts: 0\n", "bad.yaml:3: dataset.num_prompts: must be at least 1, got 0"},
		{"negative length", "name: a\ndataset:\n  output_len: -5\n", "bad.yaml:3: dataset.output_len: must not be negative, got -5"},
		{"range ratio", "name: a\ndataset:\n  range_ratio: 1\n", "bad.yaml:3: dataset.range_ratio: must be in [0, 1), got 1"},
		{"negative rate", "name: a\nload:\n  request_rate: -1\n", "bad.yaml:3: load.request_rate: must be a positive rate in requests/s (or inf for all at once), got -1"},
		{"zero rate", "name: a\nload:\n  request_rate: 0\n", "bad.yaml:3: load.request_rate: must be a positive rate in requests/s (or inf for all at once), got 0"},
		{"zero burstiness", "name: a\nload:\n  burstiness: 0\n", "bad.yaml:3: load.burstiness: must be positive (1 is Poisson, below 1 burstier, inf constant gaps), got 0"},
		{"ramp-up with a fixed rate", "name: a\nload:\n  request_rate: 5\n  ramp_up:\n    strategy: linear\n    start_rps: 1\n    end_rps: 10\n", "bad.yaml:4: load.ramp_up: cannot be combined with load.request_rate: the ramp-up sets the rate; remove one of them"},
		{"ramp-up strategy", "name: a\nload:\n  ramp_up: {strategy: step, start_rps: 1, end_rps: 2}\n", `bad.yaml:3: load.ramp_up.strategy: must be one of linear, exponential; got "step"`},
		{"ramp-up missing end", "name: a\nload:\n  ramp_up: {strategy: linear, start_rps: 1}\n", "bad.yaml:3: load.ramp_up.end_rps: required with a ramp-up"},
		{"ramp-up start above end", "name: a\nload:\n  ramp_up:\n    strategy: linear\n    start_rps: 9\n    end_rps: 2\n", "bad.yaml:5: load.ramp_up.start_rps: must not exceed end_rps (9 > 2)"},
		{"ramp-up negative", "name: a\nload:\n  ramp_up: {strategy: linear, start_rps: -1, end_rps: 2}\n", "bad.yaml:3: load.ramp_up: start_rps and end_rps must be finite and non-negative, got -1 and 2"},
		{"exponential from zero", "name: a\nload:\n  ramp_up: {strategy: exponential, start_rps: 0, end_rps: 2}\n", "bad.yaml:3: load.ramp_up.start_rps: must be positive for an exponential ramp-up"},
		{"negative concurrency", "name: a\nload:\n  max_concurrency: -2\n", "bad.yaml:3: load.max_concurrency: must not be negative, got -2"},
		{"negative duration", "name: a\nload:\n  max_duration: -1s\n", "bad.yaml:3: load.max_duration: must not be negative, got -1s"},
		{"trace on random", "name: a\nload:\n  trace_replay: true\n", "bad.yaml:3: load.trace_replay: needs a dataset with arrival times (burstgpt, custom); random has none"},
		{"bad top_p", "name: a\nsampling: {top_p: 0}\n", "bad.yaml:2: sampling.top_p: must be in (0, 1], got 0"},
		{"percentile above 100", "name: a\nmetrics:\n  percentiles: [50, 101]\n", "bad.yaml:3: metrics.percentiles[1]: percentile must be in [0, 100], got 101"},
		{"percentile metric", "name: a\nmetrics:\n  percentile_metrics: [ttft, queue]\n", `bad.yaml:3: metrics.percentile_metrics[1]: must be one of ttft, tpot, itl, e2el; got "queue"`},
		{"SLO percentile above 100", "name: a\nslo:\n  bounds:\n    - failed == 0\n    - p101_ttft_ms <= 5\n", "bad.yaml:5: slo.bounds[1]: p101_ttft_ms: percentile must be in [0, 100], got 101"},
		{"SLO on unknown metric", "name: a\nslo:\n  bounds:\n    - p99_ttft_sec <= 0.8\n", `bad.yaml:4: slo.bounds[0]: unknown metric "p99_ttft_sec" (docs/scenarios.md lists the metrics)`},
		{"SLO syntax", "name: a\nslo:\n  bounds: [\"ttft about 5\"]\n", `bad.yaml:3: slo.bounds[0]: want "<metric> <op> <number>" with op one of <= >= == < >, such as "p99_ttft_ms <= 800"; got "ttft about 5"`},
		{"SLO bound not a number", "name: a\nslo:\n  bounds: [\"failed == none\"]\n", `bad.yaml:3: slo.bounds[0]: bound "none" is not a number in "failed == none"`},
		{"SLO goodput without config", "name: a\nslo:\n  bounds: [\"goodput_ratio >= 0.9\"]\n", "bad.yaml:3: slo.bounds[0]: goodput_ratio needs slo.goodput (the ttft/tpot/e2el limits that make a request good)"},
		{"goodput key", "name: a\nslo:\n  goodput: {itl: 5}\n", "bad.yaml:3: slo.goodput.itl: unknown goodput metric; must be one of ttft, tpot, e2el (milliseconds)"},
		{"goodput negative", "name: a\nslo:\n  goodput:\n    ttft: -5\n", "bad.yaml:4: slo.goodput.ttft: must not be negative, got -5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(c.src))
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

func TestLoadDir(t *testing.T) {
	scs, err := LoadDir("testdata/good")
	require.NoError(t, err)
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	assert.Equal(t, []string{"one", "two-a", "two-b"}, names)
	assert.Equal(t, filepath.Join("testdata", "good", "prompts.jsonl"), scs[0].Dataset.Path)

	_, err = LoadDir("testdata/dup")
	require.Error(t, err)
	assert.Equal(t, `testdata/dup/b.yaml:1: name: "same" is also the name of the scenario at testdata/dup/a.yaml:1`, err.Error())

	_, err = LoadDir(t.TempDir())
	assert.ErrorContains(t, err, "no *.yaml or *.yml file in")

	_, err = LoadFile("testdata/missing.yaml")
	assert.ErrorIs(t, err, os.ErrNotExist)
	var serr *Error
	_, err = Parse("x.yaml", []byte("name: 5\n"))
	require.True(t, errors.As(err, &serr))
	assert.Equal(t, Error{File: "x.yaml", Line: 1, Field: "name", Msg: "want a string, got number 5"}, *serr)
}

// TestWorkload: the workload leaves the target out, so a pull request
// that changes the server keeps the scenario's identity, and
// WorkloadDiff names the keys that did change.
func TestWorkload(t *testing.T) {
	parse := func(src string) *Scenario {
		t.Helper()
		scs, err := Parse("w.yaml", []byte(src))
		require.NoError(t, err)
		return scs[0]
	}
	base := parse("name: a\ntarget: {kind: sim, args: [--slowdown=1.0]}\nload: {request_rate: 2}\ndataset: {num_prompts: 60}\n")
	head := parse("name: a\ntarget: {kind: sim, args: [--slowdown=1.1]}\ndataset: {num_prompts: 60}\nload: {request_rate: 2}\n")
	assert.Len(t, base.Workload, 64)
	assert.NotEqual(t, base.SHA, head.SHA, "the SHA holds the target")
	assert.Equal(t, base.Workload, head.Workload, "neither the target nor the keys' order is part of the workload")
	assert.Empty(t, WorkloadDiff(base, head))

	other := parse("name: a\ntarget: {kind: sim}\nload: {request_rate: 3}\nslo: {goodput: {ttft: 100}}\n")
	assert.NotEqual(t, base.Workload, other.Workload)
	assert.Equal(t, []string{"dataset", "load", "slo"}, WorkloadDiff(base, other))
}

// TestProfileFile: a profile file is relative to the scenario file, a
// shipped profile's name stays a name.
func TestProfileFile(t *testing.T) {
	scs, err := Parse(filepath.Join("dir", "p.yaml"), []byte("name: a\ntarget: {kind: sim, profile: prof/slow.yaml}\n"+
		"---\nname: b\ntarget: {kind: container, image: x, backends: [{profile: gpu-8b}, {profile: ./b.yaml}]}\n"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("dir", "prof", "slow.yaml"), scs[0].Target.Profile)
	assert.Equal(t, "gpu-8b", scs[1].Target.Backends[0].Profile)
	assert.Equal(t, filepath.Join("dir", "b.yaml"), scs[1].Target.Backends[1].Profile)
	assert.False(t, IsProfileFile("gpu-8b"))
	assert.True(t, IsProfileFile("slow.yaml"))
}

// TestGPUs reads target.gpus as docker run --gpus takes it.
func TestGPUs(t *testing.T) {
	for src, want := range map[string]GPUs{
		"all":           {All: true},
		"2":             {Count: 2},
		"[0, 1]":        {IDs: []string{"0", "1"}},
		"[GPU-3a1c-77]": {IDs: []string{"GPU-3a1c-77"}},
	} {
		scs, err := Parse("g.yaml", []byte("name: a\ntarget: {kind: vllm, gpus: "+src+"}\n"))
		require.NoError(t, err, "gpus: %s", src)
		assert.Equal(t, want, scs[0].Target.GPUs, "gpus: %s", src)
		assert.False(t, want.None())
	}
	assert.True(t, GPUs{}.None())
}
