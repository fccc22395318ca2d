package vllm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// An Option configures the vLLM container beyond the generic testcontainers
// customizers. It implements testcontainers.ContainerCustomizer so it can be
// passed to Run beside them.
type Option func(*options) error

// Customize is a no-op: Run applies Options itself before building the
// request.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// Logger receives container logs when a start fails and, with WithLogger, when
// the test fails. testing.TB satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

// testLogger is what a Logger that is a test (testing.TB) also has: the
// container's log is dumped when the test ends failed. An interface, so
// that this package does not import testing.
type testLogger interface {
	Logger
	Cleanup(func())
	Failed() bool
}

type options struct {
	model           string
	servedModelName string
	maxModelLen     int
	kvCacheSpaceGiB int
	ompThreadsBind  string
	extraArgs       []string
	env             map[string]string
	hfTokenEnv      string // host variable the token is read from
	hfCacheHostDir  string
	hfCacheVolume   string
	modelDirs       map[string]string // host dir -> container path
	hubCacheHostDir string            // host hub cache mounted for an offline model
	files           []testcontainers.ContainerFile
	images          imageStore
	shmSizeBytes    int64
	startupTimeout  time.Duration
	cpuFlags        []string
	cpuFlagsSet     bool
	cpuInfoPath     string
	logger          Logger
	goarch          string // the architecture the CPU check assumes
}

func defaultOptions() options {
	return options{
		model:          DefaultModel,
		hfTokenEnv:     "HF_TOKEN",
		shmSizeBytes:   4 << 30,
		startupTimeout: DefaultStartupTimeout,
		cpuInfoPath:    "/proc/cpuinfo",
		goarch:         runtime.GOARCH,
		env:            map[string]string{},
		modelDirs:      map[string]string{},
		images:         dockerImages{},
	}
}

// WithModel sets the model vLLM serves: a Hugging Face id (downloaded into the
// cache, see WithHFCacheDir) or a path inside the container (see
// WithModelDir). The default is DefaultModel.
func WithModel(model string) Option {
	return func(o *options) error {
		if model == "" {
			return errors.New("with model: empty model")
		}
		o.model = model
		return nil
	}
}

// WithServedModelName sets --served-model-name, the name clients send in the
// "model" field.
func WithServedModelName(name string) Option {
	return func(o *options) error {
		o.servedModelName = name
		return nil
	}
}

// WithMaxModelLen sets --max-model-len in tokens (prompt plus output).
func WithMaxModelLen(tokens int) Option {
	return func(o *options) error {
		if tokens <= 0 {
			return fmt.Errorf("with max model len: %d tokens, want > 0", tokens)
		}
		o.maxModelLen = tokens
		return nil
	}
}

// WithKVCacheSpace sets VLLM_CPU_KVCACHE_SPACE, the KV cache size in GiB.
func WithKVCacheSpace(gib int) Option {
	return func(o *options) error {
		if gib <= 0 {
			return fmt.Errorf("with kv cache space: %d GiB, want > 0", gib)
		}
		o.kvCacheSpaceGiB = gib
		return nil
	}
}

// WithOMPThreadsBind sets VLLM_CPU_OMP_THREADS_BIND: "auto", "all", "nobind"
// or a CPU list such as "0-3".
func WithOMPThreadsBind(bind string) Option {
	return func(o *options) error {
		o.ompThreadsBind = bind
		return nil
	}
}

// WithExtraArgs appends arguments to the vllm serve command line, after the
// ones the module sets.
func WithExtraArgs(args ...string) Option {
	return func(o *options) error {
		o.extraArgs = append(o.extraArgs, args...)
		return nil
	}
}

// WithEnv sets extra environment variables in the container.
func WithEnv(env map[string]string) Option {
	return func(o *options) error {
		for k, v := range env {
			o.env[k] = v
		}
		return nil
	}
}

// WithHFTokenEnv names the host environment variable the Hugging Face token
// is read from (default HF_TOKEN); an empty name passes no token. The token
// goes into the container's HF_TOKEN variable only: it is never on the command
// line and never logged.
func WithHFTokenEnv(name string) Option {
	return func(o *options) error {
		o.hfTokenEnv = name
		return nil
	}
}

