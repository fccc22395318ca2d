package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOverride(t *testing.T) {
	scs, err := Parse("s.yaml", []byte("name: s\ntarget:\n  kind: sim\n  profile: cpu-small\n  args: [--slowdown=1.1]\n"))
	require.NoError(t, err)
	sc := scs[0]

	cases := []struct {
		name    string
		env     Env
		want    Target
		wantErr string
	}{
		{name: "none", env: Env{}, want: sc.Target},
		{name: "same kind keeps args", env: Env{Target: "sim", Image: "img:2"},
			want: Target{Kind: "sim", Profile: "cpu-small", Args: []string{"--slowdown=1.1"}, Image: "img:2", StartTimeout: sc.Target.StartTimeout}},
		{name: "inproc keeps the simulator profile", env: Env{Target: "inproc"},
			want: Target{Kind: "inproc", Profile: "cpu-small", Args: []string{"--slowdown=1.1"}, StartTimeout: sc.Target.StartTimeout}},
		{name: "url alone selects url", env: Env{URL: "http://127.0.0.1:9"},
			want: Target{Kind: "url", URL: "http://127.0.0.1:9", StartTimeout: sc.Target.StartTimeout}},
		{name: "vllm: a profile without a vllm block cannot run", env: Env{Target: "vllm", Model: "m"},
			wantErr: "scenario s cannot run on the vllm target: target.profile cpu-small is the simulator's latency model and the SLOs are calibrated on it; add a target.vllm block to run it on vLLM (scenarios/vllm has scenarios for real vLLM)"},
		{name: "bad kind", env: Env{Target: "k8s"}, wantErr: `SERVEGATE_TARGET: must be one of sim, inproc, vllm, url, container; got "k8s"`},
		{name: "url kind without url", env: Env{Target: "url"}, wantErr: "SERVEGATE_TARGET=url needs SERVEGATE_URL (http://host:port)"},
		{name: "url with another kind", env: Env{Target: "sim", URL: "http://x:1"}, wantErr: "SERVEGATE_URL is set but SERVEGATE_TARGET=sim; the URL is only for the url target"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sc.Override(c.env)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, c.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got.Target)
			assert.Equal(t, "cpu-small", sc.Target.Profile, "the original is unchanged")
		})
	}
}

func TestEnvFromOS(t *testing.T) {
	t.Setenv("SERVEGATE_TARGET", "url")
	t.Setenv("SERVEGATE_URL", "http://h:1")
	t.Setenv("SERVEGATE_MODEL", "m")
	t.Setenv("SERVEGATE_IMAGE", "i")
	t.Setenv("SERVEGATE_OUT", "/o")
	assert.Equal(t, Env{Target: "url", URL: "http://h:1", Model: "m", Image: "i", Out: "/o"}, EnvFromOS())
}

func TestOverrideToVLLM(t *testing.T) {
	cases := []struct {
		name, target string
		env          Env
		want         Target
		wantErr      string
		unsupported  bool
	}{
		{name: "knobs become vllm flags",
			target: "{kind: sim, args: [--enable_prefix_caching=false, --max-num-seqs=8, --max_num_batched_tokens=512, --block_size=16, --max_model_len=2048]}",
			want:   Target{Kind: "vllm", Args: []string{"--no-enable-prefix-caching", "--max-num-seqs", "8", "--max-num-batched-tokens", "512", "--block-size", "16", "--max-model-len", "2048"}}},
		{name: "prefix caching on", target: "{kind: inproc, args: [--enable_prefix_caching=true]}",
			want: Target{Kind: "vllm", Args: []string{"--enable-prefix-caching"}}},
		{name: "vllm block kept and applied last",
			target: "{kind: sim, profile: cpu-small, args: [--max_num_seqs=4], vllm: {model: /m, args: [--max-num-seqs, '2'], env: {A: b}}}",
			want:   Target{Kind: "vllm", Model: "/m", Args: []string{"--max-num-seqs", "4", "--max-num-seqs", "2"}, Env: map[string]string{"A": "b"}}},
		{name: "the environment's model wins over the block", env: Env{Model: "m2"},
			target: "{kind: sim, vllm: {model: /m}}", want: Target{Kind: "vllm", Model: "m2"}},
		{name: "a knob vLLM lacks", target: "{kind: sim, args: [--slowdown=1.1]}", unsupported: true,
			wantErr: "scenario s cannot run on the vllm target: target.args[0] --slowdown=1.1: the simulator knob slowdown has no vLLM equivalent (vLLM has enable_prefix_caching, max_num_seqs, max_num_batched_tokens, block_size, max_model_len)"},
		{name: "a knob vLLM lacks, even with a block", target: "{kind: sim, args: [--jitter=0.1], vllm: {args: [--x]}}", unsupported: true,
			wantErr: "the simulator knob jitter has no vLLM equivalent"},
		{name: "simulator env", target: "{kind: sim, env: {X: y}}", unsupported: true,
			wantErr: "target.env [X] is the simulator's environment"},
		{name: "bad knob value", target: "{kind: sim, args: [--max_num_seqs=many]}",
			wantErr: `scenario s with SERVEGATE_TARGET=vllm: target.args[0] --max_num_seqs=many: want a positive integer, got "many"`},
		{name: "a vllm file keeps its args and applies its block", target: "{kind: vllm, args: [--a], env: {A: a}, vllm: {args: [--b], env: {B: b}}}", env: Env{Target: ""},
			want: Target{Kind: "vllm", Args: []string{"--a", "--b"}, Env: map[string]string{"A": "a", "B": "b"}}},
		{name: "a sim target keeps its block for later", target: "{kind: sim, vllm: {args: [--b]}}", env: Env{Target: "sim"},
			want: Target{Kind: "sim", VLLM: &VLLMTarget{Args: []string{"--b"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scs, err := Parse("s.yaml", []byte("name: s\ntarget: "+c.target+"\n"))
			require.NoError(t, err)
			env := c.env
			if env.Target == "" && !strings.Contains(c.target, "kind: vllm") && c.env.Target != "sim" {
				env.Target = "vllm"
			}
			got, err := scs[0].Override(env)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				var u *UnsupportedError
				assert.Equal(t, c.unsupported, errors.As(err, &u), "an *UnsupportedError")
				return
			}
			require.NoError(t, err)
			c.want.StartTimeout = got.Target.StartTimeout
			assert.Equal(t, c.want, got.Target)
			again, err := got.Override(Env{Target: env.Target})
			require.NoError(t, err)
			assert.Equal(t, got.Target, again.Target, "a second override changes nothing")
		})
	}
}
