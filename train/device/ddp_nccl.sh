#!/usr/bin/env bash
# The trainer over NCCL on every GPU of one machine (torchrun, DDP), against one process on
# one GPU, the same per-process batch and steps: the same script on one GPU or many.
#
#   run (device tool, a machine with 2+ GPUs): bash train/device/ddp_nccl.sh
#   carry: ["train/data/carry"]
#
# Writes $OUT/ddp_{one,all}.jsonl (the trainers' logs) and prints world, backend, loss and
# tokens/s of each. Environment: STEPS (default 30), CONFIG (default dory-tiny).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
CONFIG=${CONFIG:-train/configs/dory-tiny.json}
STEPS=${STEPS:-30}
OUT=${OUT:-/tmp/dory-out}
RUN=/tmp/dory-ddp
mkdir -p "$OUT" "$RUN"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
common=(--config "$CONFIG" --data train/data/carry --seq 1024 --batch 32 --steps "$STEPS" --warmup 5
        --pass-weights 1,1,2,4 --log-every 10 --no-export --ckpt-every 100000)
echo "== one process, one GPU"
timeout 120 python3 train/train.py "${common[@]}" --out "$RUN/one" 2>&1 | tail -3
echo "== torchrun, $gpus processes over NCCL"
timeout 150 torchrun --standalone --nproc_per_node "$gpus" train/train.py "${common[@]}" --out "$RUN/all" 2>&1 | tail -3
cp "$RUN/one/log.jsonl" "$OUT/ddp_one.jsonl" 2>/dev/null
cp "$RUN/all/log.jsonl" "$OUT/ddp_all.jsonl" 2>/dev/null
python3 - "$RUN" <<'PY'
import json, sys
from pathlib import Path
for name in ("one", "all"):
    f = Path(sys.argv[1]) / name / "log.jsonl"
    if not f.exists():
        print(f"{name}: no log"); continue
    rec = [json.loads(l) for l in f.read_text().splitlines()]
    start = next(r for r in rec if r.get("event") == "start")
    steps = [r for r in rec if "loss" in r]
    print(f"{name}: world {start['world']} backend {start.get('backend')} tokens/step {start['tokens_per_step']}: "
          f"loss {steps[0]['loss']} → {steps[-1]['loss']} at step {steps[-1]['step']}, "
          f"last window {steps[-1]['tok_s']} tok/s ({steps[-1]['tok_s_gpu']} per GPU)")
PY
