#!/usr/bin/env bash
# 2026-12-05, fifth session, fourth call, on call 3's build (97f98b5): what is left under
# dory-tiny's rule now that the step is recorded whole. The floors with the indirect probes
# (what a dependent dispatch costs direct, indirect, and emptied by exit.wgsl), and the
# host's time by phase under the rule and with all passes (is the host or the GPU the
# bound?). Not run: call-5.sh took its measurements on the next build.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
timeout 100 .wgpu-carry/dory-wgpu-kernels --model models/dory-tiny --dtypes bf16 --quick 2>&1 \
    | grep -v XDG_RUNTIME > $o/a/floors.txt
grep -iE "dispatch|floor|tok/s" $o/a/floors.txt | head -30
for EXIT in kl:0.05 none; do
    echo "== --exit $EXIT, DORY_WGPU_PROFILE=host" >> $o/a/profiles.txt
    DORY_WGPU_PROFILE=host timeout 30 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --attention exact --exit $EXIT 2>&1 | grep -v XDG_RUNTIME >> $o/a/profiles.txt
done
cat $o/a/profiles.txt
