#!/usr/bin/env bash
# Twenty-seventh session, call 2. The GPU tests of this tree: attend_coop.wgsl's scores and
# weights held key by key, so that a tile's softmax meets 32 banks of workgroup memory, not
# 2 (cbc2eea), and each tile's values and the next tile's keys read a step ahead. Then what
# the driver made of the kernels (dory-wgpu-regs: registers, spills, shared memory) for this
# tree, cbc2eea and 60ad744's attend_coop, and this tree's internal representations of the
# attention and the GLU GEMM into $OUT/ir. Then the three against each other (60ad744 old,
# cbc2eea banks, this tree new): the larger config's GPU time by kernel of pp512 at depths 0
# and 4096, its pp512 + tg64 at depth 0, and pp512 at 4096 (old, new). Last, dory-tiny's pp512
# under 69f7a76 and this tree (call 1 measured 69f7a76 4–9 % faster): its GPU time by
# kernel.
# Build here first: `git apply bench/logs/h200-2026-12-10/attend-coop.patch`, then
# bench/logs/h200-2026-12-10/build-2.sh; carry [".gl", ".wgpu-carry"].
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a $OUT/ir
echo "== regs" >> $OUT/a/regs.txt
timeout 90 .wgpu-carry/dory-wgpu-regs >> $OUT/a/regs.txt 2>&1
for r in cbc2eea 60ad744; do
    echo "== regs-$r" >> $OUT/a/regs.txt
    timeout 60 .wgpu-carry/dory-wgpu-regs-$r attend_coop >> $OUT/a/regs.txt 2>&1
done
grep -E '^==|^#|error|dory-wgpu-regs:|attend_coop|gemm_glu|gemm_coop|gemm_sliced\b|attend_rows|split_combine' $OUT/a/regs.txt | cut -c1-400
timeout 60 .wgpu-carry/dory-wgpu-regs --ir $OUT/ir attend_coop_d gemm_glu > /dev/null 2>&1
ls -la $OUT/ir | head
call_start
kprof() {  # label binary model depth
    echo "== $1: $3 depth $4" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $3 --depth $4 --attention exact --exit none \
        --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
}
old=.wgpu-carry/dory-60ad744
banks=.wgpu-carry/dory-cbc2eea
# A first run brings the card's clocks up.
bench_run warm $dory $large 0 exact none 512 16 1 60
kprof old $old $large 0
kprof banks $banks $large 0
kprof new $dory $large 0
grep -E '^==|attend_coop_d|split_combine' $OUT/a/profile.txt
kprof new $dory $large 4096
kprof old $old $large 4096
kprof banks $banks $large 4096
grep -E '^==|attend_coop_d|split_combine' $OUT/a/profile.txt
bench_run old $old $large 0 exact none 512 64 2 120
bench_run banks $banks $large 0 exact none 512 64 2 120
bench_run new $dory $large 0 exact none 512 64 2 120
bench_run old-4096 $old $large 4096 exact none 512 16 1 150
bench_run new-4096 $dory $large 4096 exact none 512 16 1 150
kprof tiny-base .wgpu-carry/dory-69f7a76 models/dory-tiny 0
kprof tiny-new $dory models/dory-tiny 0
grep -E '^== tiny' -A14 $OUT/a/profile.txt | grep -E '^==|^pp|attend_rows|split|combine|gemm'
