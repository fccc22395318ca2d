// Package scenario is servegate's scenario file: the schema, loading with
// file:line errors, the defaults (all in defaults.go), validation, the
// environment overrides CI uses, and the SLOs a run is checked against.
//
// A scenario file is YAML holding one scenario (a mapping) or several (a
// sequence of mappings). docs/scenarios.md describes every key.
package scenario

import "time"

// A Scenario is one benchmark run and the SLOs it must meet.
type Scenario struct {
	// Name identifies the scenario in test names (scenario=<name>) and
	// output files. Letters, digits, '-', '_' and '.' only.
	Name string `yaml:"name"`
	// Description says what the scenario models, for people.
	Description string `yaml:"description"`
	// Target is the server under test.
	Target Target `yaml:"target"`
	// Backend is the request format: openai (completions, the default),
	// vllm, openai-chat, openai-embeddings or vllm-rerank.
	Backend string `yaml:"backend"`
	// Endpoint is the request path; the default follows the backend.
	Endpoint string `yaml:"endpoint"`
	// Dataset says which requests are sent.
	Dataset Dataset `yaml:"dataset"`
	// Load is the arrival process and its limits.
	Load Load `yaml:"load"`
	// Sampling holds the sampling parameters sent with every request.
	Sampling Sampling `yaml:"sampling"`
	// ExtraBody is merged into every request body last, and wins.
	ExtraBody map[string]any `yaml:"extra_body"`
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string `yaml:"headers"`
	// Metrics selects the percentiles the summary computes.
	Metrics Metrics `yaml:"metrics"`
	// SLO is what the run must meet.
	SLO SLO `yaml:"slo"`
	// Harness holds the limits on the load generator's health past which
	// the run is invalid rather than judged.
	Harness Harness `yaml:"harness"`
	// ServerMetrics says how the server's metrics are scraped.
	ServerMetrics ServerMetrics `yaml:"server_metrics"`
	// Capacity, when set, makes the scenario a capacity search instead of
	// one run at load.request_rate.
	Capacity *Capacity `yaml:"capacity"`
	// Sessions, when set, makes the scenario multi-turn: conversations
	// replace the dataset (sessions.go).
	Sessions *Sessions `yaml:"sessions"`

	// File is the file the scenario was loaded from ("" when parsed from
	// bytes with no name).
	File string `yaml:"-"`
	// Line is the line of the file where the scenario starts.
	Line int `yaml:"-"`
	// SHA is the hex SHA-256 of what the scenario measures: its YAML
	// content (re-encoded from its node, so comments, layout and the other
	// scenarios of a list do not change it) without description and
	// slo.bounds, so that editing a bound keeps results comparable.
	// Results carry it as scenario-sha.
	SHA string `yaml:"-"`
	// Workload is the hex SHA-256 of what the scenario sends and asks:
	// SHA's content without the target block. Base and head of a
	// comparison pair a scenario only when their workloads are equal,
	// since the server is what a pull request may change.
	Workload string `yaml:"-"`

	pos positions
	// keys maps each top-level key of the workload to its content's
	// hash, so that WorkloadDiff can name the keys that differ.
	keys map[string]string
}

// Target kinds.
const (
	// TargetSim is the simulator in a container (testcontainers).
	TargetSim = "sim"
	// TargetInproc is the simulator as an httptest server in the test
	// process.
	TargetInproc = "inproc"
	// TargetVLLM is a real vLLM CPU image in a container.
	TargetVLLM = "vllm"
	// TargetURL is an already running server at Target.URL.
	TargetURL = "url"
	// TargetContainer is any OpenAI-compatible server in a container, from
	// Target.Image or built from Target.Build, with Target.Backends (the
	// simulator's replicas) behind it.
	TargetContainer = "container"
)

// TargetKinds lists the target kinds: the one list that validation, the
// environment override, `servegate bench --target` and the docs read.
var TargetKinds = []string{TargetSim, TargetInproc, TargetVLLM, TargetURL, TargetContainer}

