#!/usr/bin/env bash
# cuda-libs.sh used|unused|sizes VENV: which of the CUDA library files
# PyPI's torch installs (VENV/lib/python3*/site-packages/nvidia/<name>/...)
# the venv's other shared libraries are linked against.
#
#   used    the files (paths under site-packages/nvidia) some library needs
#           (DT_NEEDED, followed transitively through the nvidia libraries
#           themselves): the dynamic loader opens them when `import torch`
#           loads libtorch_cuda.so, on CPU too, so they must stay;
#   unused  the other files: nothing links them; only CUDA code opens them
#           with dlopen (cuDNN's engine libraries, nvrtc's builtins, ...),
#           which a CPU-only vLLM never runs;
#   sizes   each nvidia/<name> directory: MB in total, MB unused.
#
# Needs readelf (binutils).
set -euo pipefail
mode=${1:?usage: cuda-libs.sh used|unused|sizes VENV}
venv=${2:?usage: cuda-libs.sh used|unused|sizes VENV}
site=$(ls -d "$venv"/lib/python3*/site-packages)
nv=$site/nvidia
command -v readelf >/dev/null || { echo "cuda-libs.sh: needs readelf (apt-get install binutils)" >&2; exit 1; }
[ -d "$nv" ] || exit 0

needed() { # the DT_NEEDED names of the shared objects given on stdin
	while read -r f; do readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u
}

# Which file provides each library name.
declare -A provider
while read -r f; do provider[$(basename "$f")]=$f; done < <(find "$nv" -name '*.so*' -type f)

declare -A used
queue=$(find "$site" -path "$nv" -prune -o -path "$site/triton" -prune -o -name '*.so*' -type f -print | needed)
while [ -n "$queue" ]; do
	next=""
	for lib in $queue; do
		f=${provider[$lib]:-}
		[ -n "$f" ] && [ -z "${used[$f]:-}" ] || continue
		used[$f]=1
		next+=" $(echo "$f" | needed | tr '\n' ' ')"
	done
	queue=$next
done

case $mode in
used) for f in "${!used[@]}"; do echo "${f#"$nv"/}"; done | sort ;;
unused) find "$nv" -name '*.so*' -type f | sort | while read -r f; do [ -n "${used[$f]:-}" ] || echo "${f#"$nv"/}"; done ;;
sizes)
	for dir in "$nv"/*/; do
		name=$(basename "$dir") total=$(du -sm "$dir" | cut -f1) unused=0
		while read -r f; do
			[ -n "${used[$f]:-}" ] || unused=$((unused + $(stat -c %s "$f")))
		done < <(find "$dir" -name '*.so*' -type f)
		echo "$name ${total} MB, ${unused} bytes unused" | awk '{ printf "%-12s %6d MB, %6.0f MB unused\n", $1, $2, $4/1e6 }'
	done ;;
*) echo "cuda-libs.sh: mode $mode: want used, unused or sizes" >&2; exit 2 ;;
esac
