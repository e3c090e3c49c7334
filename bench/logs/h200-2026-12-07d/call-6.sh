#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 6: attend.wgsl's prologue (a decoded row's q, k and
# v prepared) with its pairs named rather than arrays indexed in loops, against main at
# bac0da2 (.wgpu-carry/dory-bac0da2: `bash bench/wgpu_h200.sh build bac0da2`): the GPU tests,
# then decode of the larger config and of dory-tiny, three rounds interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
CI=true timeout 80 .wgpu-carry/gpu-tests --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED" | head
large_model
for round in 1 2 3; do
    bench_knob main .wgpu-carry/dory-bac0da2 $large 64
    bench_knob pairs $dory $large 64
    bench_knob main-tiny .wgpu-carry/dory-bac0da2 models/dory-tiny 128
    bench_knob pairs-tiny $dory models/dory-tiny 128
done
