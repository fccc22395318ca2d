package benchtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/redact/redacttest"
)

// secretsChildEnv names the scenario file TestSecretsChild runs; it is set
// only in the child process of TestRunRedactsSecrets.
const secretsChildEnv = "SERVEGATE_SECRETS_SCENARIO"

// TestSecretsChild runs one scenario in a child test process so that its
// parent can read the whole test log.
func TestSecretsChild(t *testing.T) {
	path := os.Getenv(secretsChildEnv)
	if path == "" {
		t.Skip("child of TestRunRedactsSecrets")
	}
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	Run(t, parse(t, string(src)))
}

// TestRunRedactsSecrets plants credentials in a scenario run (the url
// target's user:password, an Authorization and an x-api-key header) against
// a server that echoes them in error bodies. The run fails its SLO, so the
// failed requests' errors are logged too; no file written to SERVEGATE_OUT
// and no line of the test log may carry a secret.
func TestRunRedactsSecrets(t *testing.T) {
	if os.Getenv(secretsChildEnv) != "" {
		t.Skip("in the child")
	}
	srv := redacttest.NewServer(t, "servegate/sim")
	dir, outDir := t.TempDir(), t.TempDir()
	sc := fmt.Sprintf(`
name: secrets
target: {kind: url, url: %q, model: servegate/sim, tokenizer: %q}
backend: openai
headers: {Authorization: "Bearer %s", x-api-key: %q}
dataset: {name: random, num_prompts: 9, input_len: 16, output_len: 4, seed: 5}
load: {request_rate: 200, max_duration: 1m}
slo:
  bounds:
    - failed == 0
`, srv.URL(), fixtures.Tokenizer(t, fixtures.Llama3), redacttest.Bearer, redacttest.APIKey)
	path := filepath.Join(dir, "secrets.yaml")
	require.NoError(t, os.WriteFile(path, []byte(sc), 0o644))

	cmd := exec.Command(os.Args[0], "-test.run=^TestSecretsChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), secretsChildEnv+"="+path, scenario.EnvOut+"="+outDir)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	require.Error(t, err, "the child's SLO failed == 0 must fail:\n%s", log.String())
	require.Contains(t, log.String(), "failed (http_status)", "the failed requests' errors must be logged")

	require.Positive(t, srv.Seen.Load(), "the planted credentials never reached the server")
	require.Positive(t, srv.Echoed.Load(), "no error echoed them")
	require.GreaterOrEqual(t, redacttest.RequireCleanDir(t, outDir), 3, "result JSON, test.benchfmt and slo.md")
	redacttest.RequireClean(t, "the test log", log.Bytes())
}
