#!/usr/bin/env bash
# Decoding only what the crop needs (issue 18), in one invocation on a heavy-tailed shard set:
#   1. the bare-loop ceiling (bench_ceiling) per decode: full, DCT-scaled (the whole image),
#      and region (DCT-scaled, only the crop's rows and columns: the node's default now):
#      samples/s and the mean work per sample, over all, large (>= 1800 px) and small images;
#   2. conveyor-node at step 0 (config/default.toml) against PyTorch's DataLoader
#      (bench/peers/torch_loader.py, cv2 and TurboJPEG decoders) and against its own ceiling.
# ROUNDS rounds, every contender once a round, the order reversed on even rounds; medians.
#
#   bench/roi_decode.sh [IMAGES=1000] [ROUNDS=3]
#
# BUSY=1 adds two competing CPU-bound processes. Writes bench/results/roi_decode.md
# (BUSY=1: roi_decode_busy.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-3}
EPOCHS=2
BATCH=64
DATASET="$DATA_DIR/peers-heavy-$IMAGES"
suffix=""
[[ "${BUSY:-0}" == 1 ]] && suffix="_busy"
RESULT="$BENCH_ROOT/bench/results/roi_decode$suffix.md"
RAW="$LOG_DIR/roi_decode$suffix.jsonl"

"$BENCH_ROOT/scripts/install-deps" python3-torch python3-opencv python3-numpy >&2
build_tools conveyor-pack
ensure_shards "$DATASET" "$IMAGES" 0.10
busy_if_asked
: >"$RAW"

ceiling() {  # ceiling DECODE
  "$CEILING_BIN" --dataset "$DATASET" --format shards --epochs "$EPOCHS" --decode "$1"
}
node() {
  "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" --set "dataset.path=\"$DATASET\"" \
    --set 'dataset.format="shards"' --set "trainer.epochs=$EPOCHS" \
    --set "pipeline.batch_size=$BATCH" --set trainer.step_ms=0 2>>"$LOG_DIR/roi_decode-node.log"
}
torch_loader() {  # torch_loader DECODER
  "$PYTHON" "$BENCH_ROOT/bench/peers/torch_loader.py" --dataset "$DATASET" --batch-size "$BATCH" \
    --epochs "$EPOCHS" --step-ms 0 --workers "$(nproc)" --decoder "$1" \
    2>>"$LOG_DIR/roi_decode-torch.log"
}

contenders=("ceiling full" "ceiling scaled" "ceiling roi" "node" "torch_loader cv2"
  "torch_loader turbojpeg")
for ((round = 1; round <= ROUNDS; round++)); do
  order=("${contenders[@]}")
  if ((round % 2 == 0)); then
    for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do
      tmp=${order[i]}
      order[i]=${order[j]}
      order[j]=$tmp
    done
  fi
  for c in "${order[@]}"; do
    log "round $round: $c"
    json=$($c)
    echo "{\"contender\":\"$c\",\"round\":$round,\"run\":$json}" >>"$RAW"
  done
done

"$PYTHON" - "$RAW" "$IMAGES" "$EPOCHS" "$BATCH" "$ROUNDS" >"$RESULT.body" <<'PY'
import json, statistics, sys
raw, images, epochs, batch, rounds = sys.argv[1], *sys.argv[2:]
runs = {}
for line in open(raw):
    r = json.loads(line)
    runs.setdefault(r["contender"], []).append(r["run"])
med = lambda c, k: statistics.median(run[k] for run in runs[c])
print("## 1. Per decode: the bare-loop ceiling (2 threads), work per sample")
print()
print("| decode | samples/s | mean ms/sample | large (>= 1800 px) ms | small ms |")
print("|---|---|---|---|---|")
names = {"full": "full (TurboJPEG)", "scaled": "DCT-scaled, the whole image",
         "roi": "DCT-scaled, the crop's region only (default)"}
for d in ("full", "scaled", "roi"):
    c = f"ceiling {d}"
    print(f"| {names[d]} | {med(c, 'samples_per_s'):.0f} | {med(c, 'mean_ms'):.2f} | "
          f"{med(c, 'large_ms'):.2f} | {med(c, 'small_ms'):.2f} |")
roi, scaled = med("ceiling roi", "samples_per_s"), med("ceiling scaled", "samples_per_s")
print()
print(f"Region against the whole scaled decode: {roi / scaled:.2f}x samples/s.")
print()
print("## 2. conveyor-node at step 0 against PyTorch's DataLoader and its own ceiling")
print()
print("| contender | samples/s | node / it |")
print("|---|---|---|")
node = med("node", "samples_per_s")
for c, name in (("node", "conveyor-node (default topology)"),
                ("ceiling roi", "its bare-loop ceiling (same work)"),
                ("torch_loader cv2", "PyTorch DataLoader, cv2 decode"),
                ("torch_loader turbojpeg", "PyTorch DataLoader, TurboJPEG decode")):
    v = med(c, "samples_per_s")
    print(f"| {name} | {v:.0f} | {node / v:.2f} |")
PY
{
  echo "# Decoding only what the crop needs"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs, 10% of them 1800-3200 px, in record shards"
  echo "- every run: the ImageNet training recipe (decode, random_resized_crop 224, flip,"
  echo "  normalize), batch $BATCH, $EPOCHS epochs, $(nproc) workers; medians of $ROUNDS rounds"
  echo "- command: BUSY=${BUSY:-0} bench/roi_decode.sh $IMAGES $ROUNDS"
  echo
  cat "$RESULT.body"
} >"$RESULT"
rm -f "$RESULT.body"
cat "$RESULT"
