#!/usr/bin/env bash
# cuda-libs.sh used|unused|sizes VENV: which of the CUDA libraries PyPI's
# torch installs (VENV/lib/python3*/site-packages/nvidia/<name>/lib) the
# venv's other shared libraries are linked against.
#
#   used    the nvidia/<name> directories some library needs (DT_NEEDED,
#           followed transitively through the nvidia libraries themselves):
#           the dynamic loader opens them when `import torch` loads
#           libtorch_cuda.so, on CPU too, so they must stay;
#   unused  the other nvidia/<name> directories: nothing links them; torch
#           opens them only with dlopen when a CUDA device is in use;
#   sizes   each directory, its size in MB and used/unused.
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

# Which nvidia directory provides each library file name.
declare -A provider
for dir in "$nv"/*/; do
	name=$(basename "$dir")
	for f in "$dir"lib/*.so*; do [ -e "$f" ] && provider[$(basename "$f")]=$name; done
done

declare -A used
queue=$(find "$site" -path "$nv" -prune -o -path "$site/triton" -prune -o -name '*.so*' -type f -print | needed)
while [ -n "$queue" ]; do
	next=""
	for lib in $queue; do
		name=${provider[$lib]:-}
		[ -n "$name" ] && [ -z "${used[$name]:-}" ] || continue
		used[$name]=1
		next+=" $(find "$nv/$name/lib" -name '*.so*' -type f | needed | tr '\n' ' ')"
	done
	queue=$next
done

for dir in "$nv"/*/; do
	name=$(basename "$dir")
	state=unused
	[ -n "${used[$name]:-}" ] && state=used
	case $mode in
	used | unused) [ "$state" = "$mode" ] && echo "$name" ;;
	sizes) echo "$name $(du -sm "$dir" | cut -f1) $state" ;;
	*) echo "cuda-libs.sh: mode $mode: want used, unused or sizes" >&2; exit 2 ;;
	esac
done
