#!/usr/bin/env bash
# A decoded row's attention in wide workgroups (DORY_WGPU_ATTEND_WG): tiles of WG / LANES
# keys, so that a short span is one chunk of one tile (written into z, no join) or a few.
# Same build as call-1.sh. Decode of dory-tiny after pp512 (its sliding layers see 256 keys,
# its full one ~600) and of the larger config at depths 0 (~528 keys), 4096 and 32768,
# exact, each setting once, the defaults first and last; then the GPU's time by kernel in
# decode under the defaults and the first wide setting.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
w=DORY_WGPU_ATTEND_WG
per=DORY_WGPU_ATTEND_PER
lanes=DORY_WGPU_ATTEND_LANES
OUT=$o/a BUDGET=440 SWEEP_DEPTHS="0 4096 32768" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults $w=1024+$per=256 $w=1024+$lanes=8+$per=128 $w=512+$per=128 $w=1024+$per=1024 defaults" \
    bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for s in "" "$w=1024 $per=256"; do
    for m in "models/dory-tiny 128" "/tmp/wgpu-large 32"; do
        set -- $m
        echo "== ${s:-defaults}: $1" >> $o/b/profile.txt
        env $s DORY_WGPU_PROFILE=1 timeout 40 .wgpu-carry/dory bench --backend wgpu --model $1 --reps 1 \
            --prompt 1 --gen $2 --exit none --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/b/profile.txt
    done
done
