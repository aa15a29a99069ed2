#!/usr/bin/env bash
# The feeder over its ring of slots (issue 14: core/feeding, the host engine inline and in
# place) against the feeder before it (a plain host ring), on the whole hot path: conveyor-node
# of this tree and of BASE_NODE (a build of the baseline commit), alternating in one
# invocation on the heavy-tailed synthetic set (default topology, in_order, batch 64,
# trainer.step_ms 0, 224x224 float32 batches), so that both see the same machine. The figure is
# the median over rounds of this / base, in samples/s and samples per CPU-second. BUSY=1 adds
# two competing CPU-bound processes at normal priority for the whole run.
#
#   BASE_NODE=/path/to/base/conveyor-node [BASE_TOPOLOGY=its config/default.toml] \
#     bench/feeder_ring.sh [IMAGES=1000] [ROUNDS=5]
#
# BASE_TOPOLOGY: the baseline tree's default topology (an older node refuses keys it does not
# know); default: this tree's.
# Writes bench/results/feeder_ring.md (BUSY=1: feeder_ring_busy.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-5}
EPOCHS=2
DATASET="$DATA_DIR/heavy-$IMAGES"
BASE_NODE=${BASE_NODE:?set BASE_NODE to the baseline build\'s conveyor-node}
suffix=""
[[ "${BUSY:-0}" == 1 ]] && suffix="_busy"
RESULT="$BENCH_ROOT/bench/results/feeder_ring$suffix.md"

build_tools
ensure_dataset "$DATASET" "$IMAGES" 0.1

busy_if_asked

BASE_TOPOLOGY=${BASE_TOPOLOGY:-$BENCH_ROOT/config/default.toml}

run_with() {  # run_with NODE TOPOLOGY ROUND NAME
  local node=$1 topology=$2
  shift 2
  NODE_BIN=$node TOPOLOGY=$topology run_node "$DATASET" "$LOG_DIR/feeder_ring-$2-round$1.log" trainer.step_ms=0 \
    pipeline.batch_size=64 trainer.epochs="$EPOCHS" batching.policy=in_order
}

new_runs=()
base_runs=()
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then
    n=$(run_with "$NODE_BIN" "$BENCH_ROOT/config/default.toml" "$round" new)
    b=$(run_with "$BASE_NODE" "$BASE_TOPOLOGY" "$round" base)
  else
    b=$(run_with "$BASE_NODE" "$BASE_TOPOLOGY" "$round" base)
    n=$(run_with "$NODE_BIN" "$BENCH_ROOT/config/default.toml" "$round" new)
  fi
  log "round $round: ring $n"
  log "round $round: base $b"
  new_runs+=("$n")
  base_runs+=("$b")
done

# collate_ms JSON: the feeder's own time per sample (writing it into its slot).
collate_ms() {
  "$PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["time_ms_per_sample"]["collate"])' "$1"
}

per_cpu() {
  awk -v s="$(json_field "$1" samples)" -v c="$(json_field "$1" cpu_s)" 'BEGIN { printf "%.1f\n", s / c }'
}

{
  echo "# The feeder over its ring of slots vs the feeder before it (busy=${BUSY:-0})"
  echo
  machine_description
  echo "- baseline: $BASE_NODE"
  echo "- dataset: $IMAGES synthetic JPEGs (10% of them 1800-3200 px), image folder, $EPOCHS epochs"
  echo "- node: default topology, in_order, batch 64 (224x224 float32), trainer.step_ms 0"
  echo "- command: BUSY=${BUSY:-0} BASE_NODE=... bench/feeder_ring.sh $IMAGES $ROUNDS"
  echo
  echo "| round | base samples/s | ring samples/s | ring / base | base samples/CPU-s | ring samples/CPU-s | ring / base (CPU) |"
  echo "|---|---|---|---|---|---|---|"
  rates=()
  cpus=()
  new_collate=()
  base_collate=()
  for i in "${!new_runs[@]}"; do
    n=${new_runs[i]} b=${base_runs[i]}
    nr=$(json_field "$n" samples_per_s) br=$(json_field "$b" samples_per_s)
    nc=$(per_cpu "$n") bc=$(per_cpu "$b")
    rates+=("$(ratio "$nr" "$br")")
    cpus+=("$(ratio "$nc" "$bc")")
    new_collate+=("$(collate_ms "$n")")
    base_collate+=("$(collate_ms "$b")")
    echo "| $((i + 1)) | $br | $nr | ${rates[i]} | $bc | $nc | ${cpus[i]} |"
  done
  echo
  echo "Median ring / base: **$(median "${rates[@]}")** samples/s, $(median "${cpus[@]}") samples per CPU-second."
  echo "The feeder's own time (time_ms_per_sample.collate: writing a sample into its slot), median:"
  echo "ring $(median "${new_collate[@]}") ms, base $(median "${base_collate[@]}") ms per sample."
} >"$RESULT"
cat "$RESULT"