// A Target is the server under test.
type Target struct {
	// Kind is sim (default), inproc, vllm or url.
	Kind string `yaml:"kind"`
	// Model is the model id the results name and the server serves. On
	// the vllm target it may be empty (the shipped tiny model, served with
	// random weights), a local model directory, or a model id in the
	// Hugging Face cache; nothing is downloaded.
	Model string `yaml:"model"`
	// ServedModelName, when set, is the model name sent in requests.
	ServedModelName string `yaml:"served_model_name"`
	// Tokenizer is a tokenizer.json path (relative paths are relative to
	// the scenario file), a fixture name ("llama3" or "bert"), or a model id
	// found in the local Hugging Face cache. Default: the model's tokenizer
	// when Model is cached locally, else the Llama-3 fixture.
	Tokenizer string `yaml:"tokenizer"`
	// Image is the container image of sim and vllm targets; empty picks
	// the default (the simulator image built from this repository, or the
	// pinned vLLM CPU image).
	Image string `yaml:"image"`
	// Args are extra server arguments (vllm serve flags, simulator flags).
	Args []string `yaml:"args"`
	// Env is extra server environment.
	Env map[string]string `yaml:"env"`
	// Profile is the simulator's latency profile (sim and inproc): a
	// shipped profile's name, or a YAML file (a path with a '/' or a '.',
	// relative to the scenario file), which a sim target copies into its
	// container.
	Profile string `yaml:"profile"`
	// URL is the base URL of a url target (http://host:port).
	URL string `yaml:"url"`
	// StartTimeout bounds starting the target (container build, model
	// load). Default 10m.
	StartTimeout Duration `yaml:"start_timeout"`
	// GPUs are the GPUs a vllm or container target's container gets:
	// all, a count, or device ids, as docker run --gpus. Docker needs a
	// GPU runtime (the NVIDIA Container Toolkit).
	GPUs GPUs `yaml:"gpus"`

	// Build builds a container target's image from a Dockerfile instead
	// of Image.
	Build *Build `yaml:"build"`
	// Port is the container port a container target listens on. Default
	// 8000.
	Port int `yaml:"port"`
	// Cmd replaces a container target image's command.
	Cmd []string `yaml:"cmd"`
	// Wait says when a container target is ready.
	Wait *Wait `yaml:"wait"`
	// Backends are the servers behind a container target (a router, a
	// gateway): simulator replicas on a network the target joins, whose
	// URLs it gets in SERVEGATE_BACKENDS.
	Backends []Backend `yaml:"backends"`
	// VLLM says how a simulator scenario runs on a real vLLM (kind vllm,
	// or SERVEGATE_TARGET=vllm): its model, image, extra vllm serve args
	// and env. Override applies it; see VLLMTarget.
	VLLM *VLLMTarget `yaml:"vllm"`
}

// A VLLMTarget holds the settings a scenario needs on the vllm target
// beside its own target block. When the target is vllm (from the file or
// an override) Override applies it: Model and Image when set replace the
// target's, Args follow the target's (after the simulator knobs mapped to
// vllm serve flags, so they win), Env is merged over the target's. With
// it, the simulator profile is not used on vLLM (the block says how the
// scenario runs there); without it, a scenario with a profile does not run
// on vLLM (its SLOs are the profile's).
type VLLMTarget struct {
	// Model is the model vLLM serves (default: the tiny model).
	Model string `yaml:"model"`
	// Image is the vLLM image (default: the one built for this CPU).
	Image string `yaml:"image"`
	// Args are extra vllm serve flags.
	Args []string `yaml:"args"`
	// Env is extra container environment.
	Env map[string]string `yaml:"env"`
}

// A Build is a docker build of a container target's image, cached by the
// content hash of its context.
type Build struct {
	// Context is the build context directory, relative to the scenario
	// file.
	Context string `yaml:"context"`
	// Dockerfile is the Dockerfile's path inside Context. Default
	// Dockerfile.
	Dockerfile string `yaml:"dockerfile"`
	// Args are build arguments (ARG).
	Args map[string]string `yaml:"args"`
}

// A Wait says when a container target is ready: a GET of Path answers 2xx.
type Wait struct {
	// Path is the path polled. Default /health.
	Path string `yaml:"path"`
	// Timeout bounds the wait once the container runs. Default 2m.
	Timeout Duration `yaml:"timeout"`
}

// A Backend is a group of identical simulator replicas behind a container
// target, reachable on its network as sim-0, sim-1, ...
type Backend struct {
	// Kind is sim, the only kind so far.
	Kind string `yaml:"kind"`
	// Replicas is how many to start, 1 to 16. Default 1.
	Replicas int `yaml:"replicas"`
	// Profile is the simulator profile: a name or a YAML file, as a sim
	// target's.
	Profile string `yaml:"profile"`
	// Image is the replicas' simulator image. Default: the image built
	// from the servegate sources the test builds with.
	Image string `yaml:"image"`
	// Args are simulator knobs, as a sim target's args (--max_num_seqs=8).
	Args []string `yaml:"args"`
}

