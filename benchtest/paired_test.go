package benchtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPairLabel(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "4": true, "0": false, "x": false} {
		t.Setenv(EnvPair, v)
		_, err := pairLabel()
		assert.Equal(t, ok, err == nil, "SERVEGATE_PAIR=%q", v)
	}
}
