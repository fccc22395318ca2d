package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/tokenizer"
)

// startURL uses a server that is already running. Without target.model
// it asks the server's /v1/models which model it serves; with it, a
// server whose /v1/models lists other models only is refused: its
// numbers would be another model's.
func startURL(ctx context.Context, spec scenario.Target, _ io.Writer) (*Target, error) {
	base := strings.TrimRight(spec.URL, "/")
	model := spec.Model
	if model == "" {
		m, err := servedModel(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("start url target: no target.model (or SERVEGATE_MODEL) and %w", err)
		}
		model = m
	} else if ids, err := servedModels(ctx, base); err == nil {
		want := cmp.Or(spec.ServedModelName, model)
		if !slices.Contains(ids, want) {
			return nil, fmt.Errorf("start url target: %s serves %s, not %s, the model the scenario names",
				redact.String(base), strings.Join(ids, ", "), want)
		}
	}
	return &Target{
		Kind:            scenario.TargetURL,
		BaseURL:         base,
		Model:           model,
		ServedModelName: spec.ServedModelName,
	}, nil
}

// simSettings is the target's simulator knobs plus the model it serves.
func simSettings(spec scenario.Target) (map[string]string, error) {
	set, err := spec.SimKnobs()
	if err != nil {
		return nil, err
	}
	if m := cmp.Or(spec.ServedModelName, spec.Model); m != "" {
		set["model"] = m
	}
	return set, nil
}

// SimParams returns the knobs the simulator of a sim or inproc target
// runs with: its profile, then its args and served model name, as
// StartTarget starts it. A prediction of a scenario's own simulator in
// virtual time (servegate capacity --virtual without --profile) runs them.
func SimParams(spec scenario.Target) (sim.Params, error) {
	if spec.Kind != scenario.TargetSim && spec.Kind != scenario.TargetInproc {
		return sim.Params{}, fmt.Errorf("target kind %s is not a simulator: no profile to predict", spec.Kind)
	}
	set, err := simSettings(spec)
	if err != nil {
		return sim.Params{}, fmt.Errorf("%s target: %w", spec.Kind, err)
	}
	p, err := sim.Config{Profile: spec.Profile, Set: set}.Resolve()
	if err != nil {
		return p, fmt.Errorf("%s target: %w", spec.Kind, err)
	}
	return p, nil
}

// startInproc serves the simulator from this process on a loopback port.
// Its tokenizer is the target's (the bundled Llama-3 one by default), the
// same object the plan loads, so prompt counts match the client's.
func startInproc(ctx context.Context, spec scenario.Target, _ io.Writer) (*Target, error) {
	set, err := simSettings(spec)
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	tok, err := loadTokenizer(ctx, scenario.ResolveTokenizer(spec.Tokenizer, spec.Model), tokenizer.Hub{})
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	srv, err := sim.New(sim.Config{Profile: spec.Profile, Set: set, Tokenizer: tok})
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	served := srv.Params().Model
	return &Target{
		Kind:            scenario.TargetInproc,
		BaseURL:         "http://" + ln.Addr().String(),
		Model:           cmp.Or(spec.Model, served),
		ServedModelName: served,
		close: func(ctx context.Context) error {
			err := srv.Close() // ends the streams in flight first
			return errors.Join(err, hs.Shutdown(ctx))
		},
	}, nil
}

// servedModel asks /v1/models for the first model's id.
func servedModel(ctx context.Context, base string) (string, error) {
	ids, err := servedModels(ctx, base)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// servedModels asks /v1/models for the ids of the models served, at
// least one.
func servedModels(ctx context.Context, base string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data) == 0 {
		return nil, fmt.Errorf("list models: status %d, no model in the answer (%v)", resp.StatusCode, err)
	}
	ids := make([]string, len(body.Data))
	for i, d := range body.Data {
		ids[i] = d.ID
	}
	return ids, nil
}
