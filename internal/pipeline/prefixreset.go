package pipeline

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
)

// ResetPath is the route that empties a server's prefix cache: vLLM's
// development route (served with VLLM_SERVER_DEV_MODE=1) and the
// simulator's.
const ResetPath = "/reset_prefix_cache"

// A PrefixCacheReset says whether a run began on an empty prefix cache.
type PrefixCacheReset struct {
	// Done is true when the server emptied its prefix cache.
	Done bool
	// Note says why it did not: the server offers no reset, or refused.
	Note string
	// Offered is false when the server has no reset route at all.
	Offered bool
}

// resetTimeout bounds the reset request: vLLM answers it at once.
const resetTimeout = 30 * time.Second

// resetPrefixCache asks tgt to empty its prefix cache before a run, so
// that no earlier run's prompts are cached. A server without the route
// runs as it is, and the run's record says so.
func resetPrefixCache(ctx context.Context, tgt *Target, headers map[string]string) *PrefixCacheReset {
	ctx, cancel := context.WithTimeout(ctx, resetTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(tgt.BaseURL, "/")+ResetPath, nil)
	if err != nil {
		return &PrefixCacheReset{Note: err.Error()}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &PrefixCacheReset{Offered: true, Note: fmt.Sprintf("POST %s: %v", ResetPath, err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusOK:
		return &PrefixCacheReset{Done: true, Offered: true}
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		note := fmt.Sprintf("the server has no POST %s (status %d)", ResetPath, resp.StatusCode)
		if tgt.Kind == scenario.TargetVLLM || tgt.Kind == scenario.TargetURL {
			note += "; vLLM serves it with VLLM_SERVER_DEV_MODE=1"
		}
		return &PrefixCacheReset{Note: note}
	}
	return &PrefixCacheReset{Offered: true, Note: fmt.Sprintf("POST %s: status %d: %s", ResetPath, resp.StatusCode, strings.TrimSpace(string(body)))}
}

// prefixCacheKey is the benchfmt configuration key of the reset.
const prefixCacheKey = "prefix-cache"

// benchConfig is the reset's benchfmt configuration entry.
func (r *PrefixCacheReset) benchConfig() report.BenchConfig {
	if r.Done {
		return report.BenchConfig{Key: prefixCacheKey, Value: "reset"}
	}
	return report.BenchConfig{Key: prefixCacheKey, Value: "not reset"}
}

// field is the reset's result JSON object.
func (r *PrefixCacheReset) field() metrics.Field {
	obj := []metrics.Field{{Key: "reset", Value: r.Done}}
	if r.Note != "" {
		obj = append(obj, metrics.Field{Key: "note", Value: r.Note})
	}
	return metrics.Field{Key: "prefix_cache", Value: obj}
}

// warning is the run's warning when a server that offers a reset did
// not reset: the run may have found earlier runs' prompts cached.
func (r *PrefixCacheReset) warning() error {
	if r == nil || r.Done || !r.Offered {
		return nil
	}
	return fmt.Errorf("%w: not reset before the run (%s); earlier runs' prompts may be cached", ErrPrefixCacheWarm, r.Note)
}
