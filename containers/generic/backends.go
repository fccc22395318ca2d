package generic

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/servegate/servegate/containers/simulator"
)

// startBackends creates a network and starts every backend replica on it,
// all at once, with the aliases sim-0, sim-1, ... in spec order. Replicas
// that started are kept in c for Terminate even when another failed.
func (c *Container) startBackends(ctx context.Context, backends []Backend) error {
	if len(backends) == 0 {
		return nil
	}
	nw, err := network.New(ctx)
	if err != nil {
		return fmt.Errorf("backends network: %w", err)
	}
	c.network = nw
	type replica struct {
		alias, img string
		opts       []testcontainers.ContainerCustomizer
	}
	var all []replica
	for _, b := range backends {
		img := b.Image
		if img == "" {
			if img, err = simulator.Image(ctx, nil); err != nil {
				return fmt.Errorf("backends: %w", err)
			}
		}
		opts := []testcontainers.ContainerCustomizer{}
		if b.Profile != "" {
			opts = append(opts, simulator.WithProfile(b.Profile))
		}
		for _, k := range slices.Sorted(maps.Keys(b.Knobs)) {
			opts = append(opts, simulator.WithKnob(k, b.Knobs[k]))
		}
		opts = append(opts, b.Options...)
		for range b.Replicas {
			alias := fmt.Sprintf("sim-%d", len(all))
			all = append(all, replica{alias, img, append(opts[:len(opts):len(opts)], network.WithNetwork([]string{alias}, nw))})
		}
	}
	c.Aliases = make([]string, len(all))
	c.Backends = make([]*simulator.Container, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, r := range all {
		c.Aliases[i] = r.alias
		wg.Go(func() {
			c.Backends[i], errs[i] = simulator.Run(ctx, r.img, r.opts...)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		var ctr testcontainers.Container
		if c.Backends[i] != nil {
			ctr = c.Backends[i]
		}
		return fmt.Errorf("backend %s: %w", all[i].alias, withLogTail(ctx, ctr, err))
	}
	return nil
}
