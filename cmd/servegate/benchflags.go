package main

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/servegate/servegate/benchtest/scenario"
)

// vllmBackends are vllm bench serve's --backend choices (vLLM v0.13), so
// that argparse accepts and rejects what vLLM's does; servegate implements
// client.Backends of them and says so for the others.
var vllmBackends = []string{
	"vllm", "openai", "openai-chat", "openai-audio", "openai-embeddings",
	"openai-embeddings-chat", "openai-embeddings-clip", "openai-embeddings-vlm2vec",
	"infinity-embeddings", "infinity-embeddings-clip", "vllm-pooling", "vllm-rerank",
}

// servegateBackends are --backend choices servegate adds to vLLM's: its
// own backends (client.Backends), which vllm bench serve lacks.
var servegateBackends = []string{"openai-responses"}

// backendChoices are the --backend choices argparse accepts.
var backendChoices = append(append([]string(nil), vllmBackends...), servegateBackends...)

// vllmDatasets are vllm bench serve's --dataset-name choices (vLLM v0.13);
// servegate implements dataset.Names of them.
var vllmDatasets = []string{
	"sharegpt", "burstgpt", "sonnet", "random", "random-mm", "random-rerank",
	"hf", "custom", "prefix_repetition", "spec_bench", "txt-slices",
}

// benchArgs holds every flag of servegate bench. Pointer fields are
// vLLM's None defaults.
type benchArgs struct {
	// dataset flags (vLLM's add_dataset_parser)
	Seed                      int
	NumPrompts                int
	DatasetName               string
	NoStream                  bool
	DatasetPath               *string
	NoOversample              bool
	SkipChatTemplate          bool
	DisableShuffle            bool
	CustomOutputLen           int
	SpecBenchOutputLen        int
	SpecBenchCategory         *string
	SonnetInputLen            int
	SonnetOutputLen           int
	SonnetPrefixLen           int
	SharegptOutputLen         *int
	BlazeditMinDistance       float64
	BlazeditMaxDistance       float64
	RandomInputLen            int
	RandomOutputLen           int
	RandomRangeRatio          float64
	RandomPrefixLen           int
	RandomBatchSize           int
	NoReranker                bool
	TxtSlicesInputLen         int
	TxtSlicesOutputLen        int
	HFSubset                  *string
	HFSplit                   *string
	HFName                    *string
	HFOutputLen               *int
	PrefixRepetitionPrefixLen int
	PrefixRepetitionSuffixLen int
	PrefixRepetitionNumPrefix int
	PrefixRepetitionOutputLen int
	CommonPrefixLen           *int

	// serving flags (vLLM's add_cli_args)
	Label                *string
	Backend              string
	BaseURL              *string
	Host                 string
	Port                 int
	Endpoint             string
	Header               []string
	MaxConcurrency       *int
	Model                string
	Tokenizer            *string
	TokenizerMode        string
	UseBeamSearch        bool
	Logprobs             *int
	RequestRate          float64
	Burstiness           float64
	TrustRemoteCode      bool
	DisableTqdm          bool
	NumWarmups           int
	Profile              bool
	SaveResult           bool
	SaveDetailed         bool
	AppendResult         bool
	Metadata             []string
	ResultDir            *string
	ResultFilename       *string
	IgnoreEOS            bool
	PercentileMetrics    *string
	MetricPercentiles    string
	Goodput              []string
	RequestIDPrefix      string
	TopP                 *float64
	TopK                 *int
	MinP                 *float64
	Temperature          *float64
	FrequencyPenalty     *float64
	PresencePenalty      *float64
	RepetitionPenalty    *float64
	ServedModelName      *string
	LoRAModules          []string
	RampUpStrategy       *string
	RampUpStartRPS       *int
	RampUpEndRPS         *int
	ReadyCheckTimeoutSec int
	ExtraBody            map[string]any

	// servegate's own flags
	Scenario          *string
	Target            string
	Report            *string
	Progress          bool
	NoPlot            bool
	RequestTimeoutSec float64
	MaxDurationSec    float64
	WarmConnections   bool
	MaxLineBytes      int
	Shard             *string
	StartAt           *string
	// ServerMetricsIntervalSec is the scrape interval of the server's
	// metrics; 0 turns scraping off.
	ServerMetricsIntervalSec float64
}

