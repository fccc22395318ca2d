// Package shard splits servegate's work across processes that share no
// coordinator: a scenario suite across CI jobs (a GitHub Actions matrix),
// and one arrival schedule across N senders (Kubernetes Indexed Job pods or
// local processes), with Merge joining the senders' detailed results into
// one.
//
// A Spec is written "i/N" with i counting from 1, as Playwright's and
// Jest's --shard do; a Kubernetes pod passes $((JOB_COMPLETION_INDEX+1))/N.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Environment variables that shard a go test run of scenarios.
const (
	// EnvSuite selects the scenarios of one shard of a suite: "i/N".
	// benchtest.RunDir and BenchDir run only the scenarios Spec.OwnsName
	// gives this shard and skip the others.
	EnvSuite = "SERVEGATE_SHARD"
	// EnvLoad splits each scenario's arrival schedule: "i/N". The process
	// sends the requests Spec.OwnsIndex gives it, at the full schedule's
	// times.
	EnvLoad = "SERVEGATE_LOAD_SHARD"
	// EnvStartAt is the wall-clock moment (RFC 3339) every load shard
	// starts its schedule at.
	EnvStartAt = "SERVEGATE_START_AT"
)

// A Spec is one shard of N: Index runs from 1 to Count. The zero Spec is
// no sharding (the whole suite or schedule).
type Spec struct {
	Index, Count int
}

// maxCount bounds N: more shards than this is a typo, not a cluster.
const maxCount = 10000

// Parse reads "i/N" (1 <= i <= N). The empty string is the zero Spec.
func Parse(s string) (Spec, error) {
	if s == "" {
		return Spec{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want i/N, e.g. 1/4 (i counts from 1)", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case err1 != nil || err2 != nil:
		return Spec{}, fmt.Errorf("shard %q: want i/N with whole numbers, e.g. 1/4", s)
	case n < 1 || n > maxCount:
		return Spec{}, fmt.Errorf("shard %q: N must be between 1 and %d", s, maxCount)
	case i < 1 || i > n:
		return Spec{}, fmt.Errorf("shard %q: i must be between 1 and N=%d (i counts from 1)", s, n)
	}
	return Spec{Index: i, Count: n}, nil
}

// String writes the Spec as Parse reads it ("" for the zero Spec).
func (s Spec) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Enabled reports whether the Spec is set (1/1 is set: its output is
// marked as a shard's).
func (s Spec) Enabled() bool { return s.Count > 0 }

// OwnsName reports whether the scenario called name belongs to this shard.
// The assignment hashes the name alone (FNV-1a, modulo N), so a scenario
// stays on its shard when others are added or removed, and the base and
// head revisions of a pull request, run on one shard job, always see the
// same scenario there. The price is balance: with few scenarios a shard
// can get more than its share, or none (see Assign).
func (s Spec) OwnsName(name string) bool {
	if s.Count == 0 {
		return true
	}
	return ShardOf(name, s.Count) == s.Index
}

// ShardOf is the shard (1..n) a scenario name belongs to among n.
func ShardOf(name string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int(h.Sum64()%uint64(n)) + 1
}

// Assign maps each name to its shard among n, for the logs and for
// checking that no shard is empty.
func Assign(names []string, n int) map[int][]string {
	out := map[int][]string{}
	for _, name := range names {
		i := ShardOf(name, n)
		out[i] = append(out[i], name)
	}
	return out
}

// OwnsIndex reports whether request i (0-based, in the full schedule)
// belongs to this shard: i mod N = Index-1. Round robin over the schedule
// gives each shard every N-th arrival, so each shard's load is the full
// load's pattern at 1/N of its rate, and together they send each request
// exactly once.
func (s Spec) OwnsIndex(i int) bool {
	return s.Count == 0 || i%s.Count == s.Index-1
}

// Indices returns the indices of the n-request schedule this shard sends,
// ascending.
func (s Spec) Indices(n int) []int {
	if s.Count == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, n/s.Count+1)
	for i := s.Index - 1; i < n; i += s.Count {
		out = append(out, i)
	}
	return out
}
