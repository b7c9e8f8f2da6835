#!/usr/bin/env bash
# On a GPU machine without network: install what benchmarks/gpu_prepare.sh carried (its last part in .gpu/ here, the
# others copied to /tmp/gpu by the previous calls; unpacked into /tmp/gpu: wheels, kernel cache, registers.json, the
# agreement section's CPU runs), then run every GPU measurement (benchmarks/gpu_check.py) into $OUT/gpu_check.json.
# gpu_check.py first compiles what the kernel cache lacks, on every core, and records which modules and how long.
# Arguments are passed on to gpu_check.py (--commit <hash>, --sections …, --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
site=/tmp/gpu/site
if [[ ! -d "$site" ]]; then
    # every part that gpu_prepare.sh listed (payload.sha256, in the last part), present and intact
    manifest=$(ls .gpu/p*/payload.sha256 /tmp/gpu/p*/payload.sha256 2>/dev/null | head -n 1 || true)
    if [[ -z "$manifest" ]]; then
        echo "gpu_check.sh: no payload.sha256: carry the last part of benchmarks/gpu_prepare.sh's payload" >&2
        exit 3
    fi
    while read -r sum name; do
        part=$(ls /tmp/gpu/p*/"$name" .gpu/p*/"$name" 2>/dev/null | head -n 1 || true)
        if [[ -z "$part" ]]; then
            echo "gpu_check.sh: payload part $name is missing: copy it to /tmp/gpu first (gpu_prepare.sh's header;" \
                "a machine given back between the calls loses /tmp/gpu)" >&2
            exit 3
        fi
        if ! echo "$sum  $part" | sha256sum -c --quiet - >/dev/null 2>&1; then
            echo "gpu_check.sh: payload part $part is damaged (its sha256 differs from $manifest)" >&2
            exit 3
        fi
    done < "$manifest"
    # the parts in their split order, wherever they lie (a warm machine may keep an earlier call's .gpu/pK: each once)
    cat $(ls /tmp/gpu/p*/payload.part.* .gpu/p*/payload.part.* 2>/dev/null | awk -F/ '{print $NF " " $0}' | sort -u -k1,1 | cut -d" " -f2) \
        | xz -d | tar -C /tmp/gpu -xf -
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" /tmp/gpu/wheels/*.whl
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$site" .
fi
export PYTHONPATH="$site" WARP_CACHE_PATH=/tmp/gpu/warpcache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -P benchmarks/gpu_check.py --out "${OUT:-.}/gpu_check.json" "$@"
