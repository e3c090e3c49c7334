#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: where a prompt's time goes, and its chunks.
# (a) the GPU's time by kernel for both models' prompts (depth 0; the larger also at 4096)
# and decodes; (b) the prompt's chunks of keys (DORY_WGPU_BLOCK_PER) and the workgroups they
# fill (DORY_WGPU_ATTEND_GROUPS); (c) each prompt kernel left out in turn (the measure-skip
# branch's binary, ea1990e: DORY_WGPU_SKIP=NAME records no dispatch of it), for what it costs
# on the critical path. Exact attention, so that the larger prompt at 4096 is a prompt.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
OUT=$o/a BUDGET=120 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" SWEEP="defaults" \
    SWEEP_PROFILE="tiny,prompt,0 large,prompt,0 large,prompt,4096 tiny,decode,0 large,decode,0" \
    bash bench/wgpu_h200.sh run sweep
x=bin:.wgpu-carry/dory-ea1990e,DORY_WGPU_SKIP
OUT=$o/b BUDGET=420 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults DORY_WGPU_BLOCK_PER=96 DORY_WGPU_BLOCK_PER=160 DORY_WGPU_BLOCK_PER=256 DORY_WGPU_ATTEND_GROUPS=256
    $x=attend_rows $x=combine $x=prep $x=split,residual_split,split_swiglu,join
    defaults DORY_WGPU_BLOCK_PER=96 DORY_WGPU_BLOCK_PER=160 DORY_WGPU_BLOCK_PER=256" \
    bash bench/wgpu_h200.sh run sweep
