package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/shard"
)

var inf = math.Inf(1)

// A keyValue is one KEY=VALUE pair, kept in command-line order.
type keyValue struct{ Key, Value string }

// A benchPlan is what the validated flags mean: URLs, parsed pairs, the
// metrics to report and the body every request carries.
type benchPlan struct {
	// APIURL is the URL requests go to; BaseURL the server's root.
	APIURL, BaseURL string
	// Headers are the --header pairs; nil when none.
	Headers map[string]string
	// Metadata are the --metadata pairs in order.
	Metadata []keyValue
	// Goodput maps ttft|tpot|e2el to its SLO in milliseconds.
	Goodput map[string]float64
	// PercentileMetrics and Percentiles select the percentile lines.
	PercentileMetrics []string
	Percentiles       []float64
	// ExtraBody is --extra-body over the sampling parameters (vLLM sends
	// sampling parameters in the body, temperature 0 unless given).
	ExtraBody map[string]any
	// IgnoreEOS is --ignore-eos, forced on for random datasets as vLLM does.
	IgnoreEOS bool
	// Pooling is true for embeddings and rerank backends.
	Pooling bool
	// TokenizerID is --tokenizer, else --model.
	TokenizerID string
	// Shard and StartAt are --shard and --start-at.
	Shard   shard.Spec
	StartAt time.Time
}