const (
	groupDataset   = "dataset options"
	groupCustom    = "custom dataset options"
	groupSpecBench = "spec bench dataset options"
	groupSonnet    = "sonnet dataset options"
	groupShareGPT  = "sharegpt dataset options"
	groupBlazedit  = "blazedit dataset options"
	groupRandom    = "random dataset options"
	groupTxtSlices = "txt slices dataset options"
	groupHF        = "hf dataset options"
	groupPrefixRep = "prefix repetition dataset options"
	groupServing   = "serving options"
	groupSampling  = "sampling parameters"
	groupServegate = "servegate options"
)

// newBenchParser returns the parser of servegate bench writing into a.
// Names, defaults and help follow vllm bench serve.
func newBenchParser(a *benchArgs) *argParser {
	p := newArgParser("servegate bench")
	addDatasetFlags(p, a)
	addServingFlags(p, a)
	addSamplingFlags(p, a)
	addServegateFlags(p, a)
	p.required = []string{"model"}
	return p
}

func addDatasetFlags(p *argParser, a *benchArgs) {
	g := groupDataset
	p.intVar(&a.Seed, "seed", 0, g, "Random seed.")
	p.intVar(&a.NumPrompts, "num-prompts", 1000, g, "Number of prompts to process.")
	p.stringVar(&a.DatasetName, "dataset-name", "random", g, "Name of the dataset to benchmark on.").choices = vllmDatasets
	p.boolVar(&a.NoStream, "no-stream", g, "Do not load the dataset in streaming mode.")
	p.optStringVar(&a.DatasetPath, "dataset-path", g, "Path to the sharegpt/sonnet dataset, the HF dataset ID if using HF dataset, or the path to a txt file for the txt-slices dataset.")
	p.boolVar(&a.NoOversample, "no-oversample", g, "Do not oversample if the dataset has fewer samples than num-prompts.")
	p.boolVar(&a.SkipChatTemplate, "skip-chat-template", g, "Skip applying chat template to prompt for datasets that support it.")
	p.boolVar(&a.DisableShuffle, "disable-shuffle", g, "Disable shuffling of dataset samples for deterministic ordering.")

	p.intVar(&a.CustomOutputLen, "custom-output-len", 256, groupCustom, "Number of output tokens per request, used only for custom dataset.")
	p.intVar(&a.SpecBenchOutputLen, "spec-bench-output-len", 256, groupSpecBench, "Num of output tokens per request, used only for spec bench dataset.")
	p.optStringVar(&a.SpecBenchCategory, "spec-bench-category", groupSpecBench, "Category for spec bench dataset. If None, use all categories.")
	p.intVar(&a.SonnetInputLen, "sonnet-input-len", 550, groupSonnet, "Number of input tokens per request, used only for sonnet dataset.")
	p.intVar(&a.SonnetOutputLen, "sonnet-output-len", 150, groupSonnet, "Number of output tokens per request, used only for sonnet dataset.")
	p.intVar(&a.SonnetPrefixLen, "sonnet-prefix-len", 200, groupSonnet, "Number of prefix tokens per request, used only for sonnet dataset.")
	p.optIntVar(&a.SharegptOutputLen, "sharegpt-output-len", groupShareGPT, "Output length for each request. Overrides the output length from the ShareGPT dataset.")
	p.floatVar(&a.BlazeditMinDistance, "blazedit-min-distance", 0, groupBlazedit, "Minimum distance for blazedit dataset. Min: 0, Max: 1.0")
	p.floatVar(&a.BlazeditMaxDistance, "blazedit-max-distance", 1, groupBlazedit, "Maximum distance for blazedit dataset. Min: 0, Max: 1.0")

	g = groupRandom
	p.intVar(&a.RandomInputLen, "random-input-len", 1024, g, "Number of input tokens per request, used for random sampling.")
	p.intVar(&a.RandomOutputLen, "random-output-len", 128, g, "Number of output tokens per request, used for random sampling.")
	p.floatVar(&a.RandomRangeRatio, "random-range-ratio", 0, g, "Range ratio for sampling input/output length, used only for random sampling. Must be in the range [0, 1) to define a symmetric sampling range [length * (1 - range_ratio), length * (1 + range_ratio)].")
	p.intVar(&a.RandomPrefixLen, "random-prefix-len", 0, g, "Number of fixed prefix tokens before the random context in a request.")
	p.intVar(&a.RandomBatchSize, "random-batch-size", 1, g, "Batch size for random sampling. Only used for embeddings benchmark.")
	p.boolVar(&a.NoReranker, "no-reranker", g, "Whether the model supports reranking natively. Only used for reranker benchmark.")

	p.intVar(&a.TxtSlicesInputLen, "txt-slices-input-len", 1024, groupTxtSlices, "Number of input tokens per request, used for txt-slices dataset.")
	p.intVar(&a.TxtSlicesOutputLen, "txt-slices-output-len", 128, groupTxtSlices, "Number of output tokens per request, used for txt-slices dataset.")

	p.optStringVar(&a.HFSubset, "hf-subset", groupHF, "Subset of the HF dataset.")
	p.optStringVar(&a.HFSplit, "hf-split", groupHF, "Split of the HF dataset.")
	p.optStringVar(&a.HFName, "hf-name", groupHF, "Name of the dataset on HuggingFace. Specify this if your dataset-path is a local path.")
	p.optIntVar(&a.HFOutputLen, "hf-output-len", groupHF, "Output length for each request. Overrides the output lengths from the sampled HF dataset.")

	g = groupPrefixRep
	p.intVar(&a.PrefixRepetitionPrefixLen, "prefix-repetition-prefix-len", 256, g, "Number of prefix tokens per request, used only for prefix repetition dataset.")
	p.intVar(&a.PrefixRepetitionSuffixLen, "prefix-repetition-suffix-len", 256, g, "Number of suffix tokens per request, used only for prefix repetition dataset. Total input length is prefix_len + suffix_len.")
	p.intVar(&a.PrefixRepetitionNumPrefix, "prefix-repetition-num-prefixes", 10, g, "Number of prefixes to generate, used only for prefix repetition dataset. Prompts per prefix is num_requests // num_prefixes.")
	p.intVar(&a.PrefixRepetitionOutputLen, "prefix-repetition-output-len", 128, g, "Number of output tokens per request, used only for prefix repetition dataset.")
}

