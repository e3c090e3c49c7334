#!/usr/bin/env bash
# call-2.sh cut to ~100 s of device time, for a call with little left:
# the registers first, then the larger config's prompt by kernel under 60ad744 (old),
# cbc2eea (banks) and this tree (new) at depth 0, then at 4096, then the attention's GPU
# tests. The same binaries (bench/logs/h200-2026-12-10/build-2.sh); carry [".gl", ".wgpu-carry"].
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a $OUT/ir
echo "== regs" >> $OUT/a/regs.txt
timeout 30 .wgpu-carry/dory-wgpu-regs attend_coop gemm_glu gemm_coop gemm_sliced split_combine attend_rows >> $OUT/a/regs.txt 2>&1
for r in cbc2eea 60ad744; do
    echo "== regs-$r" >> $OUT/a/regs.txt
    timeout 20 .wgpu-carry/dory-wgpu-regs-$r attend_coop >> $OUT/a/regs.txt 2>&1
done
cut -c1-300 $OUT/a/regs.txt
timeout 20 .wgpu-carry/dory-wgpu-regs --ir $OUT/ir attend_coop_d > /dev/null 2>&1
ls -la $OUT/ir | head -5
large_model
kprof() {  # label binary depth
    echo "== $1: depth $3" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 60 $2 bench --backend wgpu --model $large --depth $3 --attention exact --exit none \
        --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
}
timeout 30 $dory bench --backend wgpu --model $large --depth 0 --prompt 512 --gen 1 --reps 2 > /dev/null 2>&1
kprof old .wgpu-carry/dory-60ad744 0
kprof banks .wgpu-carry/dory-cbc2eea 0
kprof new $dory 0
grep -E '^==|^pp|attend_coop_d' $OUT/a/profile.txt
kprof new $dory 4096
kprof old .wgpu-carry/dory-60ad744 4096
grep -E '^==|^pp|attend_coop_d' $OUT/a/profile.txt | tail -6
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 8 attention:: 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests.log | head
