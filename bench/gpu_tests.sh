#!/usr/bin/env bash
# On a GPU host (the device tool): the GPU tests, with the full log under $OUT and a summary last.
# Usage: bash bench/gpu_tests.sh [pytest args], after the staging preamble.
set -o pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m pytest -q -s -rfE -p no:cacheprovider --timeout 300 "${@:-tests/gpu}" > "$out/gpu-tests.log" 2>&1
status=$?
grep -E "^\[(control|self|rewrite)\]" "$out/gpu-tests.log"
tail -60 "$out/gpu-tests.log"
exit $status
