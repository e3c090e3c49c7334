#!/usr/bin/env bash
# 2026-12-05, sixth session, third call: what makes the engine's dispatches cost the host
# more than the probe's (call 1: finishing ~1.3-1.7 µs a dispatch whatever its bindings,
# the engine ~3.8). encode_cost now also times its dispatches differing as a step's do:
# and (call 2: two pipelines in turn cost 2.45 µs a dispatch against ~1.2) two pipelines made with one layout, and a step's mix (two pipelines, a bind group each, immediates) with and without a shared layout. Built with
# `bench/wgpu_h200.sh build` at the commit that adds them; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
timeout 90 .wgpu-carry/dory-wgpu-kernels --model models/dory-tiny --dtypes bf16 --quick 2>&1 \
    | grep -v XDG_RUNTIME > $o/a/floors.txt
grep -o '"encode_per_dispatch":[^]]*]' $o/a/floors.txt | tr "{" "\n"
grep -o '"dispatch_cpu_s":[^,]*' $o/a/floors.txt
