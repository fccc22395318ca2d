package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStudent checks the t quantiles against printed tables.
func TestStudent(t *testing.T) {
	for _, tt := range []struct {
		df   int
		p, t float64
	}{{1, 0.99, 31.821}, {2, 0.99, 6.965}, {4, 0.99, 3.747}, {7, 0.99, 2.998}, {30, 0.975, 2.042}} {
		assert.InDelta(t, tt.t, StudentQuantile(tt.p, tt.df), 2e-3, "df %d p %v", tt.df, tt.p)
		assert.InDelta(t, tt.p, StudentCDF(tt.t, tt.df), 1e-4, "df %d t %v", tt.df, tt.t)
	}
	assert.InDelta(t, 0.5, StudentCDF(0, 3), 1e-12)
}
