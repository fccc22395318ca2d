package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
)

func TestParseBenchDefaults(t *testing.T) {
	a, plan, _, err := parseBench([]string{"--model", "m"})
	require.NoError(t, err)
	assert.Equal(t, "openai", a.Backend)
	assert.Equal(t, "127.0.0.1", a.Host)
	assert.Equal(t, 8000, a.Port)
	assert.Equal(t, "/v1/completions", a.Endpoint)
	assert.Nil(t, a.BaseURL)
	assert.Equal(t, "random", a.DatasetName)
	assert.Equal(t, 1000, a.NumPrompts)
	assert.True(t, math.IsInf(a.RequestRate, 1))
	assert.Equal(t, 1.0, a.Burstiness)
	assert.Nil(t, a.MaxConcurrency)
	assert.Equal(t, 0, a.NumWarmups)
	assert.Equal(t, 600, a.ReadyCheckTimeoutSec)
	assert.Equal(t, "99", a.MetricPercentiles)
	assert.Equal(t, 1024, a.RandomInputLen)
	assert.Equal(t, 128, a.RandomOutputLen)
	assert.Equal(t, 0, a.Seed)
	assert.Equal(t, "url", a.Target)
	assert.Regexp(t, `^bench-[0-9a-f]{8}-$`, a.RequestIDPrefix)

	assert.Equal(t, "http://127.0.0.1:8000/v1/completions", plan.APIURL)
	assert.Equal(t, "http://127.0.0.1:8000", plan.BaseURL)
	assert.Equal(t, "m", plan.TokenizerID)
	assert.Equal(t, []string{"ttft", "tpot", "itl"}, plan.PercentileMetrics)
	assert.Equal(t, []float64{99}, plan.Percentiles)
	assert.True(t, plan.IgnoreEOS, "random dataset on an openai backend ignores EOS, as vLLM does")
	assert.Equal(t, map[string]any{"temperature": 0.0}, plan.ExtraBody)
	assert.Nil(t, plan.Goodput)
	assert.False(t, plan.Pooling)
}

func TestParseBenchValues(t *testing.T) {
	a, plan, _, err := parseBench(strings.Fields(
		"--model org/m --tokenizer /tmp/tok.json --backend openai-chat --endpoint /v1/chat/completions " +
			"--base-url http://h:9 --request-rate 12.5 --burstiness=0.5 --max-concurrency 8 " +
			"--goodput ttft:200 tpot:50 --header x-a=1 x-b=2=3 --metadata tp=1 v=0.13 " +
			"--percentile-metrics ttft,e2el --metric-percentiles 50,99.9 --top-p 0.9 --top-k 5 " +
			"--temperature 0.7 --lora-modules a b --num_prompts 7 --save-result --save-detailed " +
			"--dataset-name sharegpt --dataset-path /d.json --sharegpt-output-len 64 --seed -3"))
	require.NoError(t, err)
	assert.Equal(t, "openai-chat", a.Backend)
	assert.Equal(t, 12.5, a.RequestRate)
	assert.Equal(t, 0.5, a.Burstiness)
	assert.Equal(t, 8, *a.MaxConcurrency)
	assert.Equal(t, 7, a.NumPrompts, "underscores spell the same flag")
	a2, _, _, err := parseBench(strings.Fields("--mod m --num-prom 3 --random-out 9"))
	require.NoError(t, err)
	assert.Equal(t, "m", a2.Model, "a unique prefix names its option, as argparse allows")
	assert.Equal(t, 3, a2.NumPrompts)
	assert.Equal(t, 9, a2.RandomOutputLen)
	assert.Equal(t, -3, a.Seed, "negative numbers are values, not flags")
	assert.Equal(t, []string{"a", "b"}, a.LoRAModules)
	assert.Equal(t, 64, *a.SharegptOutputLen)
	assert.True(t, a.SaveResult && a.SaveDetailed)

	assert.Equal(t, "http://h:9/v1/chat/completions", plan.APIURL)
	assert.Equal(t, "/tmp/tok.json", plan.TokenizerID)
	assert.Equal(t, map[string]float64{"ttft": 200, "tpot": 50}, plan.Goodput)
	assert.Equal(t, map[string]string{"x-a": "1", "x-b": "2=3"}, plan.Headers)
	assert.Equal(t, []keyValue{{"tp", "1"}, {"v", "0.13"}}, plan.Metadata)
	assert.Equal(t, []string{"ttft", "e2el"}, plan.PercentileMetrics)
	assert.Equal(t, []float64{50, 99.9}, plan.Percentiles)
	assert.Equal(t, map[string]any{"top_p": 0.9, "top_k": 5, "temperature": 0.7}, plan.ExtraBody)
	assert.False(t, plan.IgnoreEOS, "only random datasets force ignore_eos")
}

