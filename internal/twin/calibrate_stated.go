package twin

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/stats"
)

// This file takes the values a server states about itself (or the user
// gives) rather than fitting them: the batch limits, the block size and
// the KV-cache size. What nothing states is inferred from the runs where
// they show it, or chosen and reported as not pinned down.

// Given are the configuration values the user states for the server (the
// calibrate command's flags); 0 = not given.
type Given struct {
	MaxModelLen         int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
	NumKVBlocks         int
}

// A Setting is one configuration value of the profile and where it came
// from.
type Setting struct {
	// Key is the profile key (max_num_seqs).
	Key string
	// Value is the value written.
	Value string
	// Source says where it came from: "flag --max-num-seqs",
	// "vllm:cache_config_info of a.json", "serve_args of a.json",
	// "observed in a.json", or "not pinned down".
	Source string
	// Pinned is false when nothing stated the value and the runs did not
	// show it; Note then says what was chosen and why.
	Pinned bool
	// Note explains an inferred or chosen value.
	Note string
}

// settings fills p's configuration from what is given or stated, or
// inferred from the runs; it reports each value's source. A value two
// runs state differently is an error naming both files.
func settings(runs []*Run, g Given, p *sim.Params) ([]Setting, error) {
	var out []Setting
	type source struct {
		v    int
		from string
	}
	// stated collects each run's statement of a key.
	stated := func(key, flag string) ([]source, error) {
		var all []source
		for _, r := range runs {
			v, from, ok, err := r.stated(key, flag)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Path, err)
			}
			if ok {
				all = append(all, source{v, from + " of " + r.Path})
			}
		}
		for _, s := range all[min(1, len(all)):] {
			if s.v != all[0].v {
				return nil, fmt.Errorf("%s says %s is %d, %s says %d: the runs are of differently configured servers", all[0].from, key, all[0].v, s.from, s.v)
			}
		}
		return all, nil
	}
	for _, k := range []struct {
		key, flag string
		given     int
		dst       *int
		infer     func() (int, bool, string)
	}{
		{"block_size", "--block-size", g.BlockSize, &p.BlockSize, func() (int, bool, string) {
			return 16, false, "16, vLLM's default block size"
		}},
		{"num_kv_blocks", "--num-gpu-blocks-override", g.NumKVBlocks, &p.NumKVBlocks, nil},
		{"max_num_seqs", "--max-num-seqs", g.MaxNumSeqs, &p.MaxNumSeqs, func() (int, bool, string) { return inferMaxNumSeqs(runs) }},
		{"max_num_batched_tokens", "--max-num-batched-tokens", g.MaxNumBatchedTokens, &p.MaxNumBatchedTokens, nil},
		{"max_model_len", "--max-model-len", g.MaxModelLen, &p.MaxModelLen, nil},
	} {
		flagName := "--" + strings.ReplaceAll(k.key, "_", "-")
		if k.given > 0 {
			*k.dst = k.given
			out = append(out, Setting{Key: k.key, Value: strconv.Itoa(k.given), Source: "flag " + flagName, Pinned: true})
			continue
		}
		all, err := stated(k.key, k.flag)
		if err != nil {
			return nil, err
		}
		if len(all) > 0 {
			*k.dst = all[0].v
			out = append(out, Setting{Key: k.key, Value: strconv.Itoa(all[0].v), Source: all[0].from, Pinned: true})
			continue
		}
		out = append(out, Setting{Key: k.key, Source: "not pinned down"})
		s := &out[len(out)-1]
		if k.infer != nil {
			v, pinned, note := k.infer()
			*k.dst, s.Pinned, s.Note = v, pinned, note
			if pinned {
				s.Source = "observed"
			}
		}
	}
	// The rest depend on the values above.
	longest := longestRequest(runs)
	for _, key := range []string{"max_model_len", "num_kv_blocks", "max_num_batched_tokens"} {
		i := slices.IndexFunc(out, func(s Setting) bool { return s.Key == key })
		s := &out[i]
		if s.Value != "" || s.Note != "" {
			continue
		}
		switch s.Key {
		case "max_model_len":
			p.MaxModelLen = max(2048, ceilPow2(longest))
			s.Note = fmt.Sprintf("%d: the longest request (%d tokens) rounded up to a power of two, at least 2048; give --max-model-len", p.MaxModelLen, longest)
		case "num_kv_blocks":
			v, pinned, note := inferKVBlocks(runs, p.BlockSize, p.MaxModelLen)
			p.NumKVBlocks, s.Pinned, s.Note = v, pinned, note
			if pinned {
				s.Source = "observed"
			}
		case "max_num_batched_tokens":
			p.MaxNumBatchedTokens = max(8192, p.MaxModelLen, p.MaxNumSeqs)
			s.Note = fmt.Sprintf("%d: no chunked prefill for any prompt of the runs; give --max-num-batched-tokens when prompts can pass the server's budget", p.MaxNumBatchedTokens)
		}
	}
	for i := range out {
		if out[i].Value == "" {
			out[i].Value = strconv.Itoa(intKnob(p, out[i].Key))
		}
	}
	if v, from, ok := prefixCaching(runs); ok {
		p.EnablePrefixCaching = v
		out = append(out, Setting{Key: "enable_prefix_caching", Value: strconv.FormatBool(v), Source: from, Pinned: true})
	} else {
		out = append(out, Setting{Key: "enable_prefix_caching", Value: strconv.FormatBool(p.EnablePrefixCaching), Source: "not pinned down",
			Note: "the runs' prompts share no prefix, so it made no difference to them"})
	}
	return out, nil
}

