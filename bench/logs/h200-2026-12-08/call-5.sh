#!/usr/bin/env bash
# The GPU tests with the partials poisoned (NaN in each new buffer of them, on the tests'
# two devices of their own): a join that read an empty chunk's unwritten value sums on the
# tensor cores would show.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests.log | head -20
