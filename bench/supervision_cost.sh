#!/usr/bin/env bash
# What supervision costs: conveyor-node before supervision existed (BASELINE_NODE, a binary
# built from an older tree), the supervised node with no faults, and the supervised node with
# 1% injected crashes per sample in every role (reader, preprocessor, straggler). They run
# alternately in this one invocation, so all see the same machine load; the figures are the
# medians over rounds of samples/s relative to the baseline. Target with no faults: cost < 3%.
#
#   BASELINE_NODE=/path/to/old/conveyor-node bench/supervision_cost.sh [IMAGES=1000] [ROUNDS=5]
#
# Writes bench/results/supervision.md; the node logs stay in build-bench/bench-logs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-5}
EPOCHS=2
DATASET="$DATA_DIR/heavy-$IMAGES"
RESULT="$BENCH_ROOT/bench/results/supervision.md"
BASELINE_NODE=${BASELINE_NODE:?set BASELINE_NODE to a conveyor-node built before supervision}
# The drill restarts often (about 3 crashes per 100 samples): a generous restart intensity and
# a short backoff, so that the figure is the cost of crashing and re-issuing, not of waiting.
DRILL=(faults.crash_reader=0.01 faults.crash_preprocessor=0.01 faults.crash_straggler=0.01
  faults.seed=1 supervision.max_restarts=100000 supervision.backoff_min_ms=1
  supervision.backoff_max_ms=10 supervision.max_sample_retries=20)
COMMON=(trainer.step_ms=0 pipeline.batch_size=64 trainer.epochs="$EPOCHS")
KINDS=(baseline supervised drill)

declare -A runs

# Full decodes for all: the baseline predates `scaled` (it rejects the key), and scaled decode
# is not what this compares.
BASE_TOPOLOGY="$LOG_DIR/supervision-baseline.toml"
FULL_TOPOLOGY="$LOG_DIR/supervision-full-decode.toml"
write_topologies() {
  mkdir -p "$LOG_DIR"
  grep -v '^scaled *=' "$BENCH_ROOT/config/default.toml" >"$BASE_TOPOLOGY"
  sed 's/^scaled *= *true/scaled = false/' "$BENCH_ROOT/config/default.toml" >"$FULL_TOPOLOGY"
  grep -q '^scaled = false' "$FULL_TOPOLOGY"
}

run_kind() {
  local kind=$1 round=$2 logfile="$LOG_DIR/supervision-$1-round$2.log"
  case $kind in
    baseline)
      NODE_BIN=$BASELINE_NODE TOPOLOGY=$BASE_TOPOLOGY run_node "$DATASET" "$logfile" "${COMMON[@]}"
      ;;
    supervised) TOPOLOGY=$FULL_TOPOLOGY run_node "$DATASET" "$logfile" "${COMMON[@]}" ;;
    drill) TOPOLOGY=$FULL_TOPOLOGY run_node "$DATASET" "$logfile" "${COMMON[@]}" "${DRILL[@]}" ;;
  esac
}

# One round: the three kinds, in an order that rotates from round to round.
run_round() {
  local round=$1 i kind out
  for i in 0 1 2; do
    kind=${KINDS[$(((i + round) % 3))]}
    out=$(run_kind "$kind" "$round")
    log "round $round: $kind $out"
    runs[$kind,$round]=$out
  done
}

field_over_rounds() {
  local kind=$1 key=$2 r
  for ((r = 1; r <= ROUNDS; r++)); do
    json_field "${runs[$kind,$r]}" "$key"
  done
}

report() {
  local kind r base rates=() ratios
  echo "# What supervision costs"
  echo
  echo "$1"
  echo "- dataset: $IMAGES synthetic JPEGs (10% of them 1800-3200 px), image folder, $EPOCHS epochs"
  echo "- node: default topology (latency_aware) with full decodes (scaled = false), batch 64, trainer.step_ms 0"
  echo "- baseline: $BASELINE_NODE (built $(date -u -r "$BASELINE_NODE" '+%Y-%m-%d %H:%M UTC'), before supervision)"
  echo "- drill: ${DRILL[*]}"
  echo "- command: BASELINE_NODE=... bench/supervision_cost.sh $IMAGES $ROUNDS"
  echo
  echo "| kind | samples/s per round | median samples/s | median / baseline | restarts (median) | retries (median) | lost | duplicates |"
  echo "|---|---|---|---|---|---|---|---|"
  base=$(median $(field_over_rounds baseline samples_per_s))
  for kind in "${KINDS[@]}"; do
    mapfile -t rates < <(field_over_rounds "$kind" samples_per_s)
    local med lost dup restarts retries
    med=$(median "${rates[@]}")
    lost=$(field_over_rounds "$kind" lost | awk '{ s += $1 } END { print s }')
    dup=$(field_over_rounds "$kind" duplicates | awk '{ s += $1 } END { print s }')
    if [[ $kind == baseline ]]; then
      restarts="-" retries="-"
    else
      restarts=$(median $(field_over_rounds "$kind" restarts))
      retries=$(median $(field_over_rounds "$kind" retries))
    fi
    echo "| $kind | ${rates[*]} | $med | $(ratio "$med" "$base") | $restarts | $retries | $lost | $dup |"
  done
}

main() {
  build_tools
  write_topologies
  ensure_dataset "$DATASET" "$IMAGES" 0.1
  measure_and_report "$ROUNDS" "$RESULT"
}

main
