// Package k8s holds servegate's Kubernetes manifests; its test checks them
// offline against the Kubernetes API's own Go types (k8s.io/api).
//
// kubeconform, the usual checker, installs from the Go module proxy but
// fetches its JSON schemas over the network at run time, which tests here
// must not do. Decoding strictly into the API types catches the same
// unknown or misspelt fields and wrong value types; the rules a schema
// cannot express (indexed completion, the shard count written three times,
// the start time, the shared volume) are checked below.
package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// substitute fills the envsubst placeholders the manifest documents.
func substitute(s string) string {
	return strings.NewReplacer(
		"${SERVEGATE_IMAGE}", "registry.example/servegate:test",
		"${TARGET_URL}", "http://vllm.default.svc:8000",
		"${MODEL}", "meta-llama/Llama-3.1-8B-Instruct",
		"${START_AT}", "2026-12-01T20:00:00Z",
	).Replace(s)
}

// decodeStrict decodes one YAML document into v through JSON, refusing
// unknown fields, as the API server's strict field validation does.
func decodeStrict(doc map[string]any, v any) error {
	js, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// documents reads the manifest's YAML documents.
func documents(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewDecoder(strings.NewReader(substitute(string(data))))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		docs = append(docs, doc)
	}
	return docs
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestLoadManifest(t *testing.T) {
	docs := documents(t, "servegate-load.yaml")
	require.Len(t, docs, 3)
	var pvc corev1.PersistentVolumeClaim
	var jobs []batchv1.Job
	for _, doc := range docs {
		switch doc["kind"] {
		case "PersistentVolumeClaim":
			require.NoError(t, decodeStrict(doc, &pvc))
		case "Job":
			var j batchv1.Job
			require.NoError(t, decodeStrict(doc, &j), "job %v", doc["metadata"])
			jobs = append(jobs, j)
		default:
			t.Fatalf("unexpected kind %v", doc["kind"])
		}
		assert.NotEmpty(t, doc["apiVersion"])
	}
	require.Len(t, jobs, 2)
	load, merge := jobs[0], jobs[1]
	assert.Contains(t, pvc.Spec.AccessModes, corev1.ReadWriteMany, "every shard pod writes the results volume")

	// The load Job: indexed, all shards at once, no retries.
	require.NotNil(t, load.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *load.Spec.CompletionMode)
	require.NotNil(t, load.Spec.Completions)
	require.NotNil(t, load.Spec.Parallelism)
	n := *load.Spec.Completions
	assert.Equal(t, n, *load.Spec.Parallelism, "the shards share one schedule: all run at once")
	require.NotNil(t, load.Spec.BackoffLimit)
	assert.Zero(t, *load.Spec.BackoffLimit, "a retried shard starts late")
	require.Len(t, load.Spec.Template.Spec.Containers, 1)
	shardC := load.Spec.Template.Spec.Containers[0]
	script := strings.Join(append(shardC.Command, shardC.Args...), " ")
	for _, want := range []string{"JOB_COMPLETION_INDEX + 1", `--shard "$i/$SHARDS"`, `--start-at "$START_AT"`, "--save-result", "--save-detailed", "/results/"} {
		assert.Contains(t, script, want)
	}
	assert.Equal(t, itoa(n), envOf(shardC, "SHARDS"))
	assert.Equal(t, "2026-12-01T20:00:00Z", envOf(shardC, "START_AT"))
	assert.Equal(t, corev1.RestartPolicyNever, load.Spec.Template.Spec.RestartPolicy)

	// The merge Job: waits for the shards, then merges N of them.
	require.Len(t, merge.Spec.Template.Spec.InitContainers, 1)
	require.Len(t, merge.Spec.Template.Spec.Containers, 1)
	mergeC := merge.Spec.Template.Spec.Containers[0]
	assert.Contains(t, strings.Join(mergeC.Args, " "), `servegate merge --shards "$SHARDS"`)
	assert.Equal(t, itoa(n), envOf(mergeC, "SHARDS"))
	assert.Equal(t, itoa(n), envOf(merge.Spec.Template.Spec.InitContainers[0], "SHARDS"))

	// Both Jobs mount the one claim at /results.
	for _, j := range jobs {
		spec := j.Spec.Template.Spec
		require.Len(t, spec.Volumes, 1)
		require.NotNil(t, spec.Volumes[0].PersistentVolumeClaim)
		assert.Equal(t, pvc.Name, spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			require.Len(t, c.VolumeMounts, 1, c.Name)
			assert.Equal(t, "/results", c.VolumeMounts[0].MountPath)
		}
	}
}

// TestStrictDecodeCatchesMistakes shows that the check can fail: a
// misspelt field and a wrong type are errors.
func TestStrictDecodeCatchesMistakes(t *testing.T) {
	var j batchv1.Job
	err := decodeStrict(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{"completionsMode": "Indexed"}}, &j)
	assert.ErrorContains(t, err, `unknown field "completionsMode"`)
	err = decodeStrict(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{"completions": "four"}}, &j)
	assert.Error(t, err)
}

func itoa(n int32) string {
	b, _ := json.Marshal(n)
	return string(b)
}
