package vllm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/servegate/servegate/containers/dockertest"
)

// request applies opts the way Run does and returns the resulting request.
func request(t *testing.T, opts ...Option) (options, testcontainers.GenericContainerRequest) {
	t.Helper()
	o := defaultOptions()
	for _, opt := range opts {
		require.NoError(t, opt(&o))
	}
	req := testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{Image: LocalImageAVX2}}
	for _, c := range o.customizers() {
		require.NoError(t, c.Customize(&req))
	}
	return o, req
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want []string
	}{
		{name: "defaults", want: []string{DefaultModel, "--host", "0.0.0.0", "--port", "8000"}},
		{name: "all", opts: []Option{
			WithModel("/models/tiny"), WithServedModelName("tiny"), WithMaxModelLen(2048),
			WithExtraArgs("--load-format", "dummy"), WithExtraArgs("--dtype", "float32"),
		}, want: []string{"/models/tiny", "--host", "0.0.0.0", "--port", "8000",
			"--served-model-name", "tiny", "--max-model-len", "2048",
			"--load-format", "dummy", "--dtype", "float32"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, req := request(t, tt.opts...)
			assert.Equal(t, []string{"vllm", "serve"}, req.Entrypoint)
			assert.Equal(t, tt.want, req.Cmd)
			assert.Equal(t, []string{"8000/tcp"}, req.ExposedPorts)
		})
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("HF_TOKEN", "hf_secret_default")
	t.Setenv("MY_TOKEN", "hf_secret_custom")
	tests := []struct {
		name string
		opts []Option
		want map[string]string
	}{
		{name: "token from HF_TOKEN", want: map[string]string{"HF_TOKEN": "hf_secret_default"}},
		{name: "token from another variable", opts: []Option{WithHFTokenEnv("MY_TOKEN")},
			want: map[string]string{"HF_TOKEN": "hf_secret_custom"}},
		{name: "no token", opts: []Option{WithHFTokenEnv("")}, want: map[string]string{}},
		{name: "cpu settings and extra env", opts: []Option{
			WithHFTokenEnv("UNSET_TOKEN_VARIABLE"), WithKVCacheSpace(2), WithOMPThreadsBind("0-1"),
			WithEnv(map[string]string{"VLLM_LOGGING_LEVEL": "DEBUG"}),
		}, want: map[string]string{"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": "0-1", "VLLM_LOGGING_LEVEL": "DEBUG"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, req := request(t, tt.opts...)
			assert.Equal(t, tt.want, req.Env)
			assert.NotContains(t, strings.Join(req.Cmd, " "), "hf_secret", "the token never goes on the command line")
		})
	}
}

