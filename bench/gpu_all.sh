#!/usr/bin/env bash
# On a GPU host: the benchmarks of the verification issues, then every GPU test. Logs under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
(cd bench && python3 throughput.py && python3 self_timing.py) > "$out/bench.log" 2>&1
bench=$?
bash bench/gpu_tests.sh
tests=$?
cat "$out/bench.log" | grep -v "^ *$" | tail -30
exit $((bench || tests))
