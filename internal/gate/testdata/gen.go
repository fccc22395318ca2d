//go:build ignore

// gen writes the crafted benchfmt inputs of the gate tests. Values are
// drawn from seeded log-normal distributions, so the files never change
// unless this program does. Run from internal/gate: go run testdata/gen.go
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// side describes one input file.
type side struct {
	n       int
	target  string
	ttft    map[string]float64 // scenario -> median TTFT p99, seconds
	sigma   float64            // log-normal sigma of TTFT
	goodput float64            // median goodput, req/s
	goTest  bool               // write plain "go test -bench" output

	failRatio float64 // fail-ratio of a run with successful requests
	noSuccess int     // the last noSuccess runs have no successful request
	noGoodput bool    // no goodput SLO: no goodput-req/s
}

var scenarios = []string{"chat-poisson", "burst"}

func main() {
	base := side{n: 10, target: "sim", ttft: map[string]float64{"chat-poisson": 0.100, "burst": 0.200}, sigma: 0.02, goodput: 9.5}
	with := func(s side, f func(*side)) side {
		s.ttft = map[string]float64{"chat-poisson": s.ttft["chat-poisson"], "burst": s.ttft["burst"]}
		f(&s)
		return s
	}
	cases := []struct {
		name       string
		seed       uint64
		base, head side
	}{
		{"regression", 1, base, with(base, func(s *side) { s.ttft["chat-poisson"] = 0.125 })},
		{"noise", 2, base, base},
		{"improvement", 3, base, with(base, func(s *side) { s.ttft["chat-poisson"] = 0.080; s.goodput = 10.5 })},
		{"within", 4, with(base, func(s *side) { s.sigma = 0.004 }), with(base, func(s *side) { s.sigma = 0.004; s.ttft["chat-poisson"] = 0.103 })},
		{"fewsamples", 5, with(base, func(s *side) { s.n = 3 }), with(base, func(s *side) { s.n = 3; s.ttft["chat-poisson"] = 0.130 })},
		{"foursamples", 6, with(base, func(s *side) { s.n = 4 }), with(base, func(s *side) { s.n = 4; s.ttft["chat-poisson"] = 0.130 })},
		{"mismatched", 7, base, with(base, func(s *side) { delete(s.ttft, "burst") })},
		{"config", 8, base, with(base, func(s *side) { s.target = "vllm" })},
		{"gotest", 9, with(base, func(s *side) { s.goTest = true }), with(base, func(s *side) { s.goTest = true; s.ttft["chat-poisson"] = 0.125 })},
		// Every head request fails, with and without a goodput SLO.
		{"allfailed", 10, base, with(base, func(s *side) { s.noSuccess = s.n })},
		{"allfailed-nogoodput", 11, with(base, func(s *side) { s.noGoodput = true }), with(base, func(s *side) { s.noGoodput = true; s.noSuccess = s.n })},
		// One head run of ten has no successful request.
		{"onefailedrun", 12, base, with(base, func(s *side) { s.noSuccess = 1 })},
		// A fifth of head's requests fail, and the rest answer faster.
		{"failrise", 13, base, with(base, func(s *side) {
			s.failRatio = 0.2
			s.ttft["chat-poisson"], s.ttft["burst"] = 0.080, 0.160
		})},
	}
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(c.seed, 42))
		dir := filepath.Join("testdata", c.name)
		must(os.MkdirAll(dir, 0o755))
		must(os.WriteFile(filepath.Join(dir, "base.txt"), []byte(render(c.base, rng)), 0o644))
		must(os.WriteFile(filepath.Join(dir, "head.txt"), []byte(render(c.head, rng)), 0o644))
	}
}

func render(s side, rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/servegate/servegate/scenarios\n")
	if !s.goTest {
		fmt.Fprintf(&b, "target: %s\nmodel: sim-tiny\n", s.target)
		b.WriteString("Unit ttft-p99-sec better=lower\nUnit goodput-req/s better=higher\nUnit tok/s better=higher\nUnit fail-ratio better=lower\n")
	}
	draw := func(median, sigma float64) float64 { return median * math.Exp(sigma*rng.NormFloat64()) }
	for i := 0; i < s.n; i++ {
		for _, sc := range scenarios {
			ttft, ok := s.ttft[sc]
			if !ok {
				continue
			}
			t := draw(ttft, s.sigma)
			g := draw(s.goodput, 0.01)
			tok := draw(1200, 0.02)
			if i >= s.n-s.noSuccess {
				// servegate reports no latency or throughput then.
				fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s 1 1 fail-ratio\n", sc)
				continue
			}
			if s.noGoodput {
				fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s 1 %.6g ttft-p99-sec %.6g tok/s %g fail-ratio\n", sc, t, tok, s.failRatio)
				continue
			}
			if s.goTest {
				fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s-2 \t       1\t%10d ns/op\t%10.4f fail-ratio\t%10.4f goodput-req/s\t%10.0f tok/s\t%10.4f ttft-p99-sec\n",
					sc, int64(draw(5e9, 0.01)), s.failRatio, g, tok, t)
				continue
			}
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s 1 %.6g ttft-p99-sec %.6g goodput-req/s %.6g tok/s %g fail-ratio\n", sc, t, g, tok, s.failRatio)
		}
	}
	if s.goTest {
		b.WriteString("PASS\nok  \tgithub.com/servegate/servegate/scenarios\t61.2s\n")
	}
	return b.String()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
