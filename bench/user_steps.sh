#!/usr/bin/env bash
# A step through the public step API (include/conveyor/step.hpp, a node plugin) against the same
# step built in: conveyor-node on the image recipe (config/default.toml: decode,
# random_resized_crop 224, flip, normalize) over a heavy-tailed synthetic set (10% of the
# images 1800-3200 px), once with the built-in flip and once with api_flip
# (bench/plugins/api_flip.cpp: the same draw, the same pixels, written against the public
# header and loaded from [plugins] libraries). The two alternate round by round in this one
# invocation; the figure is the median over rounds of plugin / built-in samples/s.
# Target: >= 0.98 (within 2%).
#
#   bench/user_steps.sh [IMAGES=1000] [ROUNDS=5]     BUSY=1: two competing processes
#
# Writes bench/results/user_steps.md (user_steps_busy.md with BUSY=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-5}
EPOCHS=2
DATASET="$DATA_DIR/heavy-$IMAGES"
SUFFIX=$([[ "${BUSY:-0}" == 1 ]] && echo _busy || true)
RESULT="$BENCH_ROOT/bench/results/user_steps$SUFFIX.md"
PLUGIN="$BUILD_DIR/bench/libbench_api_flip.so"
PLUGIN_TOPOLOGY="$LOG_DIR/user_steps.toml"
trap stop_competitors EXIT

# The default topology with its flip replaced by api_flip and the plugin loaded.
write_plugin_topology() {
  sed -e 's|^op = "flip"$|op = "api_flip"|' \
    -e "s|^libraries = \[\]$|libraries = [\"$PLUGIN\"]|" \
    "$BENCH_ROOT/config/default.toml" >"$PLUGIN_TOPOLOGY"
  grep -q '^op = "api_flip"$' "$PLUGIN_TOPOLOGY" && grep -q "^libraries = \[\"$PLUGIN\"\]$" \
    "$PLUGIN_TOPOLOGY" || {
    log "config/default.toml has no flip table or no [plugins] libraries to replace"
    return 1
  }
}

# one_run NAME ROUND [TOPOLOGY]: the node's JSON line.
one_run() {
  TOPOLOGY=${3:-} run_node "$DATASET" "$LOG_DIR/user_steps-$1-$2.log" trainer.step_ms=0 \
    pipeline.batch_size=64 trainer.epochs="$EPOCHS" gpus=1
}

build_tools conveyor-pack bench_api_flip
mkdir -p "$LOG_DIR"
ensure_dataset "$DATASET" "$IMAGES" 0.1
write_plugin_topology
busy_if_asked
builtin_rates=()
plugin_rates=()
ratios=()
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then
    b=$(one_run builtin "$round")
    p=$(one_run plugin "$round" "$PLUGIN_TOPOLOGY")
  else
    p=$(one_run plugin "$round" "$PLUGIN_TOPOLOGY")
    b=$(one_run builtin "$round")
  fi
  for json in "$b" "$p"; do
    [[ "$(json_field "$json" lost)" == 0 && "$(json_field "$json" duplicates)" == 0 ]] || {
      log "round $round: a run lost or repeated samples: $json"
      exit 1
    }
  done
  builtin_rates+=("$(json_field "$b" samples_per_s)")
  plugin_rates+=("$(json_field "$p" samples_per_s)")
  ratios+=("$(ratio "${plugin_rates[-1]}" "${builtin_rates[-1]}")")
  log "round $round: built-in ${builtin_rates[-1]}, plugin ${plugin_rates[-1]} samples/s (${ratios[-1]})"
done
median_ratio=$(median "${ratios[@]}")
{
  echo "## A step through the public API (a plugin) vs the same step built in"
  machine_description
  echo "- $IMAGES images (10% of them 1800-3200 px), $EPOCHS epochs, batch 64, 1 GPU (host feeder), trainer step 0; busy=${BUSY:-0}"
  echo "- built-in: config/default.toml; plugin: the same with flip replaced by api_flip"
  echo "  (bench/plugins/api_flip.cpp), loaded from [plugins] libraries"
  echo
  echo "| round | built-in samples/s | plugin samples/s | plugin / built-in |"
  echo "|---|---|---|---|"
  for ((i = 0; i < ROUNDS; i++)); do
    echo "| $((i + 1)) | ${builtin_rates[i]} | ${plugin_rates[i]} | ${ratios[i]} |"
  done
  echo
  echo "Median plugin / built-in: $median_ratio (target >= 0.98). Built-in median $(median "${builtin_rates[@]}"), plugin median $(median "${plugin_rates[@]}") samples/s."
} >"$RESULT"
cat "$RESULT"
