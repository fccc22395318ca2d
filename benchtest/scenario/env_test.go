package scenario

import (
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
		{name: "vllm with model", env: Env{Target: "vllm", Model: "m"},
			want: Target{Kind: "vllm", Model: "m", StartTimeout: sc.Target.StartTimeout}},
		{name: "bad kind", env: Env{Target: "k8s"}, wantErr: `SERVEGATE_TARGET: must be one of sim, inproc, vllm, url, container; got "k8s"`},
		{name: "url kind without url", env: Env{Target: "url"}, wantErr: "SERVEGATE_TARGET=url needs SERVEGATE_URL (http://host:port)"},
		{name: "url with another kind", env: Env{Target: "sim", URL: "http://x:1"}, wantErr: "SERVEGATE_URL is set but SERVEGATE_TARGET=sim; the URL is only for the url target"},
		{name: "vllm without model", env: Env{Target: "vllm"}, wantErr: "scenario s with SERVEGATE_* overrides: s.yaml:2: target.model: required when target.kind is vllm (or set SERVEGATE_MODEL)"},
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