func addServingFlags(p *argParser, a *benchArgs) {
	g := groupServing
	p.optStringVar(&a.Label, "label", g, "The label (prefix) of the benchmark results. If not specified, the value of '--backend' will be used as the label.")
	p.stringVar(&a.Backend, "backend", "openai", g, "The type of backend or endpoint to use for the benchmark.").choices = backendChoices
	p.optStringVar(&a.BaseURL, "base-url", g, "Server or API base url if not using http host and port.")
	p.stringVar(&a.Host, "host", "127.0.0.1", g, "Server host.")
	p.intVar(&a.Port, "port", 8000, g, "Server port.")
	p.stringVar(&a.Endpoint, "endpoint", "/v1/completions", g, "API endpoint.")
	p.listVar(&a.Header, "header", nargsAny, "KEY=VALUE", g, "Key-value pairs (e.g, --header x-additional-info=0.3.3) for headers to be passed with each request.")
	p.optIntVar(&a.MaxConcurrency, "max-concurrency", g, "Maximum number of concurrent requests.")
	p.stringVar(&a.Model, "model", "", g, "Name of the model.")
	p.optStringVar(&a.Tokenizer, "tokenizer", g, "Name or path of the tokenizer (a model id in the Hugging Face cache, a directory or a tokenizer.json), if not using the default tokenizer.")
	p.stringVar(&a.TokenizerMode, "tokenizer-mode", "auto", g, "Tokenizer mode (servegate always uses the fast HF tokenizer).")
	p.boolVar(&a.UseBeamSearch, "use-beam-search", g, "Accepted for compatibility; has no effect.")
	p.optIntVar(&a.Logprobs, "logprobs", g, "Number of logprobs-per-token to compute & return as part of the request.")
	p.floatVar(&a.RequestRate, "request-rate", inf, g, "Number of requests per second. If this is inf, then all the requests are sent at time 0. Otherwise, we use Poisson process or gamma distribution to synthesize the request arrival times.")
	p.floatVar(&a.Burstiness, "burstiness", 1, g, "Burstiness factor of the request generation. Only take effect when request_rate is not inf. 1 follows a Poisson process; lower is burstier, higher more uniform.")
	p.boolVar(&a.TrustRemoteCode, "trust-remote-code", g, "Accepted for compatibility; has no effect.")
	p.boolVar(&a.DisableTqdm, "disable-tqdm", g, "Specify to disable the progress bar.")
	p.intVar(&a.NumWarmups, "num-warmups", 0, g, "Number of warmup requests.")
	p.boolVar(&a.Profile, "profile", g, "Use vLLM Profiling (POST /start_profile and /stop_profile).")
	p.boolVar(&a.SaveResult, "save-result", g, "Specify to save benchmark results to a json file")
	p.boolVar(&a.SaveDetailed, "save-detailed", g, "When saving the results, whether to include per request information such as response, error, ttfs, tpots, etc.")
	p.boolVar(&a.AppendResult, "append-result", g, "Append the benchmark result to the existing json file.")
	p.listVar(&a.Metadata, "metadata", nargsAny, "KEY=VALUE", g, "Key-value pairs (e.g, --metadata version=0.3.3 tp=1) for metadata of this run to be saved in the result JSON file.")
	p.optStringVar(&a.ResultDir, "result-dir", g, "Specify directory to save benchmark json results. If not specified, results are saved in the current directory.")
	p.optStringVar(&a.ResultFilename, "result-filename", g, "Specify the filename to save benchmark json results. If not specified, results will be saved in {label}-{request_rate}qps-{base_model_id}-{current_dt}.json format.")
	p.boolVar(&a.IgnoreEOS, "ignore-eos", g, "Set ignore_eos flag when sending the benchmark request.")
	p.optStringVar(&a.PercentileMetrics, "percentile-metrics", g, `Comma-separated list of selected metrics to report percentiles. Allowed metric names are "ttft", "tpot", "itl", "e2el". If not specified, defaults to "ttft,tpot,itl" for generative models and "e2el" for pooling models.`)
	p.stringVar(&a.MetricPercentiles, "metric-percentiles", "99", g, `Comma-separated list of percentiles for selected metrics. To report 25-th, 50-th, and 75-th percentiles, use "25,50,75".`)
	p.listVar(&a.Goodput, "goodput", nargsMany, "KEY:VALUE", g, `Specify service level objectives for goodput as "KEY:VALUE" pairs, where the key is a metric name, and the value is in milliseconds. Allowed request level metric names are "ttft", "tpot", "e2el".`)
	p.stringVar(&a.RequestIDPrefix, "request-id-prefix", "bench-"+randomHex(4)+"-", g, "Specify the prefix of request id.").def = "bench-<random>-"
	p.optStringVar(&a.ServedModelName, "served-model-name", g, "The model name used in the API. If not specified, the model name will be the same as the --model argument.")
	p.listVar(&a.LoRAModules, "lora-modules", nargsMany, "LORA_MODULES", g, "A subset of LoRA module names passed in when launching the server. For each request, the script chooses a LoRA module at random.")
	p.optStringVar(&a.RampUpStrategy, "ramp-up-strategy", g, "The ramp-up strategy, from --ramp-up-start-rps to --ramp-up-end-rps over the duration of the benchmark.").choices = []string{"linear", "exponential"}
	p.optIntVar(&a.RampUpStartRPS, "ramp-up-start-rps", g, "The starting request rate for ramp-up (RPS). Needs to be specified when --ramp-up-strategy is used.")
	p.optIntVar(&a.RampUpEndRPS, "ramp-up-end-rps", g, "The ending request rate for ramp-up (RPS). Needs to be specified when --ramp-up-strategy is used.")
	p.intVar(&a.ReadyCheckTimeoutSec, "ready-check-timeout-sec", 600, g, "Maximum time to wait for the endpoint to become ready in seconds. If set to 0, the ready check will be skipped.")
	p.jsonVar(&a.ExtraBody, "extra-body", g, `A JSON string representing extra body parameters to include in each request. Example: '{"chat_template_kwargs":{"enable_thinking":false}}'`)
}