func TestParseBenchExtraBodyOverridesSampling(t *testing.T) {
	_, plan, _, err := parseBench([]string{"--model", "m", "--temperature", "0.5",
		"--extra-body", `{"temperature": 1.0, "chat_template_kwargs": {"enable_thinking": false}}`})
	require.NoError(t, err)
	assert.Equal(t, 1.0, plan.ExtraBody["temperature"])
	assert.Equal(t, map[string]any{"enable_thinking": false}, plan.ExtraBody["chat_template_kwargs"])
}

func TestParseBenchRampUpAndPooling(t *testing.T) {
	a, _, _, err := parseBench(strings.Fields("--model m --ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 10"))
	require.NoError(t, err)
	assert.Equal(t, "linear", *a.RampUpStrategy)
	assert.Equal(t, 1, *a.RampUpStartRPS)
	assert.Equal(t, 10, *a.RampUpEndRPS)

	_, plan, _, err := parseBench(strings.Fields("--model m --backend openai-embeddings --endpoint /v1/embeddings"))
	require.NoError(t, err)
	assert.True(t, plan.Pooling)
	assert.Equal(t, []string{"e2el"}, plan.PercentileMetrics)
	assert.Nil(t, plan.ExtraBody, "pooling requests carry no sampling parameters")
}

// TestParseBenchErrors covers every validation error: argparse's usage
// errors (exit status 2) and vLLM's ValueErrors (status 1), with vLLM's text.
func TestParseBenchErrors(t *testing.T) {
	cases := []struct {
		name, args string
		code       int
		want       string
	}{
		{"missing model", "", 2, "the following arguments are required: --model"},
		{"unknown flag", "--model m --bogus 1", 2, "unrecognized arguments: --bogus 1"},
		{"ambiguous prefix", "--model m --random 5", 2, "ambiguous option: --random could match --random-input-len, --random-output-len,"},
		{"positional", "--model m extra", 2, "unrecognized arguments: extra"},
		{"bad int", "--model m --num-prompts ten", 2, "argument --num-prompts: invalid int value: 'ten'"},
		{"bad float", "--model m --request-rate fast", 2, "argument --request-rate: invalid float value: 'fast'"},
		{"bad choice", "--model m --backend tgi", 2, "argument --backend: invalid choice: 'tgi' (choose from 'vllm', 'openai',"},
		{"bad dataset", "--model m --dataset-name imagenet", 2, "argument --dataset-name: invalid choice: 'imagenet'"},
		{"bad ramp strategy", "--model m --ramp-up-strategy cubic", 2, "argument --ramp-up-strategy: invalid choice: 'cubic' (choose from 'linear', 'exponential')"},
		{"bad target", "--model m --target k8s", 2, "argument --target: invalid choice: 'k8s'"},
		{"missing value", "--model m --host", 2, "argument --host: expected one argument"},
		{"value is a flag", "--model --host h", 2, "argument --model: expected one argument"},
		{"goodput needs a value", "--model m --goodput", 2, "argument --goodput: expected at least one argument"},
		{"switch with value", "--model m --save-result=yes", 2, "argument --save-result: ignored explicit argument 'yes'"},
		{"bad json", "--model m --extra-body {x}", 2, "argument --extra-body: invalid loads value: '{x}'"},
		{"random with path", "--model m --dataset-path d.json", 2, "Cannot use 'random' dataset with --dataset-path. Please specify the appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'sonnet') for your dataset file: d.json"},
		{"ramp-up with rate", "--model m --ramp-up-strategy linear --request-rate 5 --ramp-up-start-rps 1 --ramp-up-end-rps 2", 1, "When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up parameters. Please remove the --request-rate argument."},
		{"ramp-up without end", "--model m --ramp-up-strategy linear --ramp-up-start-rps 1", 1, "When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified"},
		{"ramp-up negative", "--model m --ramp-up-strategy linear --ramp-up-start-rps -1 --ramp-up-end-rps 2", 1, "Ramp-up start and end RPS must be non-negative"},
		{"ramp-up reversed", "--model m --ramp-up-strategy linear --ramp-up-start-rps 5 --ramp-up-end-rps 2", 1, "Ramp-up start RPS must be less than end RPS"},
		{"exponential from zero", "--model m --ramp-up-strategy exponential --ramp-up-start-rps 0 --ramp-up-end-rps 2", 1, "For exponential ramp-up, the start RPS cannot be 0."},
		{"bad header", "--model m --header novalue", 1, "Invalid header format. Please use KEY=VALUE format."},
		{"random-mm off chat", "--model m --dataset-name random-mm", 1, "Multi-modal content (images) is only supported on 'openai-chat' backend."},
		{"goodput format", "--model m --goodput ttft=5", 1, `Invalid format found for service level objectives. Specify service level objectives for goodput as "KEY:VALUE" pairs, where the key is a metric name, and the value is a number in milliseconds.`},
		{"goodput number", "--model m --goodput ttft:fast", 1, "Invalid format found for service level objectives."},
		{"goodput name", "--model m --goodput itl:5", 1, "Invalid metric name found, itl: 5.0. The service level objective name should be one of ['ttft', 'tpot', 'e2el']. "},
		{"goodput negative", "--model m --goodput e2el:-1", 1, "Invalid value found, e2el: -1.0. The service level objective value should be non-negative."},
		{"bad metadata", "--model m --metadata tp", 1, "Invalid metadata format. Please use KEY=VALUE format."},
		{"percentile metric", "--model m --percentile-metrics ttft,foo", 1, `--percentile-metrics: unknown metric "foo"`},
		{"percentile value", "--model m --metric-percentiles 50,101", 1, `--metric-percentiles: "101" is not a percentile between 0 and 100`},
		{"percentile text", "--model m --metric-percentiles p99", 1, `--metric-percentiles: "p99" is not a percentile`},
		{"hf dataset", "--model m --dataset-name hf --dataset-path x", 1, "--dataset-name hf: not implemented in servegate (supported: random,"},
		{"random-mm on chat", "--model m --dataset-name random-mm --backend openai-chat", 1, "--dataset-name random-mm: not implemented in servegate"},
		{"unsupported backend", "--model m --backend openai-audio", 1, "--backend openai-audio: not implemented in servegate"},
		{"zero prompts", "--model m --num-prompts 0", 1, "--num-prompts must be at least 1, got 0"},
		{"zero concurrency", "--model m --max-concurrency 0", 1, "--max-concurrency must be at least 1, got 0"},
		{"zero rate", "--model m --request-rate 0", 1, "--request-rate must be positive"},
		{"zero burstiness", "--model m --burstiness 0", 1, "--burstiness must be positive"},
		{"negative warmups", "--model m --num-warmups -1", 1, "--num-warmups must not be negative"},
		{"negative max duration", "--model m --max-duration-sec -1", 1, "--max-duration-sec must not be negative, got -1.0"},
		{"zero timeout", "--model m --request-timeout-sec 0", 1, "--request-timeout-sec must be positive"},
		{"target with url", "--model m --target inproc --base-url http://x", 1, "--target inproc starts its own server: do not give --base-url, --host or --port"},
		{"target with port", "--model m --target sim --port 9", 1, "--target sim starts its own server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"bench"}, strings.Fields(tc.args)...), &stdout, &stderr)
			assert.Equal(t, tc.code, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			if tc.code == 2 {
				assert.True(t, strings.HasPrefix(stderr.String(), "usage: servegate bench"), stderr.String())
				assert.Contains(t, stderr.String(), "servegate bench: error: ")
			}
			assert.Empty(t, stdout.String())
		})
	}
}

