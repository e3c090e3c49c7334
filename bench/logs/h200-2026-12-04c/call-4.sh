#!/usr/bin/env bash
# Device call of 2026-12-04, third session: the floors of both models alone, the chain of
# a token's stages now reading each layer's region on every pass (call 3 streamed every
# stage from a region of its own), with the engine's three more stages a layer-pass as a
# variant, after a warm-up (call 3's first chain ran before the clocks were up).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=300 bash bench/wgpu_h200.sh run floors
