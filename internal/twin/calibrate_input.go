package twin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

// This file reads the runs a calibration fits: detailed result files of
// runs against a real server, with what the server's metrics said.

// MaxResultBytes is the largest result file calibration reads (a
// detailed run of 100k requests with long outputs is a few hundred MB).
const MaxResultBytes = 1 << 30

// A Run is one detailed result file read for calibration.
type Run struct {
	// Path names the file in every message.
	Path string
	// Records are the run's requests that reached the server, in the
	// file's order (unsent ones left out).
	Records []metrics.Record
	// Duration is the run's duration.
	Duration time.Duration
	// ModelID is the result's model_id.
	ModelID string
	// MaxConcurrency is the run's concurrency limit; 0 = none.
	MaxConcurrency int
	// Target is the kind of target servegate started (the result's
	// "target" metadata: sim, inproc, vllm, url, container); "" when the
	// file does not say (vllm bench serve's own files).
	Target string
	// ServerMetrics is the result's server_metrics object; nil without.
	ServerMetrics map[string]any
	// Series are the raw scrapes of server_metrics_series, by vLLM metric
	// name, with "t" the seconds from the run's start; a scrape without
	// the metric is NaN.
	Series map[string][]float64
	// Config is the result's server_config object: the labels of the
	// server's info metrics by family (vllm:cache_config_info) and the
	// flags servegate started it with (serve_args).
	Config ServerConfig
	// Invalid and Interrupted are the result's flags of a run that says
	// nothing about the server.
	Invalid     string
	Interrupted bool
}

// A ServerConfig is what a result file says about the server's
// configuration (its server_config object).
type ServerConfig struct {
	// Info holds the labels of the server's info metrics, by family name
	// (vllm:cache_config_info, servegate:sim_info).
	Info map[string]map[string]string
	// ServeArgs are the flags servegate started the server with (a vllm
	// target's `vllm serve` flags); nil when servegate did not start it.
	ServeArgs []string
}

// savedRunHeader is the part of a result file beside the records.
type savedRunHeader struct {
	ModelID        string                     `json:"model_id"`
	MaxConcurrency *int                       `json:"max_concurrency"`
	Target         string                     `json:"target"`
	Invalid        *string                    `json:"invalid"`
	Interrupted    bool                       `json:"interrupted"`
	ServerMetrics  map[string]any             `json:"server_metrics"`
	Series         map[string][]*float64      `json:"server_metrics_series"`
	ServerConfig   map[string]json.RawMessage `json:"server_config"`
}

// ReadRunFile reads one detailed result file.
func ReadRunFile(path string) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	if st.Size() > MaxResultBytes {
		return nil, fmt.Errorf("%s: read run: %d bytes, more than the %d a result file may have", path, st.Size(), MaxResultBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	return ReadRun(path, data)
}

// ReadRun reads a detailed result file's content; path names it in
// errors. A file without per-request detail is an error naming the
// missing field.
func ReadRun(path string, data []byte) (*Run, error) {
	recs, dur, err := metrics.RecordsFromResult(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (calibration needs a result saved with --save-detailed)", path, err)
	}
	readable, _ := metrics.ReadablePyJSON(data)
	var h savedRunHeader
	if err := json.NewDecoder(bytes.NewReader(readable)).Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: read run: %w", path, err)
	}
	if !hasKey(readable, "ttfts") || !hasKey(readable, "itls") || !hasKey(readable, "output_lens") {
		return nil, fmt.Errorf("%s: read run: no ttfts, itls or output_lens: not a detailed result of a generation run (calibration needs --save-detailed)", path)
	}
	r := &Run{Path: path, Duration: dur, ModelID: h.ModelID, Target: h.Target, ServerMetrics: h.ServerMetrics, Interrupted: h.Interrupted}
	if h.MaxConcurrency != nil {
		r.MaxConcurrency = *h.MaxConcurrency
	}
	if h.Invalid != nil {
		r.Invalid = *h.Invalid
	}
	for _, rec := range recs {
		if !rec.Unsent {
			r.Records = append(r.Records, rec)
		}
	}
	if len(h.Series) > 0 {
		r.Series = map[string][]float64{}
		for k, col := range h.Series {
			v := make([]float64, len(col))
			for i, x := range col {
				v[i] = math.NaN()
				if x != nil {
					v[i] = *x
				}
			}
			r.Series[k] = v
		}
	}
	if r.Config, err = readServerConfig(h.ServerConfig); err != nil {
		return nil, fmt.Errorf("%s: server_config: %w", path, err)
	}
	return r, nil
}

// hasKey reports whether a JSON object has a top-level key, cheaply: a
// detailed result's arrays make a full decode into maps costly.
func hasKey(data []byte, key string) bool {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return false
	}
	_, ok := probe[key]
	return ok
}

// readServerConfig reads a server_config object: each info family's
// labels as an object of strings, serve_args as a list of strings.
func readServerConfig(raw map[string]json.RawMessage) (ServerConfig, error) {
	var c ServerConfig
	for k, v := range raw {
		if k == "serve_args" {
			if err := json.Unmarshal(v, &c.ServeArgs); err != nil {
				return c, fmt.Errorf("serve_args: want a list of strings: %w", err)
			}
			continue
		}
		var labels map[string]string
		if err := json.Unmarshal(v, &labels); err != nil {
			return c, fmt.Errorf("%s: want an object of label values: %w", k, err)
		}
		if c.Info == nil {
			c.Info = map[string]map[string]string{}
		}
		c.Info[k] = labels
	}
	return c, nil
}

// metric returns a number of the run's server_metrics object.
func (r *Run) metric(name string) (float64, bool) {
	v, ok := r.ServerMetrics[name].(float64)
	return v, ok && !math.IsNaN(v)
}

// simulatorMarks says why a run's target is servegate's simulator (or
// another twin), "" when nothing says so. Each mark alone suffices: the
// simulator's own info metric, a target kind servegate ran the simulator
// as, and the simulator's model names.
func (r *Run) simulatorMarks() string {
	var why []string
	if _, ok := r.Config.Info[SimInfoMetric]; ok {
		why = append(why, "server_config has "+SimInfoMetric+", which only the simulator exports")
	}
	switch r.Target {
	case "sim", "inproc", "virtual": // virtual: a prediction in virtual time
		why = append(why, fmt.Sprintf("target is %q, servegate's simulator", r.Target))
	}
	if strings.HasPrefix(r.ModelID, "servegate/sim") || strings.HasPrefix(r.ModelID, "servegate/twin") {
		why = append(why, fmt.Sprintf("model_id %q is a simulator model", r.ModelID))
	}
	return strings.Join(why, "; ")
}

// SimInfoMetric is the info metric only servegate's simulator exports:
// a run whose server stated it was made against a twin, not a server.
const SimInfoMetric = "servegate:sim_info"

// CacheConfigInfo is vLLM's info metric of its KV-cache configuration.
const CacheConfigInfo = "vllm:cache_config_info"
