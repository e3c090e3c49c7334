#!/usr/bin/env bash
# Device call of 2026-12-04, second session: where a decoded token's time goes, all of it.
# The branch measure-skip (a6e3b4e's kernels, DORY_WGPU_SKIP=NAME,… records no dispatch of
# those kernels: the numbers are garbage, the time is what counts) for the kernels call 1
# did not leave out, and for all of them (the host's loop alone); then this stop's binary
# (the same kernels) under the attention's knobs: chunks of 16, 64 and 128 keys, 8 and 16
# invocations a key, prep in its own dispatch. Decode of both models at depths 0 and 4096,
# interleaved, each setting twice.
cd "$(dirname "$0")/../../.."  # the repository root
skip=bin:.wgpu-carry/dory-measure-skip,DORY_WGPU_SKIP
all=gemv,gemv_glu,gemv_scaled,attend,residual,residual_mix,combine,mix,embed,copy
settings="defaults $skip=combine $skip=residual_mix,mix $skip=gemv_scaled $skip=$all
    DORY_WGPU_ATTEND_PER=16 DORY_WGPU_ATTEND_PER=64 DORY_WGPU_ATTEND_PER=128
    DORY_WGPU_ATTEND_LANES=8 DORY_WGPU_ATTEND_LANES=16 DORY_WGPU_FUSE=residual,split,combine"
BUDGET=540 SWEEP_DEPTHS="0 4096" SWEEP="$settings $settings" bash bench/wgpu_h200.sh run sweep
