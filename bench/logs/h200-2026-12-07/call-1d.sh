#!/usr/bin/env bash
# 2026-12-07, eighteenth session, call 1d: the seventeenth session's call 3, run last on the
# same warm H100 (the command as sent, made a script; /tmp/wgpu-large left by call 1b):
# each decode kernel dispatched with no workgroups (DORY_WGPU_EMPTY: its launch and
# barriers kept) and twice in a row (DORY_WGPU_TWICE), with the binary of 2aa0000 plus
# measure-3.patch (45cf9ce), in one part as main. Exact, all passes, depth 0, one run each.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
export DORY_WGPU_PART=0
large=/tmp/wgpu-large
ls $large >/dev/null || large_model
m=.wgpu-carry/dory-45cf9ce
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
