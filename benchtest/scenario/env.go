package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
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
// and validated. When the kind changes, the file's image is dropped; args,
// env and profile are kept between the simulator kinds (sim and inproc
// take the same profiles and knobs), and dropped for a url target. From a
// simulator kind to vllm nothing is dropped silently: the knobs vLLM has
// (VLLMKnobs) become vllm serve flags, and a knob it has not, simulator
// env, or a profile without a target.vllm block give an *UnsupportedError.
// On the vllm target the target.vllm block is applied last.
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
			switch {
			case isSimulator(kind) && isSimulator(t.Kind):
			case kind == TargetVLLM && isSimulator(t.Kind):
				if err := sc.toVLLM(t); err != nil {
					return nil, err
				}
			default:
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
	if t.Kind == TargetVLLM && t.VLLM != nil {
		v := t.VLLM
		t.Model = cmp.Or(v.Model, t.Model)
		t.Image = cmp.Or(v.Image, t.Image)
		t.Args = append(slices.Clip(t.Args), v.Args...)
		if len(v.Env) > 0 {
			env := maps.Clone(t.Env)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, v.Env)
			t.Env = env
		}
		t.VLLM = nil
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

// toVLLM turns a simulator target into a vllm one: the knobs become vllm
// serve flags, or the scenario cannot run there.
func (sc *Scenario) toVLLM(t *Target) error {
	unsupported := func(reason string) error {
		return &UnsupportedError{Scenario: sc.Name, Kind: TargetVLLM, Reason: reason}
	}
	if t.Profile != "" && t.VLLM == nil {
		return unsupported(fmt.Sprintf("target.profile %s is the simulator's latency model and the SLOs are calibrated on it; "+
			"add a target.vllm block to run it on vLLM (scenarios/vllm has scenarios for real vLLM)", t.Profile))
	}
	if len(t.Env) > 0 {
		return unsupported(fmt.Sprintf("target.env %v is the simulator's environment; vLLM has no equivalent (set target.vllm.env)", slices.Sorted(maps.Keys(t.Env))))
	}
	args, err := t.vllmArgs(sc.Name)
	var unsup *UnsupportedError
	if errors.As(err, &unsup) {
		return err
	}
	if err != nil {
		return fmt.Errorf("scenario %s with %s=%s: %w", sc.Name, EnvTarget, TargetVLLM, err)
	}
	t.Args, t.Env, t.Profile = args, nil, ""
	return nil
}

func isSimulator(kind string) bool { return kind == TargetSim || kind == TargetInproc }
