package gate

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShippedPolicy checks that ci/policy.yaml is the built-in default.
func TestShippedPolicy(t *testing.T) {
	p, err := LoadPolicy("../../ci/policy.yaml")
	require.NoError(t, err)
	assert.Equal(t, DefaultPolicy(), p)
	data, err := os.ReadFile("../../ci/policy.yaml")
	require.NoError(t, err)
	assert.Equal(t, DefaultPolicyYAML, string(data), "regenerate with: go run ./ci/cmd/gate -print-policy > ci/policy.yaml")
}
