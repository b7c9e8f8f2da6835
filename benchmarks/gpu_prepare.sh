#!/usr/bin/env bash
# Prepare, on this machine, what a GPU machine without network needs to run benchmarks/gpu_check.sh: the Python
# wheels its image lacks, for Python 3.12 on x86-64 (Warp at this environment's version, meshio, tetgen, shapely,
# gymnasium, and stable-baselines3 for gpu_check's ppo section: the image has PyTorch; not usd-core, ~28 MB that only
# the gait's USD recording imports and no section runs), Warp's kernel
# cache with every softsnake module precompiled for the GPU's architecture (sm_90: H100, H200), the stage kernels'
# registers per thread read from those cubins (registers.json: benchmarks/cubin_registers.py, its table printed here),
# and the agreement section's two CPU runs (agreement_cpu.npz, agreement_cpu_ulp.npz: gpu_check takes them instead of
# running them on the GPU machine's CPU when their seconds, arguments, Warp and sources match). It compiles and runs
# this checkout's softsnake (PYTHONPATH=$PWD). Everything lands in .gpu/ (git-ignored), cut into parts .gpu/p0,
# .gpu/p1, … of 58 MiB (a device call carries at most 64 MiB, the repository's ~5 MiB included; Warp's wheel alone is
# ~150 MB: three or four parts), one per device call, the calls within the machine's warm time:
#
#   bash benchmarks/gpu_prepare.sh [--arch 90] [--from-cache DIR] [--save-cache DIR]
#       --from-cache: a Warp kernel cache to start from (modules already there are not compiled again);
#       --save-cache: where to keep this run's cache (without the generated sources) for the next --from-cache,
#       e.g. ~/.cache/softsnake-sm90: compiling is most of this script's ~45 minutes (2-core AMD EPYC); with every
#       module found there the script takes ~3 minutes
#   each part but the last: carry [".gpu/pK"], command: mkdir -p /tmp/gpu && cp -r .gpu/pK /tmp/gpu/
#   the last part:          carry [".gpu/pN"], command: bash benchmarks/gpu_check.sh --commit <hash>
#                           (writes $OUT/gpu_check.json within its --budget-s of 450 s; timeout_s 540)
#   then, on the warm machine (installed already), the blocks section in a call of its own:
#                           bash benchmarks/gpu_check.sh --commit <hash> --sections blocks --budget-s 240
# (no pipe to tail: the device tool keeps the output's last 12,000 characters, and a pipe holds them to the end)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=90
from_cache=""
save_cache=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --arch) arch="$2"; shift 2 ;;
        --from-cache) from_cache="$2"; shift 2 ;;
        --save-cache) save_cache="$2"; shift 2 ;;
        *) echo "gpu_prepare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
python=${PYTHON:-python3}
# drop the module folders of a Warp kernel cache that this run did not record (.gpu/modules.txt): older builds
prune_unrecorded() {
    for folder in "$1"/*/wp_*; do
        grep -qxF "$(basename "$folder")" .gpu/modules.txt || rm -rf "$folder"
    done
}
# this checkout's softsnake and kernels, whatever the environment has installed (an editable install of another one)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
warp_version=$($python -c "import warp; print(warp.__version__)")
rm -rf .gpu && mkdir -p .gpu/wheels
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
$python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .gpu/wheels \
    "warp-lang==$warp_version" meshio tetgen shapely gymnasium cloudpickle farama-notifications stable-baselines3
# the kernels, compiled here for the GPU (Warp's NVRTC needs no driver); modules already in --from-cache are kept
if [[ -n "$from_cache" ]]; then mkdir -p .gpu/warpcache && cp -r "$from_cache"/. .gpu/warpcache/; fi
WARP_CACHE_PATH="$PWD/.gpu/warpcache" $python -P benchmarks/precompile_cuda.py --arch "$arch" --block-dim 32 --block-dim 64 --block-dim 128 \
    --benchmarks latency_floor --record .gpu/modules.txt
# the blocks section's variants (register caps, clusters, unbatched lanes: module options read when the kernels are
# imported)
$python -P benchmarks/gpu_check.py --variant-builds | while read -r cap blocks batch modules dims; do
    flags=()
    for d in $dims; do flags+=(--block-dim "$d"); done
    SOFTSNAKE_CUDA_MAX_REGISTERS="${cap#-}" SOFTSNAKE_WORLD_BLOCKS="$blocks" SOFTSNAKE_LANE_BATCH="$batch" \
        WARP_CACHE_PATH="$PWD/.gpu/warpcache" \
        $python -P benchmarks/precompile_cuda.py --arch "$arch" --stage-only --modules "$modules" "${flags[@]}" \
        --record .gpu/modules.txt
done
# only the modules this checkout builds travel (a --from-cache folder holds older builds too), and only they are kept
# in --save-cache
prune_unrecorded .gpu/warpcache
# every blocks variant finds its modules in the cache, hashed as a fresh process on the GPU machine hashes them
WARP_CACHE_PATH="$PWD/.gpu/warpcache" $python -P benchmarks/gpu_check.py --cache-misses
# registers per thread and local memory of the stage kernels just compiled (gpu_check copies them into its JSON)
WARP_CACHE_PATH="$PWD/.gpu/warpcache" $python -P benchmarks/cubin_registers.py --arch "$arch" \
    --block-dim 32 --block-dim 64 --block-dim 128 --block-dim 256 --json .gpu/registers.json \
    || echo "gpu_prepare.sh: some stage cubins are missing (above); registers.json has the others"
# the agreement section's CPU runs (its GPU run stays on the GPU machine), with the kernels compiled for this CPU
$python -P benchmarks/device_agreement.py run --device cpu --seconds 2 --out .gpu/agreement_cpu.npz
$python -P benchmarks/device_agreement.py run --device cpu --seconds 2 --youngs-scale 1.000001 \
    --out .gpu/agreement_cpu_ulp.npz
# more than one call carries: compressed and cut into parts, one folder each
carried=(wheels warpcache agreement_cpu.npz agreement_cpu_ulp.npz)
if [[ -f .gpu/registers.json ]]; then carried+=(registers.json); fi
# Warp loads a cached module from its binary and meta file; the generated CUDA sources (~18 MB) only serve debugging
find .gpu/warpcache -name "*.cu" -delete
if [[ -n "$save_cache" ]]; then
    mkdir -p "$save_cache" && cp -r .gpu/warpcache/. "$save_cache"/
    prune_unrecorded "$save_cache"
fi
tar -C .gpu -cf - "${carried[@]}" | xz -T0 -9 > .gpu/payload.tar.xz
split -b 58m -d .gpu/payload.tar.xz .gpu/payload.part.
# the parts' checksums travel with the last part: gpu_check.sh names a part that is missing (a machine given back
# between the calls loses /tmp/gpu) or damaged before it unpacks anything
(cd .gpu && sha256sum payload.part.* > payload.sha256)
k=0
for part in .gpu/payload.part.*; do
    mkdir -p ".gpu/p$k" && mv "$part" ".gpu/p$k/"
    k=$((k + 1))
done
mv .gpu/payload.sha256 ".gpu/p$((k - 1))/"
rm -rf .gpu/payload.tar.xz .gpu/wheels .gpu/warpcache
du -sh .gpu/p*
echo "carry .gpu/p0 … .gpu/p$((k - 1)) in $k device calls (benchmarks/gpu_prepare.sh's header)"