// TestSamplingNeedsOpenAIBackend checks vLLM's sampling-parameter rule. No
// generating backend outside openai, vllm and openai-chat is implemented, so
// the check runs on the parsed flags directly.
func TestSamplingNeedsOpenAIBackend(t *testing.T) {
	a := &benchArgs{}
	p := newBenchParser(a)
	require.NoError(t, p.parse(strings.Fields("--model m --backend openai-audio --top-p 0.5")))
	_, err := requestBody(a, false)
	require.EqualError(t, err, "Sampling parameters are only supported by openai-compatible backends.")
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"bench", "sim", "gate", "report"} {
		t.Run(cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 0, run(context.Background(), []string{cmd, "--help"}, &stdout, &stderr))
			assert.Contains(t, stdout.String(), "usage: servegate "+cmd)
		})
	}
	var stdout bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"--help"}, &stdout, &bytes.Buffer{}))
	for _, cmd := range []string{"bench", "sim", "gate", "report"} {
		assert.Contains(t, stdout.String(), "\n  "+cmd+" ")
	}
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), `unknown command "frobnicate"`)
}

func TestBenchHelpListsVLLMFlags(t *testing.T) {
	var stdout bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"bench", "-h"}, &stdout, &bytes.Buffer{}))
	for _, flag := range []string{
		"--backend", "--host", "--port", "--endpoint", "--base-url", "--dataset-name", "--num-prompts",
		"--request-rate", "--burstiness", "--max-concurrency", "--ramp-up-strategy", "--ramp-up-start-rps",
		"--ramp-up-end-rps", "--goodput", "--percentile-metrics", "--metric-percentiles", "--top-p",
		"--top-k", "--min-p", "--temperature", "--extra-body", "--header", "--lora-modules", "--num-warmups",
		"--ready-check-timeout-sec", "--save-result", "--save-detailed", "--append-result", "--result-dir",
		"--result-filename", "--metadata", "--label", "--seed", "--random-input-len", "--sharegpt-output-len",
		"--scenario", "--target", "--report",
	} {
		assert.Contains(t, stdout.String(), "\n  "+flag+" ", flag)
	}
}

// servegate's own word lists are subsets of vLLM's argparse choices (and,
// for backends, servegate's own additions), so a name servegate
// implements is never refused by the parser.
func TestWordListsWithinVLLMChoices(t *testing.T) {
	assert.Subset(t, backendChoices, client.Backends)
	assert.Subset(t, vllmDatasets, dataset.Names)
}
