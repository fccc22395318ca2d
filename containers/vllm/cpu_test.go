package vllm

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckCPU(t *testing.T) {
	tests := []struct {
		name        string
		cpuinfo     string // file under testdata, or literal text when it has a newline
		need        []string
		wantMissing []string
		wantErr     string // for errors other than *CPUError
	}{
		{name: "avx512 image on avx2 cpu", cpuinfo: "cpuinfo-avx2.txt", need: AVX512Flags,
			wantMissing: []string{"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16"}},
		{name: "avx512 image on avx512 cpu", cpuinfo: "cpuinfo-avx512.txt", need: AVX512Flags},
		{name: "avx2 image on avx2 cpu", cpuinfo: "cpuinfo-avx2.txt", need: AVX2Flags},
		{name: "only vnni missing", cpuinfo: "flags : avx2 avx512f avx512bw avx512vl avx512dq avx512_bf16\n",
			need: AVX512Flags, wantMissing: []string{"avx512_vnni"}},
		{name: "arm features line", cpuinfo: "cpuinfo-arm64.txt", need: []string{"asimd"}},
		{name: "arm lacks avx2", cpuinfo: "cpuinfo-arm64.txt", need: AVX2Flags, wantMissing: []string{"avx2"}},
		{name: "nothing needed", cpuinfo: "garbage\n", need: nil},
		{name: "no flags line", cpuinfo: "processor : 0\n", need: AVX2Flags, wantErr: `no "flags" line`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.cpuinfo
			if !strings.Contains(text, "\n") {
				b, err := os.ReadFile("testdata/" + text)
				require.NoError(t, err)
				text = string(b)
			}
			err := CheckCPU(strings.NewReader(text), "example/image:1", tt.need)
			switch {
			case tt.wantErr != "":
				require.ErrorContains(t, err, tt.wantErr)
				var ce *CPUError
				assert.False(t, errors.As(err, &ce), "a parse error is no *CPUError")
			case len(tt.wantMissing) > 0:
				var ce *CPUError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.wantMissing, ce.Missing)
				assert.Equal(t, "example/image:1", ce.Image)
				msg := err.Error()
				for _, f := range tt.wantMissing {
					assert.Contains(t, msg, f)
				}
				assert.Contains(t, msg, LocalImage, "the message names the alternative image")
				assert.Contains(t, msg, ImageEnv, "the message says how to select it")
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestRequiredFlags(t *testing.T) {
	tests := []struct {
		image, goarch string
		want          []string
	}{
		{DefaultImage, "amd64", AVX512Flags},
		{releaseRepo + ":v0.12.0", "amd64", AVX512Flags},
		{LocalImage, "amd64", AVX2Flags},
		{"my/vllm:arm", "arm64", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, requiredFlags(tt.image, tt.goarch), tt.image)
	}
}

func TestMissingFlagsKeepsOrderOnce(t *testing.T) {
	have := map[string]bool{"b": true}
	assert.Equal(t, []string{"c", "a"}, MissingFlags(have, []string{"c", "b", "a", "c"}))
}
