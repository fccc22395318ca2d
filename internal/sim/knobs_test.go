package sim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestProfilesLoadAndValidate(t *testing.T) {
	require.Subset(t, Profiles(), []string{"cpu-small", "cpu-vllm-tiny", "gpu-8b", "instant"})
	for _, name := range Profiles() {
		p, err := LoadProfile(name)
		require.NoError(t, err, name)
		require.NoError(t, p.Validate(), name)
	}
	p, err := LoadProfile("gpu-8b")
	require.NoError(t, err)
	require.Equal(t, 256, p.MaxNumSeqs)
	// The twin of real vLLM on CPU keeps what that server states.
	p, err = LoadProfile("cpu-vllm-tiny")
	require.NoError(t, err)
	require.Equal(t, 128, p.BlockSize)
	require.Equal(t, 2048, p.MaxNumBatchedTokens)
	require.Equal(t, "tiny-llama", p.Model)
}

// TestProfilesDocumented: every shipped profile is named where users look
// for the list, the scenario reference and the simulator's README.
func TestProfilesDocumented(t *testing.T) {
	for _, doc := range []string{"../../docs/scenarios.md", "../../containers/simulator/README.md"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, name := range Profiles() {
			require.Contains(t, string(b), "`"+name+"`", "%s does not name the shipped profile %s", doc, name)
		}
	}
}

// TestPrecedence: flags > environment > YAML profile > defaults, knob by knob.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(yml, []byte("max_num_seqs: 3\nstep_fixed_ms: 7\nseq_us: 11\n"), 0o644))
	env := []string{
		"SERVEGATE_SIM_STEP_FIXED_MS=8", // env beats YAML
		"SERVEGATE_SIM_SEQ_US=12",       // env beats YAML, loses to the flag
		"SERVEGATE_SIM_SLOWDOWN=1.5",    // env beats the default
		"UNRELATED=1",
	}
	p, opts, err := ParseArgs([]string{"--profile", yml, "--seq-us", "13", "--port", "9"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 3, p.MaxNumSeqs, "YAML beats the default")
	require.Equal(t, 8.0, p.StepFixedMS)
	require.Equal(t, 13.0, p.SeqUS)
	require.Equal(t, 1.5, p.Slowdown)
	require.Equal(t, DefaultParams().PrefillTokenUS, p.PrefillTokenUS, "default when nobody sets it")
	require.Equal(t, "0.0.0.0:9", opts.Addr)

	p, _, err = ParseArgs(nil, []string{"SERVEGATE_SIM_PROFILE=gpu-8b", "SERVEGATE_SIM_SLOWDOWN=1.1"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 256, p.MaxNumSeqs)
	require.Equal(t, 1.1, p.Slowdown)
}

// TestKnobErrors: every mistake gets one clear message naming the culprit.
func TestKnobErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown yaml key", []string{"--profile", write("a.yaml", "max_num_seqs: 4\nmax_num_seq: 5\n")}, nil, "line 2: field max_num_seq not found"},
		{"bad yaml value", []string{"--profile", write("b.yaml", "slowdown: fast\n")}, nil, "b.yaml"},
		{"unknown profile", []string{"--profile", "h100"}, nil, `unknown profile "h100" (shipped: cpu-small, cpu-vllm-tiny, gpu-8b, instant`},
		{"unknown flag", []string{"--max-num-seq", "3"}, nil, "flag provided but not defined: -max-num-seq"},
		{"bad flag value", []string{"--max-num-seqs", "many"}, nil, `knob max_num_seqs: "many" is not an integer`},
		{"unknown env", nil, []string{"SERVEGATE_SIM_SLOWDOWNN=2"}, `environment SERVEGATE_SIM_SLOWDOWNN: unknown knob "slowdownn"`},
		{"bad env value", nil, []string{"SERVEGATE_SIM_JITTER=x"}, `environment SERVEGATE_SIM_JITTER: knob jitter: "x" is not a number`},
		{"out of range", []string{"--slowdown", "0"}, nil, "slowdown: must be > 0, got 0"},
		{"rate over 1", []string{"--fault-rate-500", "1.5"}, nil, "fault_rate_500: must be in [0, 1], got 1.5"},
		{"kv too small", []string{"--num-kv-blocks", "2"}, nil, "num_kv_blocks*block_size (32) must hold one max_model_len (4096) sequence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseArgs(c.args, c.env, &bytes.Buffer{})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestConfigSet(t *testing.T) {
	p, err := Config{Profile: "cpu-small", Set: map[string]string{"max_num_seqs": "2"}, Slowdown: 1.2}.Resolve()
	require.NoError(t, err)
	require.Equal(t, 2, p.MaxNumSeqs)
	require.Equal(t, 1.2, p.Slowdown)
	_, err = Config{Set: map[string]string{"nope": "1"}}.Resolve()
	require.ErrorContains(t, err, `unknown knob "nope"`)
}

// TestMainServes runs the command on a free port and stops it.
func TestMainServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"--profile", "instant", "--host", "127.0.0.1", "--port", "0"}, &out, &errb)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "on http://") }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.Equal(t, 0, <-done, errb.String())
	require.Contains(t, out.String(), "servegate/sim-instant")

	var params syncBuffer
	require.Equal(t, 0, Main(context.Background(), []string{"--profile", "gpu-8b", "--max-num-seqs", "7", "--print-params"}, &params, &errb))
	var p Params
	require.NoError(t, yaml.Unmarshal([]byte(params.String()), &p))
	require.Equal(t, 7, p.MaxNumSeqs)
	require.Equal(t, "meta-llama/Meta-Llama-3-8B-Instruct", p.Model)

	require.Equal(t, 2, Main(context.Background(), []string{"--slowdown", "-1"}, &out, &errb))
	require.Contains(t, errb.String(), "slowdown: must be > 0")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEveryKnobHasHelp(t *testing.T) {
	for _, k := range Knobs() {
		require.NotEmpty(t, Help(k), k)
	}
}