// A Dataset says which requests a scenario sends. Which length keys apply
// depends on Name; docs/scenarios.md has the table.
type Dataset struct {
	// Name is the dataset, one of dataset.Names: random (default),
	// random-rerank, sharegpt, custom, prefix_repetition, burstgpt, sonnet,
	// spec_bench or txt-slices.
	Name string `yaml:"name"`
	// Path is the dataset file (relative to the scenario file).
	Path string `yaml:"path"`
	// NumPrompts is the number of requests. Default 1000 (vLLM's).
	NumPrompts int `yaml:"num_prompts"`
	// Seed seeds sampling, shuffling and the arrival process. Default 0.
	Seed int64 `yaml:"seed"`
	// InputLen is the prompt length in tokens (random, sonnet).
	InputLen int `yaml:"input_len"`
	// OutputLen is the output length in tokens (max_tokens); for sharegpt
	// and custom, a fixed output length overriding the file's.
	OutputLen int `yaml:"output_len"`
	// PrefixLen is the shared prefix length in tokens (random, sonnet,
	// prefix_repetition).
	PrefixLen int `yaml:"prefix_len"`
	// SuffixLen is the per-request suffix length (prefix_repetition).
	SuffixLen int `yaml:"suffix_len"`
	// NumPrefixes is the number of distinct prefixes (prefix_repetition).
	NumPrefixes int `yaml:"num_prefixes"`
	// RangeRatio widens lengths to [len·(1-r), len·(1+r)] (random), in
	// [0, 1).
	RangeRatio float64 `yaml:"range_ratio"`
	// SkipChatTemplate sends custom prompts as written.
	SkipChatTemplate bool `yaml:"skip_chat_template"`
	// NoOversample keeps fewer requests than NumPrompts when the file has
	// fewer.
	NoOversample bool `yaml:"no_oversample"`
	// DisableShuffle keeps the file's order.
	DisableShuffle bool `yaml:"disable_shuffle"`
}

// A Load is the arrival process and its limits.
type Load struct {
	// RequestRate is the mean arrival rate in requests/s; inf (the
	// default) sends everything at once.
	RequestRate float64 `yaml:"request_rate"`
	// Burstiness is the gamma shape of the gaps: 1 (default) is Poisson,
	// below 1 burstier, inf constant gaps.
	Burstiness float64 `yaml:"burstiness"`
	// RampUp, when set, moves the rate from start to end over the run
	// instead of a fixed RequestRate.
	RampUp *RampUp `yaml:"ramp_up"`
	// MaxConcurrency limits requests in flight; 0 is unlimited.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Warmups is the number of warm-up requests sent before the run.
	Warmups int `yaml:"warmups"`
	// MaxDuration ends the run (cancelling requests in flight) after this
	// long; 0 is no limit.
	MaxDuration Duration `yaml:"max_duration"`
	// RequestTimeout fails a request that takes longer; 0 is no limit.
	RequestTimeout Duration `yaml:"request_timeout"`
	// ReadyTimeout bounds the wait for the server's first good answer;
	// default 10m, 0s skips the check.
	ReadyTimeout *Duration `yaml:"ready_timeout"`
	// TraceReplay sends each request at the dataset's arrival time instead
	// of the synthetic process (burstgpt, custom with timestamps).
	TraceReplay bool `yaml:"trace_replay"`
	// TraceSpeed scales trace time: 2 replays twice as fast. Default 1.
	TraceSpeed float64 `yaml:"trace_speed"`
	// WarmConnections opens one connection per request that can be in
	// flight at once before the run starts, so that TTFT does not include
	// connection set-up (vllm bench serve opens them as it goes).
	// Default true.
	WarmConnections *bool `yaml:"warm_connections"`
	// MaxLineBytes caps one SSE line the server sends; past it the request
	// fails as line_too_long. 0 (the default) means 1 MiB.
	MaxLineBytes int `yaml:"max_line_bytes"`
}

// A RampUp moves the request rate between two values over the run.
type RampUp struct {
	// Strategy is linear or exponential.
	Strategy string `yaml:"strategy"`
	// StartRPS is the rate at the start, requests/s.
	StartRPS float64 `yaml:"start_rps"`
	// EndRPS is the rate at the end, requests/s.
	EndRPS float64 `yaml:"end_rps"`
}

// Sampling holds the sampling parameters; unset ones are not sent (the
// temperature is sent as 0 when unset, as vLLM's benchmark does).
type Sampling struct {
	// Temperature is the sampling temperature.
	Temperature *float64 `yaml:"temperature"`
	// TopP is nucleus sampling's probability mass, in (0, 1].
	TopP *float64 `yaml:"top_p"`
	// TopK keeps the k most likely tokens; -1 disables.
	TopK *int `yaml:"top_k"`
	// MinP is the minimum probability relative to the top token, in [0, 1].
	MinP *float64 `yaml:"min_p"`
	// RepetitionPenalty, FrequencyPenalty and PresencePenalty are passed
	// through.
	RepetitionPenalty *float64 `yaml:"repetition_penalty"`
	// FrequencyPenalty is passed through.
	FrequencyPenalty *float64 `yaml:"frequency_penalty"`
	// PresencePenalty is passed through.
	PresencePenalty *float64 `yaml:"presence_penalty"`
	// IgnoreEOS asks for exactly max_tokens output tokens.
	IgnoreEOS bool `yaml:"ignore_eos"`
}

// Metrics selects the percentiles the summary computes. Percentiles that
// SLOs name are added on their own.
type Metrics struct {
	// PercentileMetrics are the metrics with percentiles: any of ttft,
	// tpot, itl, e2el. Default ttft, tpot, itl (vLLM's).
	PercentileMetrics []string `yaml:"percentile_metrics"`
	// Percentiles are in [0, 100]. Default 99.
	Percentiles []float64 `yaml:"percentiles"`
}

// A Duration is a time.Duration written as Go writes one ("30s", "2m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