// validateBench checks flag combinations the way vllm bench serve does, in
// the same order and with the same messages, plus servegate's own checks.
func validateBench(a *benchArgs, p *argParser) (*benchPlan, error) {
	if a.DatasetName == "random" && a.DatasetPath != nil && (a.Scenario == nil || p.given("dataset-name")) {
		return nil, usagef("Cannot use 'random' dataset with --dataset-path. Please specify the appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'sonnet') for your dataset file: %s", *a.DatasetPath)
	}
	if err := validateRampUp(a, p); err != nil {
		return nil, err
	}
	plan := &benchPlan{TokenizerID: a.Model}
	if a.Tokenizer != nil {
		plan.TokenizerID = *a.Tokenizer
	}
	if a.BaseURL != nil {
		plan.BaseURL = *a.BaseURL
	} else {
		plan.BaseURL = "http://" + net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	}
	plan.APIURL = plan.BaseURL + a.Endpoint

	if a.Header != nil {
		plan.Headers = map[string]string{}
		for _, item := range a.Header {
			k, v, ok := strings.Cut(item, "=")
			if !ok {
				return nil, errors.New("Invalid header format. Please use KEY=VALUE format.")
			}
			plan.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if a.DatasetName == "random-mm" && a.Backend != "openai-chat" {
		return nil, errors.New("Multi-modal content (images) is only supported on 'openai-chat' backend.")
	}
	plan.IgnoreEOS = a.IgnoreEOS || dataset.ForcesIgnoreEOS(a.DatasetName, a.Backend)
	var err error
	if plan.Goodput, err = parseGoodput(a.Goodput); err != nil {
		return nil, err
	}
	plan.Pooling = client.IsPooling(a.Backend)
	if plan.ExtraBody, err = requestBody(a, plan.Pooling); err != nil {
		return nil, err
	}
	for _, item := range a.Metadata {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, errors.New("Invalid metadata format. Please use KEY=VALUE format.")
		}
		plan.Metadata = append(plan.Metadata, keyValue{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	if err := validateServegate(a, p, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

func validateRampUp(a *benchArgs, p *argParser) error {
	if a.RampUpStrategy == nil {
		return nil
	}
	if a.RequestRate != inf {
		return errors.New("When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up parameters. Please remove the --request-rate argument.")
	}
	if a.RampUpStartRPS == nil || a.RampUpEndRPS == nil {
		return errors.New("When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified")
	}
	start, end := *a.RampUpStartRPS, *a.RampUpEndRPS
	if start < 0 || end < 0 {
		return errors.New("Ramp-up start and end RPS must be non-negative")
	}
	if start > end {
		return errors.New("Ramp-up start RPS must be less than end RPS")
	}
	if *a.RampUpStrategy == "exponential" && start == 0 {
		return errors.New("For exponential ramp-up, the start RPS cannot be 0.")
	}
	return nil
}

// parseGoodput parses --goodput KEY:VALUE pairs as vLLM's
// check_goodput_args does.
func parseGoodput(pairs []string) (map[string]float64, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	slos := map[string]float64{}
	var order []string
	for _, pair := range pairs {
		parts := strings.Split(pair, ":")
		var v float64
		var err error
		if len(parts) == 2 {
			v, err = parseFloat(parts[1])
		}
		if len(parts) != 2 || err != nil {
			return nil, errors.New(`Invalid format found for service level objectives. Specify service level objectives for goodput as "KEY:VALUE" pairs, where the key is a metric name, and the value is a number in milliseconds.`)
		}
		if _, ok := slos[parts[0]]; !ok {
			order = append(order, parts[0])
		}
		slos[parts[0]] = v
	}
	for _, name := range order {
		v := slos[name]
		if !slices.Contains([]string{"ttft", "tpot", "e2el"}, name) {
			return nil, fmt.Errorf("Invalid metric name found, %s: %s. The service level objective name should be one of ['ttft', 'tpot', 'e2el']. ", name, metrics.PyFloat(v))
		}
		if v < 0 {
			return nil, fmt.Errorf("Invalid value found, %s: %s. The service level objective value should be non-negative.", name, metrics.PyFloat(v))
		}
	}
	return slos, nil
}

// requestBody merges the sampling parameters under --extra-body.
func requestBody(a *benchArgs, pooling bool) (map[string]any, error) {
	body := map[string]any{}
	if !pooling {
		setF := func(k string, v *float64) {
			if v != nil {
				body[k] = *v
			}
		}
		setF("top_p", a.TopP)
		if a.TopK != nil {
			body["top_k"] = *a.TopK
		}
		setF("min_p", a.MinP)
		setF("temperature", a.Temperature)
		setF("frequency_penalty", a.FrequencyPenalty)
		setF("presence_penalty", a.PresencePenalty)
		setF("repetition_penalty", a.RepetitionPenalty)
		if len(body) > 0 && !client.SendsSampling(a.Backend) {
			return nil, errors.New("Sampling parameters are only supported by openai-compatible backends.")
		}
		if _, ok := body["temperature"]; !ok {
			body["temperature"] = 0.0
		}
	}
	for k, v := range a.ExtraBody {
		body[k] = v
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

// validateServegate checks what vLLM would only notice later (or never):
// metric names, percentiles, and servegate's own flags.
func validateServegate(a *benchArgs, p *argParser, plan *benchPlan) error {
	var err error
	if plan.PercentileMetrics, plan.Percentiles, err = parsePercentileFlags(a.PercentileMetrics, a.MetricPercentiles, plan.Pooling); err != nil {
		return err
	}
	if !slices.Contains(dataset.Names, a.DatasetName) {
		return fmt.Errorf("--dataset-name %s: not implemented in servegate (supported: %s)", a.DatasetName, strings.Join(dataset.Names, ", "))
	}
	if !slices.Contains(client.Backends, a.Backend) {
		return fmt.Errorf("--backend %s: not implemented in servegate (supported: %s)", a.Backend, strings.Join(client.Backends, ", "))
	}
	if a.NumPrompts < 1 && a.DatasetName != "custom" && a.DatasetName != "spec_bench" {
		return fmt.Errorf("--num-prompts must be at least 1, got %d", a.NumPrompts)
	}
	if a.MaxConcurrency != nil && *a.MaxConcurrency < 1 {
		return fmt.Errorf("--max-concurrency must be at least 1, got %d", *a.MaxConcurrency)
	}
	if a.RequestRate <= 0 || math.IsNaN(a.RequestRate) {
		return fmt.Errorf("--request-rate must be positive (inf sends every request at once), got %s", metrics.PyFloat(a.RequestRate))
	}
	if a.Burstiness <= 0 || math.IsNaN(a.Burstiness) {
		return fmt.Errorf("--burstiness must be positive, got %s", metrics.PyFloat(a.Burstiness))
	}
	if a.NumWarmups < 0 {
		return fmt.Errorf("--num-warmups must not be negative, got %d", a.NumWarmups)
	}
	if a.MaxDurationSec < 0 || math.IsNaN(a.MaxDurationSec) {
		return fmt.Errorf("--max-duration-sec must not be negative, got %s", metrics.PyFloat(a.MaxDurationSec))
	}
	if iv := a.ServerMetricsIntervalSec; math.IsNaN(iv) || iv < 0 || (iv > 0 && iv < 0.01) || math.IsInf(iv, 0) {
		return fmt.Errorf("--server-metrics-interval-sec must be 0 (off) or at least 0.01, got %s", metrics.PyFloat(iv))
	}
	if a.RequestTimeoutSec <= 0 {
		return fmt.Errorf("--request-timeout-sec must be positive, got %s", metrics.PyFloat(a.RequestTimeoutSec))
	}
	if err := checkFlagLimits(a); err != nil {
		return err
	}
	if a.Target != "url" && (a.BaseURL != nil || p.given("host") || p.given("port")) {
		return fmt.Errorf("--target %s starts its own server: do not give --base-url, --host or --port", a.Target)
	}
	return validateShard(a, p, plan)
}

// validateShard reads --shard and --start-at. The shards of a plain run
// share a request id prefix made from the start time unless
// --request-id-prefix is given (the default is random per process), so
// that the merged run's ids are one run's.
func validateShard(a *benchArgs, p *argParser, plan *benchPlan) error {
	var err error
	if a.Shard != nil {
		if plan.Shard, err = shard.Parse(*a.Shard); err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
	}
	if a.StartAt != nil {
		if plan.StartAt, err = pipeline.ParseStartAt(*a.StartAt); err != nil {
			return fmt.Errorf("--start-at: %w", err)
		}
	}
	if plan.Shard.Enabled() && plan.StartAt.IsZero() {
		return fmt.Errorf("--shard %s needs --start-at: every shard must start at the same moment", plan.Shard)
	}
	if plan.Shard.Enabled() && !(a.SaveResult && a.SaveDetailed) {
		return fmt.Errorf("--shard %s needs --save-result --save-detailed: servegate merge reads each shard's per-request detail", plan.Shard)
	}
	if plan.Shard.Enabled() && !p.given("request-id-prefix") {
		a.RequestIDPrefix = fmt.Sprintf("bench-%x-", plan.StartAt.Unix())
	}
	return nil
}

// parsePercentileFlags reads --percentile-metrics (nil means vLLM's
// default for the task) and --metric-percentiles.
func parsePercentileFlags(metricsFlag *string, percentilesFlag string, pooling bool) ([]string, []float64, error) {
	list := "ttft,tpot,itl"
	if pooling {
		list = "e2el"
	}
	if metricsFlag != nil {
		list = *metricsFlag
	}
	var names []string
	for _, m := range strings.Split(list, ",") {
		if !slices.Contains([]string{"ttft", "tpot", "itl", "e2el"}, m) {
			return nil, nil, fmt.Errorf(`--percentile-metrics: unknown metric %q; allowed metric names are "ttft", "tpot", "itl", "e2el"`, m)
		}
		names = append(names, m)
	}
	var ps []float64
	for _, s := range strings.Split(percentilesFlag, ",") {
		v, err := parseFloat(s)
		if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
			return nil, nil, fmt.Errorf("--metric-percentiles: %q is not a percentile between 0 and 100", s)
		}
		ps = append(ps, v)
	}
	return names, ps, nil
}