func TestHostConfig(t *testing.T) {
	tests := []struct {
		name       string
		opts       []Option
		wantShm    int64
		wantMounts []mount.Mount
	}{
		{name: "defaults", wantShm: 4 << 30},
		{name: "cache dir and model", opts: []Option{
			WithShmSize(1 << 30), WithHFCacheDir("/var/cache/hf"), WithModelDir("/work/tiny", "/models/tiny"),
		}, wantShm: 1 << 30, wantMounts: []mount.Mount{
			{Type: mount.TypeBind, Source: "/var/cache/hf", Target: "/root/.cache/huggingface"},
			{Type: mount.TypeBind, Source: "/work/tiny", Target: "/models/tiny", ReadOnly: true},
		}},
		{name: "volume replaces dir", opts: []Option{WithHFCacheDir("/x"), WithHFCacheVolume("hf")},
			wantShm: 4 << 30, wantMounts: []mount.Mount{{Type: mount.TypeVolume, Source: "hf", Target: "/root/.cache/huggingface"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, req := request(t, tt.opts...)
			var hc container.HostConfig
			req.HostConfigModifier(&hc)
			assert.Equal(t, tt.wantShm, hc.ShmSize)
			assert.Equal(t, []string{"SYS_NICE"}, hc.CapAdd)
			assert.Equal(t, []string{"seccomp=unconfined"}, hc.SecurityOpt)
			assert.Equal(t, tt.wantMounts, hc.Mounts)
		})
	}
}

func TestHealthWaitUsesStartupTimeout(t *testing.T) {
	for _, tt := range []struct{ set, want time.Duration }{
		{DefaultStartupTimeout, DefaultStartupTimeout},
		{90 * time.Second, 90 * time.Second},
		{0, DefaultStartupTimeout}, // zero keeps the default
	} {
		d := tt.want
		_, req := request(t, WithStartupTimeout(tt.set))
		multi, ok := req.WaitingFor.(*wait.MultiStrategy)
		require.True(t, ok, "deadline wrapper, got %T", req.WaitingFor)
		assert.Equal(t, d, *multi.Timeout(), "default for inner strategies")
		require.Len(t, multi.Strategies, 1)
		http, ok := multi.Strategies[0].(*wait.HTTPStrategy)
		require.True(t, ok, "got %T", multi.Strategies[0])
		assert.Equal(t, "/health", http.Path)
		assert.Equal(t, d, *http.Timeout(), "strategy startup timeout")
	}
}

func TestInvalidOptions(t *testing.T) {
	tests := map[string]Option{
		"with model: empty":           WithModel(""),
		"with max model len: 0":       WithMaxModelLen(0),
		"with kv cache space: -1":     WithKVCacheSpace(-1),
		"with shm size: 0":            WithShmSize(0),
		"with startup timeout: -1s":   WithStartupTimeout(-time.Second),
		"with hf cache dir: empty":    WithHFCacheDir(""),
		"with hf cache volume: empty": WithHFCacheVolume(""),
		"with model dir: empty":       WithModelDir("", "/m"),
	}
	for want, opt := range tests {
		t.Run(want, func(t *testing.T) {
			c, err := Run(context.Background(), LocalImageAVX2, opt)
			assert.Nil(t, c)
			require.ErrorContains(t, err, "run vllm: "+want)
		})
	}
}

// TestRunChecksCPUFirst proves the CPU check stops Run before any container
// starts.
func TestRunChecksCPUFirst(t *testing.T) {
	c, err := Run(context.Background(), DefaultImage, withCPUInfo("testdata/cpuinfo-avx2.txt", "amd64"), withImages(fakeImages{}))
	assert.Nil(t, c)
	var ce *CPUError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, DefaultImage, ce.Image)
	assert.Contains(t, err.Error(), "avx512f")

	_, err = Run(context.Background(), DefaultImage, withCPUInfo("testdata/no-such-file", "amd64"), withImages(fakeImages{}))
	require.ErrorContains(t, err, "vllm cpu check")
	assert.False(t, errors.As(err, &ce))
}

func TestImageFromEnvironment(t *testing.T) {
	t.Setenv(ImageEnv, "")
	assert.Equal(t, DefaultImage, Image())
	t.Setenv(ImageEnv, LocalImageAVX2)
	assert.Equal(t, LocalImageAVX2, Image())
}

func TestTailLinesKeepsLastLines(t *testing.T) {
	got, err := tailLines(strings.NewReader("one\ntwo\nthree\nfour\nfive"), 3)
	require.NoError(t, err)
	assert.Equal(t, "three\nfour\nfive", got)
	got, err = tailLines(strings.NewReader("one\n"), 3)
	require.NoError(t, err)
	assert.Equal(t, "one", got)
}

type logFunc func(format string, args ...any)

func (f logFunc) Logf(format string, args ...any) { f(format, args...) }

// TestRunLabelsOwner checks that Run's container carries the owner labels
// that let it be removed when the test process dies, even when a caller's
// customizer replaces the lifecycle hooks.
func TestRunLabelsOwner(t *testing.T) {
	o := defaultOptions()
	custom := []testcontainers.ContainerCustomizer{testcontainers.WithLifecycleHooks()}
	req := testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{Image: LocalImageAVX2}}
	for _, c := range o.runCustomizers(custom) {
		require.NoError(t, c.Customize(&req))
	}
	for k, v := range dockertest.Self().Labels() {
		require.Equal(t, v, req.Labels[k], k)
	}
	require.NotEmpty(t, req.LifecycleHooks, "the lifetime hooks")
}
