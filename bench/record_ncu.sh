#!/usr/bin/env bash
# On a GPU host: profile tests/data/ncu/profile_kernels.cu under ncu with source correlation and
# export every page the profile parser may read. Everything lands in $OUT/ncu.tgz.
# (How the recordings under tests/data/ncu/ were made.)
set -u
out=${OUT:-/tmp}; work=/tmp/ncu-record; rm -rf "$work"; mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH
ncu --version > "$work/version.txt" 2>&1
ncu --help > "$work/help.txt" 2>&1
nvcc -O3 -lineinfo -arch=sm_90 -o "$work/profile_kernels" tests/data/ncu/profile_kernels.cu 2> "$work/nvcc.txt"
start=$(date +%s%N)
ncu --set full --import-source yes -f -o "$work/report" "$work/profile_kernels" > "$work/profile.txt" 2>&1
echo "full-set profile of 5 kernels: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$work/profile.txt"
start=$(date +%s%N)
ncu --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --import-source yes -k regex:copy_strided -c 1 \
    -f -o "$work/small" "$work/profile_kernels" > "$work/small.txt" 2>&1
echo "source-counter profile of one kernel: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$work/small.txt"
r="$work/report.ncu-rep"
ncu -i "$r" --page raw --csv > "$work/raw.csv" 2>&1
ncu -i "$r" --page details --csv > "$work/details.csv" 2>&1
ncu -i "$r" --page details --csv --print-details all > "$work/details_all.csv" 2>&1
for k in copy_coalesced copy_strided transpose_conflicts divergent local_array; do
  ncu -i "$r" -k "$k" --page source --csv --print-source cuda > "$work/source_cuda_$k.csv" 2>&1
  ncu -i "$r" -k "$k" --page source --csv --print-source sass > "$work/source_sass_$k.csv" 2>&1
  ncu -i "$r" -k "$k" --page source --csv --print-source cuda,sass > "$work/source_both_$k.csv" 2>&1
done
ncu -i "$work/small.ncu-rep" --page source --csv --print-source cuda > "$work/small_source_cuda.csv" 2>&1
ncu -i "$work/small.ncu-rep" --page details --csv --print-details all > "$work/small_details.csv" 2>&1
ncu --query-metrics > "$work/query_metrics.txt" 2>&1
ls -la "$work"; head -c 1500 "$work/source_cuda_copy_strided.csv"; echo; head -c 800 "$work/details_all.csv"
tar czf "$out/ncu.tgz" -C "$work" --exclude profile_kernels .
