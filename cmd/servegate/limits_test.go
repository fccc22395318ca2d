package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchFlagLimits: a numeric flag past its documented maximum is a
// usage error naming the flag and the maximum (--num-warmups
// 9223372036854775807 used to panic in makeslice).
func TestBenchFlagLimits(t *testing.T) {
	cases := []struct{ args, want string }{
		{"--num-warmups 9223372036854775807", "--num-warmups 9223372036854775807 is over the maximum 10000"},
		{"--random-input-len 2000000000", "--random-input-len 2000000000 is over the maximum 1048576"},
		{"--num-prompts 1000001", "--num-prompts 1000001 is over the maximum 1000000"},
		{"--max-concurrency 100001", "--max-concurrency 100001 is over the maximum 100000"},
		{"--request-timeout-sec 1e300", "--request-timeout-sec 1e+300 is over the maximum 604800"},
		{"--max-duration-sec inf", "--max-duration-sec +Inf is over the maximum 604800"},
		{"--ready-check-timeout-sec 9223372036", "--ready-check-timeout-sec 9223372036 is over the maximum 604800"},
		{"--temperature nan", "--temperature NaN is over the maximum 100"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"bench", "--model", "m"}, strings.Fields(tc.args)...), &stdout, &stderr)
		assert.Equal(t, 1, code, tc.args)
		assert.Contains(t, stderr.String(), tc.want)
	}
}

// TestDocsListEveryFlagLimit keeps the limits table of docs/scenarios.md
// true for the bench flags.
func TestDocsListEveryFlagLimit(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	require.NoError(t, err)
	for _, c := range flagLimits(&benchArgs{}) {
		assert.Contains(t, string(doc), "| "+c.Max+" | `--"+c.Name+"` |", "docs/scenarios.md does not list the limit of --%s", c.Name)
	}
}
