#!/usr/bin/env bash
# conveyor.DataLoader against torch's DataLoader and MinatoLoader's scheme (issue 47): every
# dataset of bench/python_dataset.py (the sleep-based heavy tail, the MLPerf UNet3D reference's
# PytTrain, torchvision's ImageFolder recipe), with 2 and 4 workers, idle and busy (two
# competing CPU-bound processes at normal priority), rounds alternating the loaders in one run.
#
#   bench/python_dataset.sh [ROUNDS=3]
#
# DATASETS="sleep image unet3d" and WORKERS="2 4" choose a part. Each run's lines go to
# $LOG_DIR/python_dataset-<dataset>-<workers>-<idle|busy>.txt; the medians are what
# bench/results/python_dataset.md reports.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${1:-3}
trap stop_competitors EXIT
build_tools conveyor_python
export PYTHONPATH="$BUILD_DIR/python" CONVEYOR_NODE="$BUILD_DIR/apps/conveyor-node/conveyor-node"

# samples and batch per dataset: a run of a few minutes on 2 cores
declare -A SAMPLES=([sleep]=400 [image]=240 [unet3d]=32)
declare -A BATCH=([sleep]=8 [image]=8 [unet3d]=2)

for machine in idle busy; do
  [[ $machine == busy ]] && start_competitors 2
  for dataset in ${DATASETS:-sleep image unet3d}; do
    for workers in ${WORKERS:-2 4}; do
      out="$LOG_DIR/python_dataset-$dataset-$workers-$machine.txt"
      log "$dataset, $workers workers, $machine: $out"
      /usr/bin/python3 "$BENCH_ROOT/bench/python_dataset.py" --dataset "$dataset" \
        --workers "$workers" --rounds "$ROUNDS" --samples "${SAMPLES[$dataset]}" \
        --batch "${BATCH[$dataset]}" | tee "$out"
    done
  done
  [[ $machine == busy ]] && stop_competitors
done
