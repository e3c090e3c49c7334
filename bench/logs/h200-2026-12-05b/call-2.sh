#!/usr/bin/env bash
# attend_coop.wgsl in workgroups of four subgroups (a block of 16 rows, each subgroup 4, in
# step over the same tiles), the weights written to the scratch a run of 32 halves at a
# time, the tile's e_j in workgroup memory: the GPU tests, also with the weights through
# workgroup memory (DORY_WGPU_COOP_VARIANT=4); then pp512 of the larger config at 4096
# under each form and diagnostic (1: no value sums' products, 2: no scores' products, 3:
# neither), at depth 0, and dory-tiny's; the GPU's time by kernel at 4096.
# Not run yet (no device was lent again that session). Its kernel is on the branch
# attend-coop-4 (main keeps call 1's, the one that ran right on the H200): build there,
# `git checkout attend-coop-4 && bench/wgpu_h200.sh build`, carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
for v in 0 4; do
    DORY_WGPU_COOP_VARIANT=$v CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
        > $o/a/wgpu_tests_v$v.log
    echo "== variant $v"; grep -E "test result|panicked|FAILED" $o/a/wgpu_tests_v$v.log | head -20
done
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
b() { # label env... -- model depth reps
    local label=$1; shift
    env "$@" timeout 60 $dory bench --backend wgpu --model $M --depth $D --reps $R --prompt 512 --gen 0 \
        --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/a/bench.jsonl
}
for round in 1 2; do
    M=$large D=4096 R=1
    b rows DORY_WGPU_ATTEND_COOP=0
    for v in 0 4 1 2 3; do b coop-v$v DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
    M=$large D=0 R=2
    b rows DORY_WGPU_ATTEND_COOP=0
    for v in 0 4; do b coop-v$v DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
    M=models/dory-tiny D=0 R=3
    b rows DORY_WGPU_ATTEND_COOP=0
    for v in 0 4; do b coop-v$v DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
done
for v in 0 4; do
    echo "== DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v" >> $o/a/profile.txt
    DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu \
        --model $large --depth 4096 --reps 1 --prompt 512 --gen 0 --attention exact 2>&1 | grep -v XDG_RUNTIME \
        | grep -E 'pp512|attend|kv_parts|prep' >> $o/a/profile.txt
done
cat $o/a/profile.txt
