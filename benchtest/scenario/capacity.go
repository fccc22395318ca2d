package scenario

import (
	"math"
	"time"

	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/limit"
)

// Capacity defaults.
const (
	DefaultCapacityMinRate   = 1.0
	DefaultCapacityMaxRate   = 1024.0
	DefaultCapacityPrecision = 0.05
	DefaultCapacityBudget    = 10 * time.Minute
)

// A Capacity turns a scenario into a capacity search: the highest request
// rate at which every SLO bound holds. Each step is a full run of the
// scenario (its own warm-ups included) at one rate; the search doubles the
// rate from MinRate until a step fails (or MaxRate passes), then bisects
// between the last pass and the first fail until the two are within
// Precision of each other or Budget runs out.
type Capacity struct {
	// MinRate is the first rate tried, requests/s. Default 1.
	MinRate float64 `yaml:"min_rate"`
	// MaxRate is the highest rate tried, requests/s. Default 1024.
	MaxRate float64 `yaml:"max_rate"`
	// Precision ends the bisection when fail − pass ≤ Precision · pass.
	// Default 0.05.
	Precision float64 `yaml:"precision"`
	// Budget bounds the search's time; a search cut short reports the best
	// rate found so far and says so. Default 10m.
	Budget Duration `yaml:"budget"`
	// StepDuration, when set, sends rate × StepDuration requests per step
	// (at least 20, at most dataset.num_prompts) so that every step takes
	// about as long; 0 sends dataset.num_prompts at every rate.
	StepDuration Duration `yaml:"step_duration"`
}

// MaxCapacityRate is the largest capacity.max_rate (and min_rate),
// requests/s.
const MaxCapacityRate = 1e6

// serverAndCapacityLimits are the maxima of server_metrics and capacity
// (checked when set; zero values pass).
func (sc *Scenario) serverAndCapacityLimits() []limit.Check {
	var c Capacity
	if sc.Capacity != nil {
		c = *sc.Capacity
	}
	var interval Duration
	if sc.ServerMetrics.Interval != nil {
		interval = *sc.ServerMetrics.Interval
	}
	rmin, rmax := c.MinRate, c.MaxRate
	return []limit.Check{
		limit.Duration("server_metrics.interval", interval.D(), engine.MaxTimeout),
		limit.Float("capacity.min_rate", &rmin, MaxCapacityRate),
		limit.Float("capacity.max_rate", &rmax, MaxCapacityRate),
		limit.Duration("capacity.budget", c.Budget.D(), engine.MaxTimeout),
		limit.Duration("capacity.step_duration", c.StepDuration.D(), engine.MaxTimeout),
	}
}

func (sc *Scenario) capacityDefaults() {
	c := sc.Capacity
	if c == nil {
		return
	}
	p := sc.pos
	if !p.has("capacity.min_rate") {
		c.MinRate = DefaultCapacityMinRate
	}
	if !p.has("capacity.max_rate") {
		c.MaxRate = DefaultCapacityMaxRate
	}
	if !p.has("capacity.precision") {
		c.Precision = DefaultCapacityPrecision
	}
	if !p.has("capacity.budget") {
		c.Budget = Duration(DefaultCapacityBudget)
	}
}

func (sc *Scenario) validateCapacity() error {
	c := sc.Capacity
	if c == nil {
		return nil
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(c.MinRate) || c.MinRate <= 0 {
		return sc.errorf("capacity.min_rate", "must be a positive finite rate (requests/s), got %v", c.MinRate)
	}
	if !finite(c.MaxRate) || c.MaxRate < c.MinRate {
		return sc.errorf("capacity.max_rate", "must be a finite rate at least capacity.min_rate (%v), got %v", c.MinRate, c.MaxRate)
	}
	if !finite(c.Precision) || c.Precision <= 0 || c.Precision >= 1 {
		return sc.errorf("capacity.precision", "must be a fraction in (0, 1), got %v", c.Precision)
	}
	if c.Budget <= 0 {
		return sc.errorf("capacity.budget", "must be positive, got %s", c.Budget.D())
	}
	if c.StepDuration < 0 {
		return sc.errorf("capacity.step_duration", "must not be negative, got %s", c.StepDuration.D())
	}
	if len(sc.SLO.Bounds) == 0 {
		return sc.errorf("capacity", "needs slo.bounds: the capacity is the highest rate at which they all hold")
	}
	switch {
	case sc.pos.has("load.request_rate"):
		return sc.errorf("load.request_rate", "cannot be combined with capacity: the search sets the rate")
	case sc.Load.RampUp != nil:
		return sc.errorf("load.ramp_up", "cannot be combined with capacity: the search sets the rate")
	case sc.Load.TraceReplay:
		return sc.errorf("load.trace_replay", "cannot be combined with capacity: the search sets the rate")
	}
	return nil
}
