#!/usr/bin/env bash
# Prepare, on this machine, what a GPU machine without network needs to run benchmarks/gpu_check.sh: the Python
# wheels its image lacks, for Python 3.12 on x86-64 (Warp at this environment's version, meshio, tetgen, shapely,
# usd-core, gymnasium, and stable-baselines3 for gpu_check's ppo section: the image has PyTorch), and Warp's kernel
# cache with every softsnake module precompiled for the GPU's architecture (sm_90: H100, H200). Everything lands in
# .gpu/ (git-ignored), cut into parts .gpu/p0, .gpu/p1, … of 58 MiB (a device call carries at most 64 MiB, the
# repository's ~5 MiB included; Warp's wheel alone is ~150 MB, so three parts), one per device call, the calls within
# the machine's warm time:
#
#   bash benchmarks/gpu_prepare.sh [--arch 90] [--from-cache DIR]     (DIR: a Warp kernel cache to start from)
#   each part but the last: carry [".gpu/pK"], command: mkdir -p /tmp/gpu && cp -r .gpu/pK /tmp/gpu/
#   the last part:          carry [".gpu/pN"], command: bash benchmarks/gpu_check.sh --commit <hash>
#                           (writes $OUT/gpu_check.json)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=90
from_cache=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --arch) arch="$2"; shift 2 ;;
        --from-cache) from_cache="$2"; shift 2 ;;
        *) echo "gpu_prepare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
python=${PYTHON:-python3}
warp_version=$($python -c "import warp; print(warp.__version__)")
rm -rf .gpu && mkdir -p .gpu/wheels
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
$python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .gpu/wheels \
    "warp-lang==$warp_version" meshio tetgen shapely usd-core gymnasium cloudpickle farama-notifications stable-baselines3
# the kernels, compiled here for the GPU (Warp's NVRTC needs no driver); modules already in --from-cache are kept
if [[ -n "$from_cache" ]]; then mkdir -p .gpu/warpcache && cp -r "$from_cache"/. .gpu/warpcache/; fi
WARP_CACHE_PATH="$PWD/.gpu/warpcache" $python -P benchmarks/precompile_cuda.py --arch "$arch" --block-dim 64 --block-dim 128
# more than one call carries: compressed and cut into parts, one folder each
tar -C .gpu -cf - wheels warpcache | xz -T0 -6 > .gpu/payload.tar.xz
split -b 58m -d .gpu/payload.tar.xz .gpu/payload.part.
k=0
for part in .gpu/payload.part.*; do
    mkdir -p ".gpu/p$k" && mv "$part" ".gpu/p$k/"
    k=$((k + 1))
done
rm -rf .gpu/payload.tar.xz .gpu/wheels .gpu/warpcache
du -sh .gpu/p*
echo "carry .gpu/p0 … .gpu/p$((k - 1)) in $k device calls (benchmarks/gpu_prepare.sh's header)"