func addSamplingFlags(p *argParser, a *benchArgs) {
	g := groupSampling
	p.optFloatVar(&a.TopP, "top-p", g, "Top-p sampling parameter. Only has effect on openai-compatible backends.")
	p.optIntVar(&a.TopK, "top-k", g, "Top-k sampling parameter. Only has effect on openai-compatible backends.")
	p.optFloatVar(&a.MinP, "min-p", g, "Min-p sampling parameter. Only has effect on openai-compatible backends.")
	p.optFloatVar(&a.Temperature, "temperature", g, "Temperature sampling parameter. Only has effect on openai-compatible backends. If not specified, default to greedy decoding (i.e. temperature==0.0).")
	p.optFloatVar(&a.FrequencyPenalty, "frequency-penalty", g, "Frequency penalty sampling parameter. Only has effect on openai-compatible backends.")
	p.optFloatVar(&a.PresencePenalty, "presence-penalty", g, "Presence penalty sampling parameter. Only has effect on openai-compatible backends.")
	p.optFloatVar(&a.RepetitionPenalty, "repetition-penalty", g, "Repetition penalty sampling parameter. Only has effect on openai-compatible backends.")
	p.optIntVar(&a.CommonPrefixLen, "common-prefix-len", g, "Common prefix length shared by all prompts (used by random dataset)")
}

