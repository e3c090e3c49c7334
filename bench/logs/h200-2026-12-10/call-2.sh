#!/usr/bin/env bash
# Twenty-seventh session, call 2. The GPU tests of the working tree (attend_coop.wgsl's
# scores and weights held key by key, so that a tile's softmax meets 32 banks of workgroup
# memory, not 2); then what the driver made of every kernel (dory-wgpu-regs: registers,
# spills, shared memory; internal representations of the attention and GEMMs into $OUT/ir);
# then attend_coop's change against 60ad744 (`bench/wgpu_h200.sh build 60ad744`, carried as
# .wgpu-carry/dory-60ad744): the larger config's pp512 at depths 0 and 4096, the GPU time by
# kernel of each, and pp512 + tg64 two rounds interleaved; then dory-tiny's pp512 under
# 69f7a76 and this tree (call 1 measured 69f7a76 4–9 % faster), its GPU time by kernel.
# Build here first (carry [".gl", ".wgpu-carry"]):
#   rm -f .wgpu-carry/*; bash bench/wgpu_h200.sh build 60ad744; bash bench/wgpu_h200.sh build 69f7a76
#   (the first also builds this tree's binaries and dory-wgpu-regs)
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
mkdir -p $OUT/ir
timeout 120 .wgpu-carry/dory-wgpu-regs 2>&1 | tee $OUT/a/regs.txt | grep -E 'attend_coop|gemm|attend_rows|split_combine|^[A-Z]' | head -40
timeout 60 .wgpu-carry/dory-wgpu-regs --ir $OUT/ir attend_coop_d gemm_glu attend_rows > /dev/null 2>&1
ls $OUT/ir | head
kprof() {  # label binary model depth
    echo "== $1: $3 depth $4" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $3 --depth $4 --attention exact --exit none \
        --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
}
old=.wgpu-carry/dory-60ad744
# A first run brings the card's clocks up.
bench_run warm $dory $large 0 exact none 512 16 2 120
for depth in 0 4096; do
    kprof old $old $large $depth
    kprof new $dory $large $depth
done
grep -E '^==|attend_coop_d|split_combine' $OUT/a/profile.txt
for round in 1 2; do
    bench_run old $old $large 0 exact none 512 64 2 120
    bench_run new $dory $large 0 exact none 512 64 2 120
done
bench_run old-4096 $old $large 4096 exact none 512 16 1 150
bench_run new-4096 $dory $large 4096 exact none 512 16 1 150
kprof tiny-base .wgpu-carry/dory-69f7a76 models/dory-tiny 0
kprof tiny-new $dory models/dory-tiny 0
grep -E '^== tiny' -A12 $OUT/a/profile.txt | grep -E '^==|attend_rows|split|combine|gemm'
for round in 1 2; do
    bench_run tiny-base .wgpu-carry/dory-69f7a76 models/dory-tiny 0 exact none 512 128 3 120
    bench_run tiny-new $dory models/dory-tiny 0 exact none 512 128 3 120
done
