package metrics_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/shard"
)

// TestGoldenMergedShards splits numpy's golden run into four shards the
// way `servegate bench --shard i/4` does (request j on shard j mod 4 + 1),
// each on its own timeline that started a little late, writes each
// shard's detailed result, merges them with shard.Merge and checks the
// merged run against the same numpy numbers and the same result file as
// the unsharded run: the merge adds nothing and averages nothing.
func TestGoldenMergedShards(t *testing.T) {
	recs, dur := metrics.GoldenRecords(t)
	const n = 4
	startAt := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	late := []time.Duration{2 * time.Millisecond, 500 * time.Microsecond, 3 * time.Millisecond, time.Millisecond}
	minLate := 500 * time.Microsecond
	for name, set := range metrics.GoldenExpected(t) {
		t.Run(name, func(t *testing.T) {
			var parts []shard.Part
			for i := 1; i <= n; i++ {
				spec := shard.Spec{Index: i, Count: n}
				shift := late[i-1] - minLate
				var mine []metrics.Record
				for _, j := range spec.Indices(len(recs)) {
					r := recs[j]
					r.Scheduled -= shift
					r.Dispatched -= shift
					r.Start -= shift
					mine = append(mine, r)
				}
				info := metrics.RunInfo{Date: "20251129-180000", Backend: "openai-chat", ModelID: "m", NumPrompts: len(recs),
					RequestRate: 20, Extras: true, Metadata: [][2]string{
						{"shard", spec.String()}, {"shard_requests", "300"},
						{"shard_start", startAt.Add(late[i-1]).Format(time.RFC3339Nano)},
						{"start_at", startAt.Format(time.RFC3339Nano)},
					}}
				if set.Options.Pooling {
					info.Backend = "openai-embeddings"
				}
				data := metrics.Summarize(mine, dur-shift, set.Options).ResultJSON(info, true)
				parts = append(parts, shard.Part{Name: spec.String(), Data: data})
			}
			// Shards come in any order.
			parts[0], parts[3] = parts[3], parts[0]
			m, err := shard.Merge(parts)
			if err != nil {
				t.Fatal(err)
			}
			if m.Duration != dur {
				t.Errorf("merged duration %v, want %v", m.Duration, dur)
			}
			if m.Skew != 2500*time.Microsecond {
				t.Errorf("skew %v, want 2.5ms", m.Skew)
			}
			s, err := m.Summary(set.Options.Goodput)
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range set.Values {
				got, ok := s.Value(key)
				if !ok || !metrics.Close(got, want, 1e-9) {
					t.Errorf("%s = %.17g, numpy %.17g", key, got, want)
				}
			}
			if name != "all" && name != "pooling" {
				return
			}
			// The merged run writes numpy's golden result file, byte for byte.
			info := metrics.RunInfo{
				Date: "20251129-180000", Backend: "openai-chat", ModelID: "meta-llama/Llama-3.2-1B-Instruct",
				TokenizerID: "meta-llama/Llama-3.2-1B-Instruct", NumPrompts: 300,
				Metadata: [][2]string{{"gpu", "none"}, {"run", "golden"}}, RequestRate: 20, Burstiness: 1, MaxConcurrency: 16,
			}
			if name == "pooling" {
				info.Backend = "openai-embeddings"
			}
			got := metrics.Summarize(m.Records, m.Duration, set.Options).ResultJSON(info, true)
			want, err := os.ReadFile(filepath.Join("testdata", "result_"+name+"-detailed.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the merged run's result JSON differs from the golden file")
			}
		})
	}
}
