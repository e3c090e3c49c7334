#!/usr/bin/env bash
# The binaries call-2.sh (or call-3.sh, its short form) runs, built here from the repository
# root with attend-coop.patch applied to this tree first (`git apply
# bench/logs/h200-2026-12-10/attend-coop.patch`: attend_coop's softmax off its bank
# conflicts, each tile's values and the next tile's keys read a step ahead; taken off main
# untested, the session's device time spent): this tree's binaries and GPU tests, cbc2eea's
# (the banks alone), 60ad744's (before either; main's attend_coop) and 69f7a76's;
# dory-wgpu-regs of this tree, of cbc2eea and of cbc2eea with 60ad744's attend_coop.wgsl.
set -e
rm -f .wgpu-carry/*
bash bench/wgpu_h200.sh build 60ad744
bash bench/wgpu_h200.sh build 69f7a76
bash bench/wgpu_h200.sh build cbc2eea
tree=$PWD
regs() {  # name: dory-wgpu-regs of the worktree as it stands
    (cd /tmp/dory-build-cbc2eea && find crates -name '*.rs' -o -name '*.wgsl' | xargs touch \
        && CARGO_TARGET_DIR=$tree/target cargo build --release --locked -q -p dory-wgpu-bench --bin dory-wgpu-regs)
    cp target/release/dory-wgpu-regs .wgpu-carry/dory-wgpu-regs-$1
    strip .wgpu-carry/dory-wgpu-regs-$1
    gzip -f .wgpu-carry/dory-wgpu-regs-$1
}
regs cbc2eea
git -C /tmp/dory-build-cbc2eea checkout -q 60ad744 -- crates/dory-wgpu/src/ops/attend_coop.wgsl crates/dory-wgpu/src/kernels.rs
regs 60ad744
git -C /tmp/dory-build-cbc2eea checkout -q cbc2eea -- crates
find crates -name '*.rs' -o -name '*.wgsl' | xargs touch
ls -la .wgpu-carry
