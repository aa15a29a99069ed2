#!/usr/bin/env bash
# The map of in_order vs latency_aware batching: stall fraction and epoch time over batch size
# x window (pipeline.prefetch_batches) x trainer demand (70/85/100% of what the CPUs can
# prepare), 3 epochs each, both policies interleaved in one invocation on one heavy-tailed
# dataset. Writes bench/results/latency_map.md, .csv and .png (a heatmap of the stall
# difference). Usage: bench/latency_map.sh [IMAGES] (default 400)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

images=${1:-400}
epochs=3
batches=(4 16 64)
windows=(2 4)
demands=(0.70 0.85 1.00)
policies=(in_order latency_aware)
results="$BENCH_ROOT/bench/results"
csv="$results/latency_map.csv"

# node ARGS...: one conveyor-node run on the map's dataset; prints its JSON line.
node() {
  "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" --log-level warn \
    --set dataset.path="$dataset" --set dataset.format=folder --set trainer.epochs="$epochs" "$@"
}

# capacity: samples/s the CPUs prepare with no trainer wait (step 0), the demand's 100%.
capacity() {
  local json
  json=$(node --set trainer.epochs=1 --set pipeline.batch_size=16)
  json_field "$json" samples_per_s
}

# step_ms BATCH DEMAND CAPACITY: the trainer step that asks for DEMAND x CAPACITY samples/s.
step_ms() { awk -v b="$1" -v d="$2" -v c="$3" 'BEGIN { printf "%.3f\n", 1000 * b / (d * c) }'; }

run_grid() {
  local cap=$1 b w d p step json
  echo "batch,window,demand,policy,step_ms,stall_fraction,epoch_s,samples_per_s,handoffs,lost,duplicates" >"$csv"
  for b in "${batches[@]}"; do
    for w in "${windows[@]}"; do
      for d in "${demands[@]}"; do
        step=$(step_ms "$b" "$d" "$cap")
        for p in "${policies[@]}"; do
          json=$(node --set pipeline.batch_size="$b" --set pipeline.prefetch_batches="$w" \
            --set trainer.step_ms="$step" --set batching.policy="$p")
          log "batch $b window $w demand $d $p: stall $(json_field "$json" stall_fraction)"
          echo "$b,$w,$d,$p,$step,$(json_field "$json" stall_fraction),$(json_field "$json" epoch_s),$(json_field "$json" samples_per_s),$(json_field "$json" handoffs),$(json_field "$json" lost),$(json_field "$json" duplicates)" >>"$csv"
        done
      done
    done
  done
}

main() {
  build_tools
  dataset="$DATA_DIR/map-$images"
  ensure_dataset "$dataset" "$images" 0.10
  mkdir -p "$results"
  local cap
  cap=$(capacity)
  log "capacity: $cap samples/s"
  run_grid "$cap"
  "$BENCH_ROOT/scripts/install-deps" python3-matplotlib python3-numpy >/dev/null
  {
    echo "# Latency-aware vs in-order batching: the map"
    echo
    machine_description
    echo "- dataset: $images synthetic JPEGs (10% of them 1800-3200 px), $epochs epochs per run"
    echo "- capacity (step 0, batch 16): $cap samples/s; demand d sets step_ms = batch / (d x capacity)"
    echo "- command: bench/latency_map.sh $images"
    echo
  } >"$results/latency_map.md"
  "$PYTHON" "$BENCH_ROOT/bench/plot_latency_map.py" "$csv" "$results/latency_map"
}

main "$@"
