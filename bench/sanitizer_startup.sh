#!/usr/bin/env bash
# On a GPU host: what a sanitizer child costs before it checks anything. The same first CUDA
# call, natively and under compute-sanitizer's memcheck and racecheck, from a child that imports
# torch and from one that uses pycuda alone (median of 3 each, seconds).
set -o pipefail
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
torch_child='import torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize()'
pycuda_child='import pycuda.driver as d; d.init(); c = d.Device(0).make_context(); m = d.mem_alloc(4); d.memset_d32(m, 0, 1); c.synchronize(); c.pop()'
run() {  # label, then the command
  local label=$1; shift
  local times=()
  for i in 1 2 3; do
    local s=$EPOCHREALTIME; "$@" >/dev/null 2>&1; local rc=$?; local e=$EPOCHREALTIME
    times+=("$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f", b - a }')")
  done
  printf '%-34s rc=%s  %s\n' "$label" "$rc" "$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)"
}
run "torch, native" python3 -c "$torch_child"
run "pycuda, native" python3 -c "$pycuda_child"
for tool in memcheck racecheck; do
  run "torch under $tool" "$san" --tool "$tool" python3 -c "$torch_child"
  run "pycuda under $tool" "$san" --tool "$tool" python3 -c "$pycuda_child"
done
