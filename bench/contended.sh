#!/usr/bin/env bash
# Latency-aware vs in_order batching on a busy machine: conveyor-node on a heavy-tailed set
# (12% of the images 1800-3200 px, like real photos), batch 64, 2 epochs, with 0, 1 and 2
# competing busy processes at normal priority (a trainer's own Python, NCCL and logging
# threads on a real node). For each level of contention, in one invocation and interleaved
# round by round: both policies at step 0 (samples/s), then both at 85% of in_order's step-0
# capacity measured at that level (stall). Plus the earlier map's point (idle, batch 4,
# window 2, 85% demand). Figures are medians over rounds.
#
#   bench/contended.sh [IMAGES=2000] [ROUNDS=2]
#
# Writes bench/results/contended.{md,csv}; node logs stay in $LOG_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-2000}
ROUNDS=${2:-2}
EPOCHS=2
DATASET="$DATA_DIR/photos-$IMAGES"
RESULTS="$BENCH_ROOT/bench/results"
CSV="$RESULTS/contended.csv"
POLICIES=(in_order latency_aware)
trap stop_competitors EXIT

# one_run LABEL POLICY KEY=VALUE...: a node run; appends its CSV row, prints its JSON.
one_run() {
  local label=$1 policy=$2 json
  shift 2
  json=$(run_node "$DATASET" "$LOG_DIR/contended-$label-$policy.log" batching.policy="$policy" \
    trainer.epochs="$EPOCHS" "$@")
  echo "$label,$policy,$(json_field "$json" step_ms),$(json_field "$json" samples_per_s),$(json_field "$json" stall_fraction),$(json_field "$json" handoffs),$(json_field "$json" lost),$(json_field "$json" duplicates),$(json_field "$json" cpu_s)" >>"$CSV"
  log "$label $policy: $(json_field "$json" samples_per_s) samples/s, stall $(json_field "$json" stall_fraction), handoffs $(json_field "$json" handoffs)"
}

# column LABEL POLICY FIELD: the median of FIELD (a CSV column number) over the label's rounds.
column() {
  local values
  mapfile -t values < <(awk -F, -v l="$1" -v p="$2" -v f="$3" '$1 == l && $2 == p { print $f }' "$CSV")
  median "${values[@]}"
}

# level N: the runs with N competitors.
level() {
  local n=$1 r p cap step
  start_competitors "$n"
  for ((r = 0; r < ROUNDS; r++)); do
    for p in "${POLICIES[@]}"; do
      one_run "busy$n-step0" "$p" trainer.step_ms=0 pipeline.batch_size=64
    done
  done
  cap=$(column "busy$n-step0" in_order 4)
  step=$(awk -v c="$cap" 'BEGIN { printf "%.3f\n", 1000 * 64 / (0.85 * c) }')
  for ((r = 0; r < ROUNDS; r++)); do
    for p in "${POLICIES[@]}"; do
      one_run "busy$n-85" "$p" trainer.step_ms="$step" pipeline.batch_size=64
    done
  done
  stop_competitors
}

# The earlier map's point: batch 4, window 2, 85% of the batch-4 capacity, idle.
map_point() {
  local r p cap step
  for ((r = 0; r < ROUNDS; r++)); do
    one_run map-cap in_order trainer.step_ms=0 pipeline.batch_size=4 pipeline.prefetch_batches=2
  done
  cap=$(column map-cap in_order 4)
  step=$(awk -v c="$cap" 'BEGIN { printf "%.3f\n", 1000 * 4 / (0.85 * c) }')
  for ((r = 0; r < ROUNDS; r++)); do
    for p in "${POLICIES[@]}"; do
      one_run map-85 "$p" trainer.step_ms="$step" pipeline.batch_size=4 pipeline.prefetch_batches=2
    done
  done
}

# per_cpu_s LABEL POLICY: the median of samples / cpu_s over the label's rounds.
per_cpu_s() {
  local values
  mapfile -t values < <(awk -F, -v l="$1" -v p="$2" -v n="$((IMAGES * EPOCHS))" \
    '$1 == l && $2 == p { printf "%.1f\n", n / $9 }' "$CSV")
  median "${values[@]}"
}

pct() { awk -v v="$1" 'BEGIN { printf "%.1f%%", 100 * v }'; }

report() {
  local n io la sio sla
  echo "# Latency-aware vs in_order on a busy machine"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs, 12% of them 1800-3200 px; $EPOCHS epochs, batch 64, default topology"
  echo "- competitors: busy Python loops at normal priority, in the node's session"
  echo "- command: bench/contended.sh $IMAGES $ROUNDS (medians over $ROUNDS rounds, policies interleaved)"
  echo
  echo "| competitors | in_order samples/s | latency_aware samples/s | ratio (target >= 0.97) | in_order stall at 85% | latency_aware stall at 85% | difference (target <= +1 pt) |"
  echo "|---|---|---|---|---|---|---|"
  for n in 0 1 2; do
    io=$(column "busy$n-step0" in_order 4)
    la=$(column "busy$n-step0" latency_aware 4)
    sio=$(column "busy$n-85" in_order 5)
    sla=$(column "busy$n-85" latency_aware 5)
    echo "| $n | $io | $la | $(ratio "$la" "$io") | $(pct "$sio") | $(pct "$sla") | $(awk -v a="$sla" -v b="$sio" 'BEGIN { printf "%+.1f pt", 100 * (a - b) }') |"
  done
  sio=$(column map-85 in_order 5)
  sla=$(column map-85 latency_aware 5)
  echo
  echo "The earlier map's point (idle, batch 4, window 2, 85% demand): in_order stall $(pct "$sio"), latency_aware $(pct "$sla"), ratio $(awk -v a="$sla" -v b="$sio" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') (target <= 0.6)."
  echo
  echo "Samples per CPU-second of the node at step 0 (efficiency; samples/s above also compares CPU shares):"
  for n in 0 1 2; do
    echo "- $n competitors: in_order $(per_cpu_s "busy$n-step0" in_order), latency_aware $(per_cpu_s "busy$n-step0" latency_aware)"
  done
  echo
  echo "Lost and duplicated over all runs: $(awk -F, 'NR > 1 { s += $7 + $8 } END { print s + 0 }' "$CSV"). Every run: \`bench/results/contended.csv\`."
}

main() {
  build_tools
  ensure_dataset "$DATASET" "$IMAGES" 0.12
  mkdir -p "$RESULTS"
  echo "label,policy,step_ms,samples_per_s,stall_fraction,handoffs,lost,duplicates,cpu_s" >"$CSV"
  local n
  for n in 0 1 2; do
    level "$n"
  done
  map_point
  report >"$RESULTS/contended.md"
  cat "$RESULTS/contended.md"
}

main "$@"
