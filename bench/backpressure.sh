#!/usr/bin/env bash
# Memory is bounded by configuration, not by the dataset: with a trainer 10x slower than the
# pipeline (so that the pipeline runs ahead as far as the credits let it), conveyor-node's peak
# RSS on a dataset 10x larger is about the same, and the part above the fixed baseline stays
# within the budget: window_samples x (one 3x224x224 float32 tensor + one raw JPEG).
#
#   bench/backpressure.sh [IMAGES=300]
#
# Datasets of IMAGES and 10 x IMAGES small synthetic JPEGs (300-640 px, ImageNet-like; no large
# ones, to keep generation quick). The trainer step is 10x the pipeline's measured time per
# batch, so the 10x run lasts about 100 x IMAGES / (pipeline samples/s): about 1.5 minutes for
# the default on 2 cores. Writes bench/results/backpressure.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-300}
FACTOR=10
BATCH=64
TENSOR_BYTES=$((3 * 224 * 224 * 4))
SMALL="$DATA_DIR/small-$IMAGES"
LARGE="$DATA_DIR/small-$((IMAGES * FACTOR))"
RESULT="$BENCH_ROOT/bench/results/backpressure.md"

# node DATASET NAME KEY=VALUE...: one run of the default topology, batch 64, one epoch.
node() {
  local dataset=$1 name=$2
  shift 2
  run_node "$dataset" "$LOG_DIR/backpressure-$name.log" pipeline.batch_size="$BATCH" \
    trainer.epochs=1 "$@"
}

# slow_step_ms RATE: FACTOR x the time the pipeline needs for one batch at RATE samples/s.
slow_step_ms() {
  awk -v r="$1" -v f="$FACTOR" -v b="$BATCH" 'BEGIN { printf "%.0f\n", f * b * 1000 / r }'
}

# budget_mb SAMPLES WINDOW DATASET: SAMPLES output tensors plus WINDOW mean raw JPEGs.
budget_mb() {
  awk -v n="$1" -v w="$2" -v t="$TENSOR_BYTES" -v j="$(mean_file_bytes "$3")" \
    'BEGIN { printf "%.1f\n", (n * t + w * j) / 1048576 }'
}

# row LABEL DATASET BASELINE_MB JSON: one line of the table.
row() {
  local label=$1 dataset=$2 baseline=$3 json=$4 window rss
  window=$(json_field "$json" window_samples)
  rss=$(json_field "$json" peak_rss_mb)
  echo "| $label | $(json_field "$json" dataset_size) | $(json_field "$json" step_ms) |" \
    "$window | $(json_field "$json" peak_in_flight) | $(json_field "$json" wall_s) |" \
    "$rss | $(awk -v r="$rss" -v b="$baseline" 'BEGIN { printf "%.1f", r - b }') |" \
    "$(budget_mb "$window" "$window" "$dataset") |" \
    "$(budget_mb "$((window + BATCH))" "$window" "$dataset") |"
}

main() {
  local machine fast baseline step one ten small_window
  build_tools
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  ensure_dataset "$SMALL" "$IMAGES" 0
  ensure_dataset "$LARGE" "$((IMAGES * FACTOR))" 0
  machine=$(machine_description)
  fast=$(node "$SMALL" rate trainer.step_ms=0 trainer.epochs=2)
  step=$(slow_step_ms "$(json_field "$fast" samples_per_s)")
  log "pipeline: $(json_field "$fast" samples_per_s) samples/s -> trainer.step_ms=$step"
  # The fixed part of the RSS (libraries, threads, decode scratch): a window of 2 samples.
  baseline=$(json_field "$(node "$SMALL" baseline trainer.step_ms=0 pipeline.batch_size=1 \
    pipeline.prefetch_batches=1)" peak_rss_mb)
  one=$(node "$SMALL" slow-1x trainer.step_ms="$step")
  log "1x:  $one"
  ten=$(node "$LARGE" slow-10x trainer.step_ms="$step")
  log "10x: $ten"
  small_window=$(node "$SMALL" slow-1x-prefetch1 trainer.step_ms="$step" \
    pipeline.prefetch_batches=1)
  log "1x, prefetch 1: $small_window"
  {
    echo "# Backpressure: peak RSS is set by the window, not by the dataset"
    echo
    echo "$machine"
    echo "- datasets: $IMAGES and $((IMAGES * FACTOR)) synthetic JPEGs of 300-640 px (ImageNet-like, no large images: quick to generate), image folder"
    echo "- node: default topology (policy $(json_field "$one" policy)), 1 epoch, batch $BATCH"
    echo "- pipeline alone (trainer.step_ms 0): $(json_field "$fast" samples_per_s) samples/s, so a trainer $FACTOR x slower: trainer.step_ms = $step"
    echo "- baseline RSS (batch 1, prefetch 1: a window of 2 samples): $baseline MB"
    echo "- budget = window_samples x ($TENSOR_BYTES B float32 tensor + the mean raw JPEG)." \
      "The feeder's ring slots (window_samples tensors in all) stay allocated while the batch" \
      "that refills a released slot is being prepared, so one batch of tensors more can be" \
      "live: the last column adds it."
    echo "- command: bench/backpressure.sh $IMAGES"
    echo
    echo "| run | images | step_ms | window_samples | peak_in_flight | wall_s | peak RSS (MB) | RSS - baseline (MB) | budget (MB) | budget + 1 batch (MB) |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    row "1x dataset, slow trainer" "$SMALL" "$baseline" "$one"
    row "${FACTOR}x dataset, slow trainer" "$LARGE" "$baseline" "$ten"
    row "1x dataset, slow trainer, prefetch_batches 1" "$SMALL" "$baseline" "$small_window"
    echo
    echo "Peak RSS, ${FACTOR}x / 1x dataset: **$(ratio "$(json_field "$ten" peak_rss_mb)" \
      "$(json_field "$one" peak_rss_mb)")**."
  } | tee "$RESULT"
}

main
