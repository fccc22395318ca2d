package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

func TestParseTolerance(t *testing.T) {
	tests := []struct {
		in      string
		want    Tolerance
		wantErr bool
	}{
		{in: "+10%", want: Tolerance{Amount: 0.10, Relative: true, Sign: 1}},
		{in: "-5%", want: Tolerance{Amount: 0.05, Relative: true, Sign: -1}},
		{in: "5 %", want: Tolerance{Amount: 0.05, Relative: true}},
		{in: "0%", want: Tolerance{Relative: true}},
		{in: "+0.01", want: Tolerance{Amount: 0.01, Sign: 1}},
		{in: "", wantErr: true},
		{in: "ten%", wantErr: true},
		{in: "+-5%", wantErr: true},
		{in: "+Inf", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTolerance(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want.Amount, got.Amount, 1e-15)
			assert.Equal(t, tt.want.Relative, got.Relative)
			assert.Equal(t, tt.want.Sign, got.Sign)
		})
	}
	assert.Equal(t, "+10%", Tolerance{Amount: 0.1, Relative: true, Sign: 1}.String())
	assert.Equal(t, "-0.5", Tolerance{Amount: 0.5, Sign: -1}.String())
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy([]byte("alpha: 0.01\nholm: true\ngates:\n  ttft-*-sec: +10%\n  goodput-req/s:\n    tolerance: -5%\n    better: higher\n    optional: true\n"))
	require.NoError(t, err)
	assert.Equal(t, 0.01, p.Alpha)
	assert.Equal(t, 0.95, p.Confidence)
	assert.True(t, p.Holm)
	require.Len(t, p.Rules, 2)
	assert.Equal(t, Rule{Unit: "ttft-*-sec", Tolerance: Tolerance{Amount: 0.1, Relative: true, Sign: 1}}, p.Rules[0])
	assert.Equal(t, Rule{Unit: "goodput-req/s", Tolerance: Tolerance{Amount: 0.05, Relative: true, Sign: -1}, Better: 1, Optional: true}, p.Rules[1])
	r, ok := p.rule("ttft-p50-sec")
	assert.True(t, ok)
	assert.Equal(t, "ttft-*-sec", r.Unit)
	_, ok = p.rule("itl-p50-sec")
	assert.False(t, ok)

	bad := map[string]string{
		"unknown key":     "gates:\n  ttft-p99-sec: 5%\ncolour: blue\n",
		"no gates":        "alpha: 0.05\n",
		"empty gates":     "gates: {}\n",
		"bad tolerance":   "gates:\n  ttft-p99-sec: lots\n",
		"bad better":      "gates:\n  ttft-p99-sec:\n    tolerance: 5%\n    better: sideways\n",
		"alpha too big":   "alpha: 1.5\ngates:\n  ttft-p99-sec: 5%\n",
		"bad pattern":     "gates:\n  \"ttft[\": 5%\n",
		"list not map":    "gates:\n  - ttft-p99-sec\n",
		"not yaml at all": "gates: [\n",
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(doc))
			assert.Error(t, err)
		})
	}
	_, err = ParsePolicy([]byte("gates:\n  ttft-p99-sec: lots\n"))
	assert.EqualError(t, err, `parse policy: line 2: gates: ttft-p99-sec: parse tolerance "lots": want a non-negative amount such as +10%, -5% or +0.01`)
}

func TestDirection(t *testing.T) {
	meta := benchfmt.UnitMetadataMap{
		{Unit: "ttft-p99-sec", Key: "better"}: {UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: "ttft-p99-sec", Key: "better"}, Value: "higher"},
		{Unit: "score", Key: "better"}:        {UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: "score", Key: "better"}, Value: "lower"},
	}
	tests := []struct {
		unit string
		meta benchfmt.UnitMetadataMap
		want int
	}{
		{"ttft-p99-sec", nil, -1},
		{"itl-p50-sec", nil, -1},
		{"e2el-mean-sec", nil, -1},
		{"sec/op", nil, -1},
		{"tok/s", nil, 1},
		{"req/s", nil, 1},
		{"goodput-req/s", nil, 1},
		{"fail-ratio", nil, -1},
		{"B/op", nil, -1},
		{"score", nil, 0},
		{"ttft-p99-sec", meta, 1},
		{"score", meta, -1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Direction(tt.meta, tt.unit), "%s (metadata %v)", tt.unit, tt.meta != nil)
	}
}
