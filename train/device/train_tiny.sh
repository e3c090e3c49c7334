#!/usr/bin/env bash
# Trains, evaluates and exports dory-tiny on one lent H200 in one device call (≤ 10 min).
#
#   run (device tool): bash train/device/train_tiny.sh     carry: ["train/data/carry"]
#
# 1. a check of the GPU's forward against float64 on the CPU, and a throughput bench at
#    1 and 4 passes (tokens/s, MFU), which also compiles the layers;
# 2. the main run: WSD schedule on a time budget, stopped at 80 % (the start of the decay);
# 3. two decays from that checkpoint, the same number of steps each: one in the parallel
#    regime, one with half its batches in the decode regime (what decoding sees, §5);
#    the second only if the call has time left for it;
# 4. validation perplexity per pass and in the decode semantics for each, and the model
#    of the lower decode-semantics perplexity at 4 passes exported to $OUT as bf16 shards
#    (files back from a call are ≤ 16 MiB), with the logs.
# Environment: BUDGET (seconds of the main run's full schedule, default 300), LIMIT (the
# call's seconds, default 570), EXTRA (more train.py arguments).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
BUDGET=${BUDGET:-300}
LIMIT=${LIMIT:-570}
OUT=${OUT:-/tmp/dory-out}
RUN=/tmp/dory-run
DATA=train/data/carry
mkdir -p "$OUT" "$RUN"
exec > >(tee -a "$OUT/run.log") 2>&1
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import torch, tokenizers, safetensors, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'

COMMON=(--config train/configs/dory-tiny.json --data "$DATA" --seq 1024 --batch 64 --lr 2e-3
        --warmup 100 --pass-weights 1,1,2,4 --readout-loss 0.2 --dropout 0.1 --compile --log-every 25 --eval-every 250 --eval-windows 48
        --ckpt-every 100000 ${EXTRA:-})

echo "== main run (budget ${BUDGET}s, stopped at 0.8) — $(left)s left"
python3 train/train.py "${COMMON[@]}" --out "$RUN/main" --time-budget "$BUDGET" --stop-at 0.8 \
    --check --bench-steps 10 --no-export || { echo "main run failed"; exit 1; }
STEP=$(python3 -c "import torch; print(torch.load('$RUN/main/ckpt.pt', weights_only=False)['step'])")
TOTAL=$(( STEP * 5 / 4 ))
echo "== main run stopped at step $STEP; the decays run to step $TOTAL"

decay() {  # name, decode fraction
    mkdir -p "$RUN/$1"
    cp "$RUN/main/ckpt.pt" "$RUN/$1/ckpt.pt"
    timeout $(( $(left) - 15 )) python3 train/train.py "${COMMON[@]}" --out "$RUN/$1" --resume \
        --steps "$TOTAL" --decode-frac "$2" --decode-iters 1 --decode-eval-iters 4 --shard-mb 15
}
echo "== decay, parallel regime — $(left)s left"
decay parallel 0
if [ "$(left)" -gt 200 ]; then
    echo "== decay, half the batches in the decode regime — $(left)s left"
    decay decode 0.5
else
    echo "== no time left for the decode-regime decay"
fi

python3 - "$RUN" "$OUT" <<'EOF'
import json, shutil, sys
from pathlib import Path
run, out = Path(sys.argv[1]), Path(sys.argv[2])
summary = {}
for name in ("parallel", "decode"):
    f = run / name / "eval.json"
    if f.exists():
        summary[name] = json.loads(f.read_text())
if summary:
    best = min(summary, key=lambda n: summary[n]["val_ppl_decode"]["4"][-1])
else:  # no decay finished in time: ship the main run's checkpoint rather than nothing
    import subprocess
    best = "main"
    subprocess.run([sys.executable, "train/export.py", "checkpoint", str(run / "main/ckpt.pt"),
                    str(run / "main/model"), "--shard-mb", "15"], check=True)
summary["shipped"] = best
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
logs = {n: [json.loads(l) for l in (run / n / "log.jsonl").read_text().splitlines()]
        for n in ("main", "parallel", "decode") if (run / n / "log.jsonl").exists()}
(out / "logs.json").write_text(json.dumps(logs) + "\n")
model = out / "model"
model.mkdir()
for f in (run / best / "model").iterdir():
    if f.name != "tokenizer.json":
        shutil.copy(f, model / f.name)
print(json.dumps({k: v for k, v in summary.items()}, indent=1))
EOF
echo "== done in $(( $(date +%s) - T0 ))s"
