#!/usr/bin/env bash
# The node's structural losses at a pool larger than this machine: conveyor-node with
# PREPROCESSORS preprocessors whose preparation is a modelled wait (bench/plugins/modelled_work.cpp:
# SMALL_MS per image, LARGE_MS per large one, no CPU) over tiny JPEGs (10% of them "large"),
# while what it does besides (reading, dispatching, batching, collating float32 batches) runs
# for real. The ideal is the pool's rate: PREPROCESSORS / the mean preparation per sample, as
# the run measured it (every step but the read and the collate). The defaults model the H100
# machine of issue 34: its bare loop made 3867 samples/s on 16 threads (4.14 ms a sample) and a
# large image costs 11x a small one (bench_ceiling's large_ms / small_ms), so 2.07 and 22.8 ms.
#
# Variants, alternating round by round, each at batch 64 and at batch 2 (the UNet3D recipe's):
# in_order with the default window, in_order with the window of batches alone
# ((prefetch_batches + 1) x batch_size, the default before the pool's lookahead joined it), and
# latency_aware without straggler actors (the model cannot charge their cores: a waiting
# straggler would add a core for free).
#
#   bench/scaling_model.sh [IMAGES=3000] [ROUNDS=3]     PREPROCESSORS=16 SMALL_MS LARGE_MS
#
# Writes bench/results/scaling_model.md. Needs python3-pil and python3-numpy (the tiny JPEGs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-3000}
ROUNDS=${2:-3}
PREPROCESSORS=${PREPROCESSORS:-16}
SMALL_MS=${SMALL_MS:-2.07}
LARGE_MS=${LARGE_MS:-22.8}
EPOCHS=4
BATCHES=(64 2)
PREFETCH=2
DATASET="$DATA_DIR/tiny-$IMAGES"
RESULT="$BENCH_ROOT/bench/results/scaling_model.md"
PLUGIN="$BUILD_DIR/bench/libbench_modelled_work.so"
MODEL_TOPOLOGY="$LOG_DIR/scaling_model.toml"
VARIANTS=(in_order_auto in_order_batches latency_aware)
RUNS=()
for batch in "${BATCHES[@]}"; do
  for variant in "${VARIANTS[@]}"; do
    RUNS+=("$variant $batch")
  done
done
declare -A ratios=()
declare -A rows=()

# The default topology's settings with the plugin loaded and the modelled recipe: decode (a
# tiny JPEG), the modelled wait, resize to 224, normalize (float32, at collate).
write_model_topology() {
  awk '/^\[\[transform\]\]$/ { exit } { print }' "$BENCH_ROOT/config/default.toml" |
    sed "s|^libraries = \[\]$|libraries = [\"$PLUGIN\"]|" >"$MODEL_TOPOLOGY"
  grep -q "^libraries = \[\"$PLUGIN\"\]$" "$MODEL_TOPOLOGY" || {
    log "config/default.toml has no [plugins] libraries to replace"
    return 1
  }
  cat >>"$MODEL_TOPOLOGY" <<EOF
[[transform]]
op = "decode"
strict = true

[[transform]]
op = "modelled_work"
small_ms = $SMALL_MS
large_ms = $LARGE_MS
large_above = 6000

[[transform]]
op = "resize"
size = [224, 224]

[[transform]]
op = "normalize"
mean = [0.485, 0.456, 0.406]
std = [0.229, 0.224, 0.225]
on = "cpu"
dtype = "float32"
EOF
}

# variant_sets VARIANT BATCH: its --set overrides.
variant_sets() {
  case $1 in
    in_order_auto) echo "batching.policy=in_order" ;;
    in_order_batches) echo "batching.policy=in_order pipeline.window_samples=$(((PREFETCH + 1) * $2))" ;;
    latency_aware) echo "batching.policy=latency_aware pipeline.stragglers=0" ;;
  esac
}

# run_variant VARIANT BATCH ROUND: the node's JSON line.
run_variant() {
  local sets=() kv
  for kv in dataset.path="$DATASET" dataset.format=folder trainer.step_ms=0 \
    pipeline.batch_size="$2" pipeline.prefetch_batches=$PREFETCH trainer.epochs=$EPOCHS \
    pipeline.preprocessors="$PREPROCESSORS" $(variant_sets "$1" "$2"); do
    sets+=(--set "$kv")
  done
  "$NODE_BIN" --topology "$MODEL_TOPOLOGY" "${sets[@]}" --log-level info \
    2>"$LOG_DIR/scaling_model-$1-batch$2-round$3.log"
}

# pool_figures JSON: "ideal ratio prep_ms" (the pool's rate from the run's own step times).
pool_figures() {
  "$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
prep = sum(ms for step, ms in d["time_ms_per_sample"].items() if step not in ("read", "collate"))
ideal = d["preprocessors"] * 1000.0 / prep
print("%.0f %.3f %.2f" % (ideal, d["samples_per_s"] / ideal, prep))' "$1"
}

run_round() {
  local round=$1 i run v batch json ideal ratio prep
  for ((i = 0; i < ${#RUNS[@]}; i++)); do
    run=${RUNS[(i + round) % ${#RUNS[@]}]}
    read -r v batch <<<"$run"
    json=$(run_variant "$v" "$batch" "$round")
    read -r ideal ratio prep <<<"$(pool_figures "$json")"
    log "round $round: $v batch $batch $(json_field "$json" samples_per_s) samples/s, ideal $ideal ($ratio)"
    ratios[$run]+="$ratio "
    rows[$run]+="| $round | $v | $batch | $(json_field "$json" window_samples) | $(json_field \
      "$json" peak_in_flight) | $prep | $ideal | $(json_field "$json" samples_per_s) | $ratio |"$'\n'
  done
}

report() {
  local run
  echo "# The node's structural losses at $PREPROCESSORS preprocessors (modelled preparation)"
  echo
  echo "$1"
  echo "- dataset: $IMAGES tiny JPEGs (10% of them 64x64 and modelled as large, the others 32x32), $EPOCHS epochs"
  echo "- recipe: decode, modelled_work (a wait of $SMALL_MS ms, $LARGE_MS ms for a large image; no CPU), resize 224, normalize float32 at collate"
  echo "- node: $PREPROCESSORS preprocessors, batch ${BATCHES[*]}, prefetch_batches $PREFETCH, trainer.step_ms 0, one host feeder"
  echo "- ideal: the pool's rate, $PREPROCESSORS / the mean preparation per sample (every step but read and collate, as the run measured it)"
  echo "- command: bench/scaling_model.sh $IMAGES $ROUNDS"
  echo
  echo "| round | variant | batch | window_samples | peak_in_flight | prep ms/sample | ideal samples/s | node samples/s | node / ideal |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for run in "${RUNS[@]}"; do
    printf '%s' "${rows[$run]}"
  done
  echo
  for run in "${RUNS[@]}"; do
    # shellcheck disable=SC2086  # the ratios, one word each
    echo "- ${run% *}, batch ${run#* }: median node / ideal **$(median ${ratios[$run]})**"
  done
}

main() {
  build_tools bench_modelled_work
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  ensure_made "$DATASET" "$IMAGES tiny JPEGs" "$PYTHON" "$BENCH_ROOT/bench/tiny_images.py" \
    "$IMAGES" 0.10
  write_model_topology
  measure_and_report "$ROUNDS" "$RESULT"
}

main
