#!/usr/bin/env bash
# Built at the twenty-third session, not run (its device time was spent): where the staged
# tensor-core attention starts to pay. The larger config's pp512 with it (the default at 128
# dims) against DORY_WGPU_ATTEND_COOP=0 (attend_rows.wgsl) at depths 0, 512, 1024, 2048 and
# 4096, interleaved two rounds, two repetitions each; then the kernels timed alone at 0 and
# 4096 under both, and issue 9's figures under the new defaults (an H200's, where one comes).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
large_model
for round in 1 2; do
    for depth in 0 512 1024 2048 4096; do
        bench_run coop-$depth $dory $large $depth exact none 512 1 2 120
        (export DORY_WGPU_ATTEND_COOP=0; bench_run rows-$depth $dory $large $depth exact none 512 1 2 120)
    done
done
for depth in 0 4096; do
    for c in default 0; do
        echo "== depth $depth DORY_WGPU_ATTEND_COOP=$c" >> $OUT/a/profile.txt
        (
            [ $c = default ] || export DORY_WGPU_ATTEND_COOP=$c
            DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth $depth \
                --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
        )
    done
done
grep -E '==|attend|kv_parts|prep' $OUT/a/profile.txt | head -40
figures
