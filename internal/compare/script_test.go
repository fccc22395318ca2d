package compare

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompareScriptRefusesOldInput: ci/compare.sh, now a wrapper of
// servegate compare, exits 2 on the bash script's old mode flags and
// variables instead of running with other settings than the caller meant.
// Both refusals come before anything is built.
func TestCompareScriptRefusesOldInput(t *testing.T) {
	script, err := filepath.Abs("../../ci/compare.sh")
	require.NoError(t, err)
	tests := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--paired", "main"}, "compare: --paired is gone"},
		{nil, []string{"--interleaved", "main"}, "compare: --interleaved is gone"},
		{[]string{"COUNT=10"}, []string{"main"}, "compare: COUNT is set, but the environment is no longer read"},
		{[]string{"GATE_FLAGS=-policy x"}, []string{"main"}, "compare: GATE_FLAGS is set"},
	}
	for _, tt := range tests {
		cmd := exec.Command("bash", append([]string{script}, tt.args...)...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir()}, tt.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v: %v\n%s", tt.env, err, out)
		assert.Equal(t, 2, ee.ExitCode(), "%s", out)
		assert.Contains(t, string(out), tt.want)
	}
}
