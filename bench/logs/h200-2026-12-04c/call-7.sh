#!/usr/bin/env bash
# Device call of 2026-12-04, third session: the floors of both models again, the MLP probe
# now also with m coherent and copied into workgroup memory once a workgroup after the
# barrier (STAGED), the form a correct persistent kernel on the H200 would take (call 6:
# coherent loads of m by every down row cost more than the one dispatch saves).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=240 bash bench/wgpu_h200.sh run floors
