#!/usr/bin/env bash
# q8_tiles.wgsl with a run's writes one contiguous tile (call 4's copy ran at ~1 TB/s, 17.5 %
# of a q8_0 pp512): the GPU tests, then pp512 of the q8_0 larger config and dory-tiny on the
# tensor cores, 2 rounds of 3 reps, the GPU's time by kernel of one larger pp512; then the
# larger config's f16 decode at depth 0 and PyTorch (compile + graph) beside it.
# Build: `bench/wgpu_h200.sh build`, carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
for f in .wgpu-carry/*.gz; do [ -e "$f" ] && gunzip -f "$f" && chmod +x "${f%.gz}"; done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
dory=.wgpu-carry/dory
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
[ -f /tmp/wgpu-large-q8/config.json ] || timeout 120 $dory quantize --model $large --out /tmp/wgpu-large-q8 > /dev/null
[ -f /tmp/tiny-q8/config.json ] || timeout 60 $dory quantize --model models/dory-tiny --out /tmp/tiny-q8 > /dev/null
for round in 1 2; do
    for m in /tmp/wgpu-large-q8 /tmp/tiny-q8; do
        timeout 60 $dory bench --backend wgpu --model $m --reps 3 --prompt 512 --gen 0 --attention exact --json 2>&1 \
            | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl
    done
done
DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model /tmp/wgpu-large-q8 --reps 1 --prompt 512 --gen 0 \
    --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
# The larger config's decode (f16, depth 0) and the PyTorch peer in the same call.
timeout 60 $dory bench --backend wgpu --model $large --reps 2 --prompt 512 --gen 32 --attention exact --json 2>&1 \
    | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl
timeout 200 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 | tee -a $o/a/wgpu_torch.jsonl
