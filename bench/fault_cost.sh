#!/usr/bin/env bash
# What injected crashes cost: conveyor-node on the heavy-tailed set (12% of the images
# 1800-3200 px), batch 64, 2 epochs, step 0, the default topology (latency_aware) with a large
# restart budget; a clean run beside crashes at 1% and 10% per sample in each role (reader,
# preprocessor, straggler), interleaved round by round in this one invocation. A crash should
# cost what it destroys (the sample in hand, a restart), not back-off waits. Targets: >= 0.95x
# the clean run's samples/s at 1%, >= 0.5x at 10%; lost 0 and duplicates 0 everywhere.
#
#   bench/fault_cost.sh [IMAGES=2000] [ROUNDS=2]
#
# Writes bench/results/fault_cost.{md,csv}; node logs stay in $LOG_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-2000}
ROUNDS=${2:-2}
EPOCHS=2
DATASET="$DATA_DIR/photos-$IMAGES"
RESULTS="$BENCH_ROOT/bench/results"
CSV="$RESULTS/fault_cost.csv"
# A large restart budget: the drill measures the cost of crashing, not an escalation.
BUDGET=(supervision.max_restarts=1000000 supervision.max_sample_retries=50 faults.seed=3)
DRILLS=(clean reader:0.01 reader:0.1 preprocessor:0.01 preprocessor:0.1 straggler:0.01
  straggler:0.1)

# drill_args DRILL: the --set pairs of one drill ("role:rate", or "clean").
drill_args() {
  [[ $1 == clean ]] && return 0
  echo "faults.crash_${1%%:*}=${1##*:}"
}

one_run() {
  local drill=$1 json
  mapfile -t extra < <(drill_args "$drill")
  json=$(run_node "$DATASET" "$LOG_DIR/fault-$drill.log" trainer.epochs="$EPOCHS" \
    trainer.step_ms=0 pipeline.batch_size=64 "${BUDGET[@]}" "${extra[@]}")
  echo "$drill,$(json_field "$json" samples_per_s),$(json_field "$json" restarts),$(json_field "$json" retries),$(json_field "$json" handoffs),$(json_field "$json" lost),$(json_field "$json" duplicates),$(json_field "$json" quarantined)" >>"$CSV"
  log "$drill: $(json_field "$json" samples_per_s) samples/s, $(json_field "$json" restarts) restarts, $(json_field "$json" retries) retries"
}

column() {
  local values
  mapfile -t values < <(awk -F, -v d="$1" -v f="$2" '$1 == d { print $f }' "$CSV")
  median "${values[@]}"
}

report() {
  local d clean rate target
  clean=$(column clean 2)
  echo "# What injected crashes cost"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs, 12% of them 1800-3200 px; $EPOCHS epochs, batch 64, step 0, latency_aware"
  echo "- drill: faults.crash_<role>=<rate>, ${BUDGET[*]}"
  echo "- command: bench/fault_cost.sh $IMAGES $ROUNDS (medians over $ROUNDS rounds, drills interleaved)"
  echo
  echo "| drill | samples/s | of clean | target | restarts | retries | lost | duplicates | quarantined |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for d in "${DRILLS[@]}"; do
    rate=${d##*:}
    target="-"
    [[ $rate == 0.01 ]] && target=">= 0.95"
    [[ $rate == 0.1 ]] && target=">= 0.5"
    echo "| $d | $(column "$d" 2) | $(ratio "$(column "$d" 2)" "$clean") | $target | $(column "$d" 3) | $(column "$d" 4) | $(column "$d" 6) | $(column "$d" 7) | $(column "$d" 8) |"
  done
}

main() {
  build_tools
  ensure_dataset "$DATASET" "$IMAGES" 0.12
  mkdir -p "$RESULTS"
  echo "drill,samples_per_s,restarts,retries,handoffs,lost,duplicates,quarantined" >"$CSV"
  local r d
  for ((r = 0; r < ROUNDS; r++)); do
    for d in "${DRILLS[@]}"; do
      one_run "$d"
    done
  done
  report >"$RESULTS/fault_cost.md"
  cat "$RESULTS/fault_cost.md"
}

main "$@"
