package benchtest

import (
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/simulator/sim"
)

// startURL uses a server that is already running. Without target.model
// it asks the server's /v1/models which model it serves.
func startURL(ctx context.Context, spec scenario.Target) (*Target, error) {
	base := strings.TrimRight(spec.URL, "/")
	model := spec.Model
	if model == "" {
		m, err := servedModel(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("start url target: no target.model (or SERVEGATE_MODEL) and %w", err)
		}
		model = m
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

// startInproc runs the simulator as an httptest server in this process.
// Its tokenizer is the scenario's, so prompt counts match the client's.
func startInproc(ctx context.Context, spec scenario.Target) (*Target, error) {
	set, err := simSettings(spec)
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	tok, _, err := loadTokenizer(ctx, spec.Tokenizer, spec.Model)
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	srv, err := sim.New(sim.Config{Profile: spec.Profile, Set: set, Tokenizer: tok})
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	hs := httptest.NewServer(srv)
	served := srv.Params().Model
	return &Target{
		Kind:            scenario.TargetInproc,
		BaseURL:         hs.URL,
		Model:           cmp.Or(spec.Model, served),
		ServedModelName: served,
		close: func(context.Context) error {
			err := srv.Close() // ends the streams in flight first
			hs.CloseClientConnections()
			hs.Close()
			return err
		},
	}, nil
}
