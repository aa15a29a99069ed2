#!/usr/bin/env bash
# The map of latency_aware vs in_order batching (issue 50): for every recipe, stall share and
# samples/s over batch size x window (pipeline.prefetch_batches) x demand (70/85/100% of what
# the node prepares at that batch, GPUs and load) x GPUs (1, 2) x machine (idle, busy: two
# competing CPU-bound processes), both policies alternating in one invocation. Writes
# bench/results/policy_map.md (a table per recipe and the targets), .csv, and .png (the stall
# ratio latency_aware / in_order per cell). The recipe "python" is conveyor.DataLoader over a
# Python Dataset (bench/policy_map_python.py: one GPU, batch sizes 8 and 32, 2 workers).
#
#   bench/policy_map.sh [RECIPES=image,detection,unet3d,speech,python]
#
# Grid (environment): GPU_COUNTS="1 2", LOADS="idle busy", PREFETCH="1 4", DEMANDS="0.70 0.85
# 1.00", BATCH_SCALES="1 4" (the recipe's own batch size x each). The recipes and their sets:
# bench_recipe (bench/lib.sh); <RECIPE>_EPOCHS sets a run's epochs. About 10 s a run here: on 2
# cores pick a part (RECIPES=image GPU_COUNTS=2 ...); on 16 cores run it whole. KEEP=1 keeps
# the rows of the CSV already there (a map run in parts: the report covers them all).
# Targets: latency_aware's stall <= in_order's + 0.5 pp in every cell, and <= 0.5 x in_order's
# in every cell where in_order stalls more than 2%.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IFS=, read -r -a RECIPES <<<"${1:-image,detection,unet3d,speech,python}"
read -r -a GPU_COUNTS <<<"${GPU_COUNTS:-1 2}"
read -r -a LOADS <<<"${LOADS:-idle busy}"
read -r -a PREFETCH <<<"${PREFETCH:-1 4}"
read -r -a DEMANDS <<<"${DEMANDS:-0.70 0.85 1.00}"
read -r -a BATCH_SCALES <<<"${BATCH_SCALES:-1 4}"
results="$BENCH_ROOT/bench/results"
csv="$results/policy_map.csv"
CELL=0  # cells run so far: the policies' order alternates from cell to cell
# The recipe's --set arguments for both policies: speech's length buckets need latency_aware,
# so both batch without them (as bench/speech.sh compares the policies).
POLICY_SETS=()

# capacity GPUS BATCH: samples/s the node prepares at step 0 (latency_aware, prefetch 2).
capacity() {
  local json
  json=$(recipe_node --set gpus="$1" --set pipeline.batch_size="$2" "${POLICY_SETS[@]}")
  json_field "$json" samples_per_s
}

# cell RECIPE LOAD GPUS BATCH PREFETCH DEMAND CAPACITY: both policies, one CSV row each.
cell() {
  local recipe=$1 load=$2 gpus=$3 batch=$4 prefetch=$5 demand=$6 cap=$7 step json p
  step=$(awk -v g="$gpus" -v b="$batch" -v d="$demand" -v c="$cap" \
    'BEGIN { printf "%.3f\n", 1000 * g * b / (d * c) }')
  local order=(in_order latency_aware)
  ((CELL++ % 2 == 1)) && order=(latency_aware in_order)
  for p in "${order[@]}"; do
    json=$(recipe_node --set gpus="$gpus" --set pipeline.batch_size="$batch" \
      --set pipeline.prefetch_batches="$prefetch" --set trainer.step_ms="$step" \
      --set batching.policy="$p" "${POLICY_SETS[@]}")
    log "$recipe $load gpus $gpus batch $batch prefetch $prefetch demand $demand $p: stall $(json_field "$json" stall_fraction)"
    "$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
print(",".join(sys.argv[2:] + [str(d[k]) for k in
      ("stall_fraction", "samples_per_s", "handoffs", "lost", "duplicates")]))' "$json" \
      "$recipe" "$load" "$gpus" "$batch" "$prefetch" "$demand" "$p" "$step" >>"$csv"
  done
}