// intKnob reads an integer knob of p by key.
func intKnob(p *sim.Params, key string) int {
	s, _ := p.Get(key)
	n, _ := strconv.Atoi(s)
	return n
}

// stated returns what the run's server stated about key: its cache
// config info metric (block_size, num_kv_blocks) or the flags servegate
// started it with.
func (r *Run) stated(key, flag string) (int, string, bool, error) {
	label := map[string]string{"block_size": "block_size", "num_kv_blocks": "num_gpu_blocks"}[key]
	if cc, ok := r.Config.Info[CacheConfigInfo]; ok && label != "" {
		if s, ok := cc[label]; ok && s != "None" && s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return 0, "", false, fmt.Errorf("server_config %s label %s: want a positive integer, got %q", CacheConfigInfo, label, s)
			}
			return n, CacheConfigInfo, true, nil
		}
	}
	if v, ok, err := flagValue(r.Config.ServeArgs, flag); ok || err != nil {
		if err != nil {
			return 0, "", false, fmt.Errorf("server_config serve_args %s: %w", flag, err)
		}
		return v, "serve_args " + flag, true, nil
	}
	return 0, "", false, nil
}

// flagValue finds an integer flag (--flag N or --flag=N) in args.
func flagValue(args []string, flag string) (int, bool, error) {
	for i, a := range args {
		var s string
		switch {
		case a == flag && i+1 < len(args):
			s = args[i+1]
		case strings.HasPrefix(a, flag+"="):
			s = strings.TrimPrefix(a, flag+"=")
		default:
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return 0, true, fmt.Errorf("want a positive integer, got %q", s)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// prefixCaching returns whether the runs' server stated prefix caching on.
func prefixCaching(runs []*Run) (bool, string, bool) {
	for _, r := range runs {
		if cc, ok := r.Config.Info[CacheConfigInfo]; ok {
			switch cc["enable_prefix_caching"] {
			case "True", "true":
				return true, CacheConfigInfo + " of " + r.Path, true
			case "False", "false":
				return false, CacheConfigInfo + " of " + r.Path, true
			}
		}
	}
	return false, "", false
}

// inferMaxNumSeqs reads the batch limit off the server's scrapes: while
// requests waited, the running ones were the limit (or the KV cache was
// full; the note says which could not be told apart). Without a scrape
// that shows requests waiting, the limit is at least the most that ran
// at once and is not pinned down.
func inferMaxNumSeqs(runs []*Run) (int, bool, string) {
	var queued []int // running, at scrapes where requests waited
	peak, inFlight := 0, 0
	for _, r := range runs {
		run, wait := r.Series["vllm:num_requests_running"], r.Series["vllm:num_requests_waiting"]
		for i := range run {
			if math.IsNaN(run[i]) {
				continue
			}
			peak = max(peak, int(run[i]))
			if i < len(wait) && wait[i] >= 1 && run[i] >= 1 {
				queued = append(queued, int(run[i]))
			}
		}
		if v, ok := r.metric("num_requests_running_peak"); ok {
			peak = max(peak, int(v))
		}
		inFlight = max(inFlight, maxInFlight(r.Records))
	}
	if peak == 0 { // no server metrics: the client's count, waiting included
		peak = max(inFlight, 1)
		return peak, false, fmt.Sprintf("%d: the most requests the runs had in flight (the server's metrics say nothing); the limit is not known; give --max-num-seqs", peak)
	}
	// A request that just arrived waits until the next step whatever the
	// limit: only a plateau (two scrapes or more with requests waiting at
	// the most that ever ran) shows the limit.
	plateau := 0
	for _, q := range queued {
		if q == peak {
			plateau++
		}
	}
	if plateau >= 2 {
		return peak, true, fmt.Sprintf("%d: at %d scrapes requests waited while %d ran, the most that ever ran (vllm:num_requests_waiting > 0); a full KV cache would look the same, so give --max-num-seqs if it was set", peak, plateau, peak)
	}
	if len(queued) == 0 { // no scrape saw a request wait: all in flight ran
		n := max(peak, inFlight)
		return n, false, fmt.Sprintf("%d: the most requests the runs had in flight; no scrape saw one wait, so the limit is only known to be at least that; give --max-num-seqs", n)
	}
	return peak, false, fmt.Sprintf("%d: the most requests the server ran at once; requests waited now and then but never at that level for two scrapes, so the limit is not pinned down; give --max-num-seqs", peak)
}

// inferKVBlocks estimates the KV cache's size from its use: at each
// scrape the blocks the requests in flight held (prompt plus tokens so
// far, in blocks) over the fraction in use. Without scrapes of a busy
// cache it is not pinned down.
func inferKVBlocks(runs []*Run, blockSize, maxModelLen int) (int, bool, string) {
	var est []float64
	for _, r := range runs {
		t, use := r.Series["t"], r.Series["vllm:kv_cache_usage_perc"]
		for i := range min(len(t), len(use)) {
			if math.IsNaN(t[i]) || !(use[i] >= 0.05) {
				continue
			}
			if b := blocksHeld(r, t[i], blockSize); b > 0 {
				est = append(est, float64(b)/use[i])
			}
		}
	}
	enough := max(1, (maxModelLen+blockSize-1)/blockSize)
	if len(est) < 3 {
		n := max(enough, 1<<16)
		return min(n, 1048576), false, fmt.Sprintf("%d: no scrape saw the KV cache more than 5%% used; a cache this large never preempts; give --num-gpu-blocks-override's value if the server preempted", min(n, 1048576))
	}
	n := max(enough, int(math.Round(stats.Median(est))))
	return min(n, 1048576), true, fmt.Sprintf("%d: blocks held by the requests in flight over vllm:kv_cache_usage_perc, the median of %d scrapes", n, len(est))
}

// blocksHeld counts the KV blocks the run's requests in flight at t
// (seconds from the start) held: prompt plus the tokens streamed so far.
func blocksHeld(r *Run, t float64, blockSize int) int {
	blocks := 0
	for _, rec := range r.Records {
		start, end := rec.Start.Seconds(), (rec.Start + rec.Latency).Seconds()
		if t < start || t > end {
			continue
		}
		tokens := promptLen(rec)
		at := start + rec.TTFT.Seconds()
		if t >= at {
			tokens++
			for _, g := range rec.ITL {
				at += g.Seconds()
				if at > t {
					break
				}
				tokens++
			}
		}
		blocks += (tokens + blockSize - 1) / blockSize
	}
	return blocks
}

// longestRequest is the longest prompt plus output of the runs, tokens.
func longestRequest(runs []*Run) int {
	n := 0
	for _, r := range runs {
		for _, rec := range r.Records {
			n = max(n, promptLen(rec)+rec.OutputTokens)
		}
	}
	return n
}

func ceilPow2(n int) int {
	p := 1
	for p < n && p < 1<<20 {
		p <<= 1
	}
	return p
}

// maxInFlight is the most requests in flight at once.
func maxInFlight(recs []metricsRecord) int {
	type ev struct {
		t   float64
		add int
	}
	evs := make([]ev, 0, 2*len(recs))
	for _, r := range recs {
		evs = append(evs, ev{r.Start.Seconds(), 1}, ev{(r.Start + r.Latency).Seconds(), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.add - b.add // ends before starts at the same instant
	})
	n, peak := 0, 0
	for _, e := range evs {
		n += e.add
		peak = max(peak, n)
	}
	return peak
}
