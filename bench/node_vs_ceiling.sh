#!/usr/bin/env bash
# conveyor-node against the bare-loop ceiling (bench_ceiling: the same per-sample work in a
# plain loop on every core), on a heavy-tailed synthetic dataset (10% of the images 1800-3200
# px). The two run alternately in this one invocation, so that both see the same machine load;
# the figure is the median over rounds of node / ceiling. Target: >= 0.9.
#
#   bench/node_vs_ceiling.sh [IMAGES=1000] [ROUNDS=3]
#
# Writes bench/results/node_vs_ceiling.md; the node's monitor logs stay in build-bench/bench-logs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-3}
EPOCHS=2
DATASET="$DATA_DIR/heavy-$IMAGES"
RESULT="$BENCH_ROOT/bench/results/node_vs_ceiling.md"
TARGET=0.9

ceiling_runs=()
node_runs=()

# One round: ceiling and node, the first of the two alternating from round to round.
run_round() {
  local round=$1 c n
  if ((round % 2)); then
    c=$(run_ceiling "$DATASET" "$EPOCHS")
    n=$(run_node_once "$round")
  else
    n=$(run_node_once "$round")
    c=$(run_ceiling "$DATASET" "$EPOCHS")
  fi
  log "round $round: ceiling $c"
  log "round $round: node    $n"
  ceiling_runs+=("$c")
  node_runs+=("$n")
}

run_node_once() {
  run_node "$DATASET" "$LOG_DIR/node_vs_ceiling-round$1.log" trainer.step_ms=0 \
    pipeline.batch_size=64 trainer.epochs="$EPOCHS" batching.policy=in_order
}

# samples_per_cpu_s JSON: samples per CPU-second of the run.
samples_per_cpu_s() {
  awk -v s="$(json_field "$1" samples)" -v c="$(json_field "$1" cpu_s)" \
    'BEGIN { printf "%.1f\n", s / c }'
}

# cores_used JSON: the run's CPU-seconds per second of wall time. The ceiling's threads never
# wait, so below its thread count it shared the cores with other work.
cores_used() {
  awk -v c="$(json_field "$1" cpu_s)" -v w="$(json_field "$1" wall_s)" \
    'BEGIN { printf "%.2f\n", c / w }'
}

# report MACHINE: the Markdown page.
report() {
  local rate_ratios=() cpu_ratios=() rss=() cores=() i c n cr nr ccpu ncpu
  echo "# conveyor-node vs the bare-loop ceiling"
  echo
  echo "$1"
  echo "- dataset: $IMAGES synthetic JPEGs (10% of them 1800-3200 px, the others 300-640 px), image folder, $EPOCHS epochs"
  echo "- node: default topology, in_order, batch 64, trainer.step_ms 0, $(nproc) preprocessors; ceiling: $(nproc) threads"
  echo "- command: bench/node_vs_ceiling.sh $IMAGES $ROUNDS"
  echo
  echo "| round | ceiling samples/s | node samples/s | node / ceiling | ceiling samples/CPU-s | node samples/CPU-s | node / ceiling (CPU) | ceiling cores used | node peak RSS (MB) |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for i in "${!node_runs[@]}"; do
    c=${ceiling_runs[i]} n=${node_runs[i]}
    cr=$(json_field "$c" samples_per_s) nr=$(json_field "$n" samples_per_s)
    ccpu=$(samples_per_cpu_s "$c") ncpu=$(samples_per_cpu_s "$n")
    rate_ratios+=("$(ratio "$nr" "$cr")")
    cpu_ratios+=("$(ratio "$ncpu" "$ccpu")")
    cores+=("$(cores_used "$c")")
    rss+=("$(json_field "$n" peak_rss_mb)")
    echo "| $((i + 1)) | $cr | $nr | ${rate_ratios[i]} | $ccpu | $ncpu | ${cpu_ratios[i]} | ${cores[i]} | ${rss[i]} |"
  done
  local med
  med=$(median "${rate_ratios[@]}")
  echo
  echo "Median node / ceiling: **$med** samples/s (target >= $TARGET: $(awk -v m="$med" \
    -v t="$TARGET" 'BEGIN { print (m >= t) ? "met" : "NOT met" }')), $(median "${cpu_ratios[@]}")" \
    "samples per CPU-second; median node peak RSS $(median "${rss[@]}") MB."
  busy_note "${cores[@]}"
}

# busy_note CORES...: a warning when the ceiling did not get every core in some rounds.
busy_note() {
  printf '%s\n' "$@" | awk -v n="$(nproc)" '$1 < 0.9 * n { busy++ } END { if (busy) printf \
    "\n**Other work shared the machine** in %d of %d rounds (the ceiling used fewer than %.1f " \
    "cores): samples/s then compares the CPU shares the two programs won (the node, with more " \
    "threads, wins more) as much as their efficiency; samples per CPU-second is the steadier " \
    "comparison.\n", busy, NR, 0.9 * n }'
}

main() {
  local machine
  build_tools
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  ensure_dataset "$DATASET" "$IMAGES" 0.10
  machine=$(machine_description)
  local round
  for ((round = 1; round <= ROUNDS; round++)); do
    run_round "$round"
  done
  report "$machine" | tee "$RESULT"
}

main
