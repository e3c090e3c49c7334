#!/usr/bin/env bash
# Device call of 2026-12-04, second session: what each decode kernel costs on the critical
# path, by leaving it out (branch measure-skip: DORY_WGPU_SKIP=NAME,… records no dispatch of
# those kernels; the numbers they leave are garbage, the time is what counts). Decode of
# both models at depth 0, every setting twice, interleaved; no tests (the binary's kernels
# are the last stop's, a6e3b4e).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=420 SWEEP_DEPTHS="0" \
    SWEEP="defaults DORY_WGPU_SKIP=residual DORY_WGPU_SKIP=attend DORY_WGPU_SKIP=gemv_glu DORY_WGPU_SKIP=gemv DORY_WGPU_SKIP=residual,attend defaults DORY_WGPU_SKIP=residual DORY_WGPU_SKIP=attend DORY_WGPU_SKIP=gemv_glu DORY_WGPU_SKIP=gemv DORY_WGPU_SKIP=residual,attend" \
    bash bench/wgpu_h200.sh run sweep
