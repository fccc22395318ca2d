package compare

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoc runs the examples of the package documentation, the usage
// `servegate compare -h` prints, and checks that each prints what the
// documentation says, and exits 2.
func TestDoc(t *testing.T) {
	examples := regexp.MustCompile(`(?m)^\t\$ servegate compare(.*)\n((?:\t[^$\n].*\n)*)`).FindAllStringSubmatch(Usage(), -1)
	require.GreaterOrEqual(t, len(examples), 4, "the documentation's examples")
	t.Chdir(t.TempDir())
	for _, ex := range examples {
		args := strings.Fields(ex[1])
		want := strings.ReplaceAll(ex[2], "\n\t", "\n")[1:]
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, &stdout, &stderr)
		assert.Equal(t, 2, code, "servegate compare %s", ex[1])
		assert.Equal(t, want, stderr.String(), "servegate compare %s", ex[1])
		assert.Empty(t, stdout.String())
	}
}

// TestUsage: -h prints the package documentation from its usage line on,
// and exits 0.
func TestUsage(t *testing.T) {
	var stdout bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), []string{"-h"}, &stdout, &bytes.Buffer{}))
	assert.Equal(t, Usage(), stdout.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "Usage:\n\n\tservegate compare [flags] BASE [HEAD]\n"), stdout.String())
	for _, flag := range []string{"-packages", "-run", "-out", "-policy", "-parallel", "-prepare", "-base-url"} {
		assert.Contains(t, stdout.String(), "\t"+flag+" ", "the usage documents %s", flag)
	}
	assert.NotContains(t, stdout.String(), "package compare")
}
