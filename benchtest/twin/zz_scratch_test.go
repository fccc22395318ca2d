package twin

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/servegate/servegate/containers/simulator/sim"
)

func TestZZLoss(t *testing.T) {
	files := strings.Fields(os.Getenv("ZZ_FILES"))
	if len(files) == 0 {
		t.Skip()
	}
	var runs []*Run
	for _, f := range files {
		r, err := ReadRunFile(f)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	p := knownServer()
	p.MaxModelLen, p.MaxNumSeqs, p.MaxNumBatchedTokens, p.BlockSize, p.NumKVBlocks = 8192, 128, 2048, 128, 8192
	p.Model = "tiny-llama"
	for _, set := range [][]float64{{10.81, 63.46, 1043, 170.4, 7.058}, {12, 25, 1000, 100, 20}, {12, 30, 1000, 100, 30}} {
		for _, jit := range []float64{0, 0.14} {
			f := &fitter{base: p, replay: nil}
			f.base.Jitter = jit
			for i, r := range runs {
				f.runs = append(f.runs, prepare(r, i))
			}
			if f.replay == nil {
				f.replay = sim.Replay
			}
			x := make([]float64, len(set))
			for i := range set {
				x[i] = math.Log(set[i])
			}
			tot := 0.0
			var parts []float64
			for i := range f.runs {
				l, figs, _, err := f.runLoss(context.Background(), &f.runs[i], f.params(x))
				if err != nil {
					t.Fatal(err)
				}
				tot += l
				parts = append(parts, l)
				t.Logf("  run %d figs %+v meas %+v", i, figs, f.runs[i].figs)
			}
			t.Logf("set %v jitter %v: loss %.3f parts %.3f", set, jit, tot, parts)
		}
	}
}
