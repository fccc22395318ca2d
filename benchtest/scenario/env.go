package scenario

import (
	"fmt"
	"os"
	"slices"
)

// Environment variables that override scenario files in CI.
const (
	// EnvTarget overrides target.kind (sim, inproc, vllm, url).
	EnvTarget = "SERVEGATE_TARGET"
	// EnvURL sets target.url; alone it also selects the url target.
	EnvURL = "SERVEGATE_URL"
	// EnvModel overrides target.model.
	EnvModel = "SERVEGATE_MODEL"
	// EnvImage overrides target.image.
	EnvImage = "SERVEGATE_IMAGE"
	// EnvOut is the directory results are written to (read by benchtest).
	EnvOut = "SERVEGATE_OUT"
)

// Env holds the overrides; empty fields override nothing.
type Env struct {
	// Target is SERVEGATE_TARGET.
	Target string
	// URL is SERVEGATE_URL.
	URL string
	// Model is SERVEGATE_MODEL.
	Model string
	// Image is SERVEGATE_IMAGE.
	Image string
	// Out is SERVEGATE_OUT.
	Out string
}

// EnvFromOS reads the overrides from the process environment.
func EnvFromOS() Env {
	return Env{
		Target: os.Getenv(EnvTarget),
		URL:    os.Getenv(EnvURL),
		Model:  os.Getenv(EnvModel),
		Image:  os.Getenv(EnvImage),
		Out:    os.Getenv(EnvOut),
	}
}

// Override returns a copy of sc with the environment's overrides applied
// and validated. When the kind changes, the file's image is dropped, and so
// are its args, env and profile unless both kinds are the simulator (sim
// and inproc take the same profiles and knobs).
func (sc *Scenario) Override(e Env) (*Scenario, error) {
	out := *sc
	t := &out.Target
	kind := e.Target
	if kind == "" && e.URL != "" {
		kind = TargetURL
	}
	if kind != "" {
		if !slices.Contains(targetKinds, kind) {
			return nil, fmt.Errorf("%s: must be one of %s; got %q", EnvTarget, oneOf(targetKinds), kind)
		}
		if kind != t.Kind {
			if !(isSimulator(kind) && isSimulator(t.Kind)) {
				t.Args, t.Env, t.Profile = nil, nil, ""
			}
			t.Image = ""
			if t.Kind == TargetURL {
				t.URL = ""
			}
			if t.Kind == TargetContainer {
				t.Build, t.Port, t.Cmd, t.Wait, t.Backends = nil, 0, nil, nil, nil
			}
		}
		t.Kind = kind
	}
	if e.URL != "" {
		if t.Kind != TargetURL {
			return nil, fmt.Errorf("%s is set but %s=%s; the URL is only for the url target", EnvURL, EnvTarget, t.Kind)
		}
		t.URL = e.URL
	}
	if e.Model != "" {
		t.Model = e.Model
	}
	if e.Image != "" {
		t.Image = e.Image
	}
	if t.Kind == TargetURL && t.URL == "" {
		return nil, fmt.Errorf("%s=url needs %s (http://host:port)", EnvTarget, EnvURL)
	}
	if err := out.validateTarget(); err != nil {
		return nil, fmt.Errorf("scenario %s with %s overrides: %w", sc.Name, "SERVEGATE_*", err)
	}
	return &out, nil
}

func isSimulator(kind string) bool { return kind == TargetSim || kind == TargetInproc }