func addServegateFlags(p *argParser, a *benchArgs) {
	g := groupServegate
	p.optStringVar(&a.Scenario, "scenario", g, "Run a scenario file (dataset, arrival pattern, SLOs); command-line flags given explicitly override it.")
	p.stringVar(&a.Target, "target", "url", g, "What to benchmark: url = an existing server at --base-url or --host/--port (as vLLM); inproc = servegate's simulator in this process; sim = the simulator container; vllm = a vLLM CPU container.").choices = scenario.TargetKinds
	p.optStringVar(&a.Report, "report", g, "Write a self-contained HTML report to this file.")
	p.boolVar(&a.Progress, "progress", g, "Show the progress bar even when output is not a terminal.")
	p.boolVar(&a.NoPlot, "no-plot", g, "Do not print the terminal plots of output tokens/s and concurrent requests.")
	p.floatVar(&a.RequestTimeoutSec, "request-timeout-sec", 6*60*60, g, "Timeout of one request in seconds (vLLM's aiohttp session uses 6 hours).")
	p.boolVar(&a.WarmConnections, "warm-connections", g, "Open one connection per request that can be in flight at once (--max-concurrency, else every request; at most 4096) before the run starts, so that TTFT does not include connection set-up. vLLM opens connections as requests go out, which is the default here too; scenarios warm by default.")
	p.intVar(&a.MaxLineBytes, "max-line-bytes", 0, g, "Fail a request whose server sends one SSE line longer than this many bytes (line_too_long) and close its stream; 0 means 1 MiB, at most 1 GiB.")
	p.floatVar(&a.ServerMetricsIntervalSec, "server-metrics-interval-sec", 0, g, "Scrape the server's Prometheus /metrics every this many seconds (and before, at the start and at the end of the run) and add server_metrics to the result; 0 turns scraping off. Default: off for a plain run (as vLLM), a scenario's server_metrics.interval (1 s) with --scenario.")
	p.floatVar(&a.MaxDurationSec, "max-duration-sec", 0, g, "Stop the run after this many seconds (requests in flight end as canceled, unsent ones are left out of the summary); 0 means no limit.")
	p.optStringVar(&a.Shard, "shard", g, "i/N (i from 1): send only every N-th request of the schedule, starting with request i-1, at the full schedule's times; N processes with the same flags send the whole run once. Needs --start-at; merge the results with 'servegate merge'.")
	p.optStringVar(&a.StartAt, "start-at", g, "Start the schedule at this wall-clock time (RFC 3339, e.g. 2026-12-01T20:00:00Z), after the ready check and warm-ups, so that every --shard starts together.")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