// WithHFCacheDir mounts a host directory as the container's Hugging Face cache
// (/root/.cache/huggingface) so a model downloads once across runs.
func WithHFCacheDir(hostDir string) Option {
	return func(o *options) error {
		if hostDir == "" {
			return errors.New("with hf cache dir: empty path")
		}
		o.hfCacheHostDir = hostDir
		o.hfCacheVolume = ""
		return nil
	}
}

// WithHFCacheVolume uses a named Docker volume as the Hugging Face cache.
func WithHFCacheVolume(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("with hf cache volume: empty name")
		}
		o.hfCacheVolume = name
		o.hfCacheHostDir = ""
		return nil
	}
}

// WithModelDir mounts a host directory (a model with config.json and
// tokenizer files) read-only at containerPath; pass containerPath to
// WithModel to serve it.
func WithModelDir(hostDir, containerPath string) Option {
	return func(o *options) error {
		if hostDir == "" || containerPath == "" {
			return errors.New("with model dir: empty path")
		}
		o.modelDirs[hostDir] = containerPath
		return nil
	}
}

// WithShmSize sets the container's /dev/shm size in bytes (default 4 GiB, as
// vLLM's CPU docs recommend).
func WithShmSize(bytes int64) Option {
	return func(o *options) error {
		if bytes <= 0 {
			return fmt.Errorf("with shm size: %d bytes, want > 0", bytes)
		}
		o.shmSizeBytes = bytes
		return nil
	}
}

// WithStartupTimeout sets how long Run waits for /health to answer 200 (both
// the wait strategy's startup timeout and the overall deadline). A CPU model
// load takes minutes; zero keeps the default, DefaultStartupTimeout.
func WithStartupTimeout(d time.Duration) Option {
	return func(o *options) error {
		switch {
		case d < 0:
			return fmt.Errorf("with startup timeout: %v, want >= 0", d)
		case d > 0:
			o.startupTimeout = d
		}
		return nil
	}
}

// WithCPUFlags sets the /proc/cpuinfo flags the image needs, replacing the
// default: the image's LabelCPUFlags label, AVX512Flags for vLLM's release
// images, AVX2Flags otherwise.
func WithCPUFlags(flags ...string) Option {
	return func(o *options) error {
		o.cpuFlags = append([]string(nil), flags...)
		o.cpuFlagsSet = true
		return nil
	}
}

// WithoutCPUCheck skips the CPU flag check (for a Docker daemon on another
// machine).
func WithoutCPUCheck() Option { return WithCPUFlags() }

// WithLogger sends the container's log tail to l when Run fails and, when l is
// a testing.TB, also at the end of a failed test.
func WithLogger(l Logger) Option {
	return func(o *options) error {
		o.logger = l
		return nil
	}
}

// withImages replaces the Docker daemon as the source of image labels
// (tests).
func withImages(s imageStore) Option {
	return func(o *options) error {
		o.images = s
		return nil
	}
}

// withCPUInfo reads CPU flags from path instead of /proc/cpuinfo (tests).
func withCPUInfo(path, goarch string) Option {
	return func(o *options) error {
		o.cpuInfoPath = path
		o.goarch = goarch
		return nil
	}
}

// containerEnv is the environment the container gets. It holds the token, so
// it must never be logged.
func (o *options) containerEnv() map[string]string {
	env := map[string]string{}
	if o.kvCacheSpaceGiB > 0 {
		env["VLLM_CPU_KVCACHE_SPACE"] = strconv.Itoa(o.kvCacheSpaceGiB)
	}
	if o.ompThreadsBind != "" {
		env["VLLM_CPU_OMP_THREADS_BIND"] = o.ompThreadsBind
	}
	for k, v := range o.env {
		env[k] = v
	}
	if o.hfTokenEnv != "" {
		if tok := os.Getenv(o.hfTokenEnv); tok != "" {
			env["HF_TOKEN"] = tok
		}
	}
	return env
}

// args is the vllm serve command line after "vllm serve".
func (o *options) args() []string {
	args := []string{o.model, "--host", "0.0.0.0", "--port", containerPort}
	if o.servedModelName != "" {
		args = append(args, "--served-model-name", o.servedModelName)
	}
	if o.maxModelLen > 0 {
		args = append(args, "--max-model-len", strconv.Itoa(o.maxModelLen))
	}
	return append(args, o.extraArgs...)
}
