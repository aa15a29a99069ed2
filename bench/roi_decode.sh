#!/usr/bin/env bash
# Decoding only what the crop needs (issue 18), in one invocation on a heavy-tailed shard set:
#   1. the bare-loop ceiling (bench_ceiling) per decode: full, DCT-scaled (the whole image),
#      and region (DCT-scaled, only the crop's rows and columns: the node's default now):
#      samples/s and the mean work per sample, over all, large (>= 1800 px) and small images;
#   2. conveyor-node at step 0 (config/default.toml) against PyTorch's DataLoader
#      (bench/peers/torch_loader.py, cv2 and TurboJPEG decoders) and against its own ceiling;
#   3. both again on the same images packed with conveyor-pack --restart (a restart marker per
#      MCU row and their index: the region decode starts at the crop's MCU row), and what the
#      markers and the index cost in bytes.
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
RESTART_DATASET="$DATA_DIR/peers-heavy-$IMAGES-restart"  # the same images: the generator's seed
suffix=""
[[ "${BUSY:-0}" == 1 ]] && suffix="_busy"
RESULT="$BENCH_ROOT/bench/results/roi_decode$suffix.md"
RAW="$LOG_DIR/roi_decode$suffix.jsonl"

"$BENCH_ROOT/scripts/install-deps" python3-torch python3-opencv python3-numpy >&2
build_tools conveyor-pack
ensure_shards "$DATASET" "$IMAGES" 0.10
ensure_shards "$RESTART_DATASET" "$IMAGES" 0.10 --restart 2>>"$LOG_DIR/roi_decode-pack.log"
busy_if_asked
: >"$RAW"

ceiling() {  # ceiling DECODE [DATASET]
  "$CEILING_BIN" --dataset "${2:-$DATASET}" --format shards --epochs "$EPOCHS" --decode "$1"
}
ceiling_restart() {
  ceiling roi "$RESTART_DATASET"
}
ceiling_restart_scaled() {  # what the rewrite's optimised Huffman tables alone give
  ceiling scaled "$RESTART_DATASET"
}
node() {  # node [DATASET]
  "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" --set "dataset.path=\"${1:-$DATASET}\"" \
    --set 'dataset.format="shards"' --set "trainer.epochs=$EPOCHS" \
    --set "pipeline.batch_size=$BATCH" --set trainer.step_ms=0 2>>"$LOG_DIR/roi_decode-node.log"
}
node_restart() {
  node "$RESTART_DATASET"
}
torch_loader() {  # torch_loader DECODER
  "$PYTHON" "$BENCH_ROOT/bench/peers/torch_loader.py" --dataset "$DATASET" --batch-size "$BATCH" \
    --epochs "$EPOCHS" --step-ms 0 --workers "$(nproc)" --decoder "$1" \
    2>>"$LOG_DIR/roi_decode-torch.log"
}

contenders=("ceiling full" "ceiling scaled" "ceiling roi" "ceiling_restart_scaled" "ceiling_restart"
  "node" "node_restart" "torch_loader cv2" "torch_loader turbojpeg")
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

shard_bytes() {  # shard_bytes DIR: the bytes of its shard files
  find "$1" -name '*.cvs' -printf '%s\n' | awk '{ s += $1 } END { print s }'
}
"$PYTHON" - "$RAW" "$(shard_bytes "$DATASET")" "$(shard_bytes "$RESTART_DATASET")" \
  "$(grep -h 'restart index:' "$LOG_DIR"/roi_decode-pack.log 2>/dev/null | tail -1)" \
  >"$RESULT.body" <<'PY'
import json, statistics, sys
raw, plain_bytes, restart_bytes, pack_line = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
runs = {}
for line in open(raw):
    r = json.loads(line)
    runs.setdefault(r["contender"], []).append(r["run"])
med = lambda c, k: statistics.median(run[k] for run in runs[c])
print("## 1. Per decode: the bare-loop ceiling (2 threads), work per sample")
print()
print("| decode | samples/s | mean ms/sample | large (>= 1800 px) ms | small ms |")
print("|---|---|---|---|---|")
names = {"ceiling full": "full (TurboJPEG)", "ceiling scaled": "DCT-scaled, the whole image",
         "ceiling roi": "DCT-scaled, the crop's region only (default)",
         "ceiling_restart_scaled": "DCT-scaled, the whole image, restart-indexed shards",
         "ceiling_restart": "region, restart-indexed shards (--restart): from the crop's MCU row"}
for c, name in names.items():
    print(f"| {name} | {med(c, 'samples_per_s'):.0f} | {med(c, 'mean_ms'):.2f} | "
          f"{med(c, 'large_ms'):.2f} | {med(c, 'small_ms'):.2f} |")
roi, scaled = med("ceiling roi", "samples_per_s"), med("ceiling scaled", "samples_per_s")
restart = med("ceiling_restart", "samples_per_s")
restart_scaled = med("ceiling_restart_scaled", "samples_per_s")
print()
print(f"Region against the whole scaled decode: {roi / scaled:.2f}x samples/s. Restart-indexed "
      f"shards: region {restart / roi:.2f}x the plain shards' region, of which the rewrite's "
      f"optimised Huffman tables alone (the whole scaled decode on both) "
      f"{restart_scaled / scaled:.2f}x.")
print()
print("## 2. conveyor-node at step 0 against PyTorch's DataLoader and its own ceiling")
for n, ceiling, label in (("node", "ceiling roi", "plain shards"),
                          ("node_restart", "ceiling_restart", "restart-indexed shards")):
    node = med(n, "samples_per_s")
    print()
    print(f"### {label}")
    print()
    print("| contender | samples/s | node / it |")
    print("|---|---|---|")
    for c, name in ((n, f"conveyor-node (default topology), {label}"),
                    (ceiling, "its bare-loop ceiling (same work)"),
                    ("torch_loader cv2", "PyTorch DataLoader, cv2 decode (plain shards)"),
                    ("torch_loader turbojpeg", "PyTorch DataLoader, TurboJPEG decode (plain shards)")):
        v = med(c, "samples_per_s")
        print(f"| {name} | {v:.0f} | {node / v:.2f} |")
print()
print("## 3. What the restart markers and the index cost")
print()
print(f"Shard files: {plain_bytes / 1e6:.1f} MB plain, {restart_bytes / 1e6:.1f} MB restart-indexed "
      f"({100.0 * (restart_bytes - plain_bytes) / plain_bytes:+.2f}%).")
if pack_line:
    print()
    print(f"conveyor-pack --restart: {pack_line}")
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