# batch_of: the recipe's own batch size (its topology's, else the default's).
batch_of() {
  local b
  b=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$TOPOLOGY_FILE" | head -n 1)
  echo "${b:-64}"
}

# run_python: the Python cell, each load (bench/policy_map_python.py appends its rows).
run_python() {
  local load
  for load in "${LOADS[@]}"; do
    if [[ $load == busy ]]; then start_competitors 2; fi
    PYTHONPATH="$BUILD_DIR/python" CONVEYOR_NODE="$NODE_BIN" /usr/bin/python3 \
      "$BENCH_ROOT/bench/policy_map_python.py" --csv "$csv" --load "$load" \
      --prefetch "$(IFS=,; echo "${PREFETCH[*]}")" --demands "$(IFS=,; echo "${DEMANDS[*]}")"
    if [[ $load == busy ]]; then stop_competitors; fi
  done
}

run_recipe() {
  local recipe=$1 load gpus scale batch cap prefetch demand
  if [[ $recipe == python ]]; then
    run_python
    return
  fi
  bench_recipe "$recipe"
  POLICY_SETS=()
  if [[ $recipe == speech ]]; then POLICY_SETS=(--set batching.bucket_by=); fi
  find "$DATASET" -type f -exec cat {} + >/dev/null  # into the page cache
  for load in "${LOADS[@]}"; do
    if [[ $load == busy ]]; then start_competitors 2; fi
    for gpus in "${GPU_COUNTS[@]}"; do
      for scale in "${BATCH_SCALES[@]}"; do
        batch=$(($(batch_of) * scale))
        cap=$(capacity "$gpus" "$batch")
        log "$recipe $load gpus $gpus batch $batch: capacity $cap samples/s"
        for prefetch in "${PREFETCH[@]}"; do
          for demand in "${DEMANDS[@]}"; do
            cell "$recipe" "$load" "$gpus" "$batch" "$prefetch" "$demand" "$cap"
          done
        done
      done
    done
    if [[ $load == busy ]]; then stop_competitors; fi
  done
}

main() {
  build_tools conveyor-pack conveyor_python
  trap stop_competitors EXIT
  mkdir -p "$results"
  local machine recipe
  machine=$(machine_description)
  if [[ ${KEEP:-0} != 1 || ! -s $csv ]]; then
    echo "recipe,load,gpus,batch,prefetch,demand,policy,step_ms,stall_fraction,samples_per_s,handoffs,lost,duplicates" >"$csv"
  fi
  for recipe in "${RECIPES[@]}"; do
    run_recipe "$recipe"
  done
  "$BENCH_ROOT/scripts/install-deps" python3-matplotlib python3-numpy >/dev/null
  {
    echo "# Latency-aware vs in-order batching: the map"
    echo
    echo "$machine"
    echo "- recipes: $(tail -n +2 "$csv" | cut -d, -f1 | uniq | sort -u | tr '\n' ' ')(bench_recipe in bench/lib.sh: sets and epochs per run)"
    echo "- grid: GPUs ${GPU_COUNTS[*]}; ${LOADS[*]}; batch x ${BATCH_SCALES[*]} the recipe's; prefetch_batches ${PREFETCH[*]}; demand ${DEMANDS[*]} of the step-0 rate at that batch, GPUs and load"
    echo "- command (the last part): KEEP=${KEEP:-0} GPU_COUNTS=\"${GPU_COUNTS[*]}\" LOADS=\"${LOADS[*]}\" PREFETCH=\"${PREFETCH[*]}\" DEMANDS=\"${DEMANDS[*]}\" BATCH_SCALES=\"${BATCH_SCALES[*]}\" bench/policy_map.sh $(IFS=,; echo "${RECIPES[*]}")"
    echo
  } >"$results/policy_map.md"
  "$PYTHON" "$BENCH_ROOT/bench/plot_policy_map.py" "$csv" "$results/policy_map"
}

main "$@"
