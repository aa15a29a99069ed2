#!/usr/bin/env bash
# Trains a torchvision ResNet-50 on one GPU (bf16 autocast, channels_last, SGD, batch 128) for a
# fixed number of steps after untimed warm-up steps, fed six ways, each in a process of its own
# (bench/gpu_train.py, whose header defines the figures), on a heavy-tailed synthetic JPEG set
# (lib.sh's ensure_dataset: 10% of the images 1800-3200 px). Prints one JSON line per feed and
# a Markdown table at the end:
#   synthetic          the ceiling: random tensors made once on the GPU, no input pipeline
#   dataloader         (a) PyTorch's DataLoader, --workers processes: ImageFolder (PIL decode),
#                      RandomResizedCrop 224 + flip + normalize, pin_memory, .cuda(non_blocking)
#   pydataset          (a') that same Dataset and those arguments given to conveyor.DataLoader:
#                      the user's Python code run by the node's worker processes (issue 52)
#   conveyor           (b) conveyor-node serving uint8 batches (config/default.toml with to_uint8
#                      in place of its last step, normalize) over serve.socket; the trainer
#                      attaches with the Python module as rank 0 of job 0, copies each batch to
#                      the GPU and normalizes it there
#   conveyor-gpu-norm  (c) the node given normalize on = "gpu", dtype = "bfloat16" (and gpus =
#                      [0]), served the same way. What (c) measures is NOT the node normalizing
#                      on the GPU, because that cannot reach a served trainer: a served rank
#                      reads its batches from the node's shared memory, which is host memory,
#                      so api/resolve_topology.cpp drops the node's CUDA devices when
#                      serve.socket is set ("serve: 1 ranks get host batches in shared memory
#                      ...; normalize runs on the CPU" in node-conveyor-gpu-norm.log) and
#                      normalize runs in the node's host feeder, in float32 (bfloat16 "needs a
#                      CUDA feeder"); the Python module could not hand a device batch to NumPy
#                      anyway, and it offers no embedded pipeline (only attach). So (c) is what
#                      a served trainer gets from a GPU-normalize topology: float32 batches the
#                      node's CPU normalized, four times (b)'s bytes through shared memory and
#                      over PCIe, copied as they are. The node's own GPU normalize is measured
#                      only by bench_gpu_normalize and an embedded C++ trainer (example-libtorch).
#   conveyor-gpu-decode (d) (b)'s node with decode on = "auto": its JPEGs shared between the CPU
#                      and nvJPEG on device 0 by measured rates (config/default.toml's decode
#                      step), served as uint8 like (b); against (b), the CPU-only node. Where
#                      nvJPEG or the device is missing, "auto" decodes on the CPU and the
#                      node's log says why (node-conveyor-gpu-decode.log).
# With --model unet3d, a small 3D U-Net (bench/unet3d_model.py) is trained instead, on --cases
# synthetic KiTS19-like cases (conveyor-pack --synthetic-volumes: heavy-tailed, depth 128..640,
# sides 128..400) through the MLPerf UNet3D reference's own PytTrain (a user's Dataset: random
# balanced crop to 128^3, flips, brightness, noise), fed three ways: synthetic, dataloader and
# pydataset (the node serves no such batches to a trainer); batch 2 unless --batch says (MLPerf's
# per GPU).
#
# Usage: bench/gpu_train.sh [--device cuda|cpu] [--model resnet50|unet3d] [--batch 128]
#          [--steps 100] [--warmup 20] [--workers 16] [--amp bf16|off] [--images 5000]
#          [--cases 40] [--out DIR]
#          [--feeds "synthetic dataloader pydataset conveyor conveyor-gpu-norm conveyor-gpu-decode"]
#   on a CPU (a check of the script): bench/gpu_train.sh --device cpu --steps 3 --warmup 1
#                                     --batch 8 --model resnet18 --workers 2 --images 64
#                                     (unet3d: --model unet3d --batch 1 --steps 1 --warmup 1
#                                     --workers 2 --cases 6 --amp off; a step takes ~25 s)
#   in the GPU bundle (scripts/gpu-bundle): ./run-train [the same options]
# In a source tree it builds conveyor-node, bench_ceiling and the Python module in BUILD_DIR
# (lib.sh; default build-bench). TRAIN_PYTHON: the interpreter with torch and torchvision
# (default /usr/bin/python3 in a tree, python3 in the bundle). Writes runs.jsonl, the table
# (gpu_train.md) and the node's logs to --out (default $LOG_DIR/gpu_train).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=""
if [[ -x $here/../run && -d $here/../tools ]]; then  # inside the GPU bundle: no build, no git
  bundle=$(cd "$here/.." && pwd)
  export BUILD_DIR=${BUILD_DIR:-$bundle/work} NO_BUILD=1
fi
source "$here/lib.sh"

device=cuda model=resnet50 batch="" steps=100 warmup=20 workers=16 amp=bf16 images=5000 cases=40
feeds=""
out=$LOG_DIR/gpu_train
while [[ $# -gt 0 ]]; do
  case $1 in
    --device) device=$2 ;;
    --model) model=$2 ;;
    --batch) batch=$2 ;;
    --steps) steps=$2 ;;
    --warmup) warmup=$2 ;;
    --workers) workers=$2 ;;
    --amp) amp=$2 ;;
    --images) images=$2 ;;
    --cases) cases=$2 ;;
    --feeds) feeds=$2 ;;
    --out) out=$2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_train.sh: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
  shift 2
done
if [[ $model == unet3d ]]; then
  batch=${batch:-2} feeds=${feeds:-synthetic dataloader pydataset} samples=$cases
  dataset="$DATA_DIR/volumes-$cases"
else
  batch=${batch:-128}
  feeds=${feeds:-synthetic dataloader pydataset conveyor conveyor-gpu-norm conveyor-gpu-decode}
  samples=$images dataset="$DATA_DIR/heavy-$images"
fi
if ((samples < batch)); then
  echo "gpu_train.sh: --images or --cases ($samples) is less than a batch of $batch" >&2
  exit 2
fi

RUNS="$out/runs.jsonl"  # lib.sh's record appends here
work=$(mktemp -d /tmp/gpu-train.XXXXXX)  # the sockets: a short path (at most 107 bytes)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The programs and the interpreter: the bundle's, or this tree's (built first).
use_tools() {
  if [[ -n $bundle ]]; then
    NODE_BIN=$bundle/tools/conveyor-node
    CEILING_BIN=$bundle/tools/bench_ceiling
    PACK_BIN=$bundle/tools/conveyor-pack
    PYTHON=${TRAIN_PYTHON:-python3}
    export PYTHONPATH=$bundle/python
  else
    build_tools conveyor_python conveyor-pack
    PYTHON=${TRAIN_PYTHON:-$PYTHON}
    export PYTHONPATH=$BUILD_DIR/python
  fi
  export CONVEYOR_NODE=$NODE_BIN  # conveyor.DataLoader's node (pydataset)
}

# recipe NAME SED_SCRIPT: config/default.toml edited by SED_SCRIPT, as $work/NAME.toml (--set
# cannot reach into the [[transform]] list). Fails when the edit changes nothing.
recipe() {
  local file="$work/$1.toml"
  sed "$2" "$BENCH_ROOT/config/default.toml" >"$file"
  if cmp -s "$file" "$BENCH_ROOT/config/default.toml"; then
    echo "gpu_train.sh: config/default.toml no longer ends with the normalize step edited here" >&2
    return 1
  fi
  echo "$file"
}
# The last step, normalize, up to the end of the file: replaced, or moved to the GPU in bf16.
to_uint8='/^op = "normalize"$/,$c\op = "to_uint8"'
on_gpu='/^op = "normalize"$/,$ { s/^on = .*/on = "gpu"/; s/^dtype = .*/dtype = "bfloat16"/ }'
# The decode step shared with nvJPEG ("auto"), and the last step replaced as in to_uint8.
gpu_decode="$DECODE_AUTO_SED
$to_uint8"

# train LABEL ARGS...: one gpu_train.py run; prints its JSON line.
train() {
  local label=$1
  shift
  "$PYTHON" "$here/gpu_train.py" --label "$label" --device "$device" --model "$model" \
    --batch "$batch" --steps "$steps" --warmup "$warmup" --amp "$amp" "$@"
}

# node_epochs: enough epochs of full batches for the warm-up and timed steps, and one more (an
# epoch's short last batch is dropped); the node is stopped once the trainer is done.
node_epochs() {
  local per_epoch=$((images / batch))
  echo $(((warmup + steps + per_epoch - 1) / per_epoch + 1))
}

# served LABEL TOPOLOGY GPUS: conveyor-node on TOPOLOGY serving one rank of one job, the
# trainer attached to it; prints the trainer's JSON line. The node's JSON line and log go to
# $out/node-LABEL.{json,log}. Run in this shell (not in a $(...)), so that the EXIT trap stops
# the node when the script is interrupted.
served() {
  local label=$1 topology=$2 gpus=$3 socket="$work/$1.sock" node
  "$NODE_BIN" --topology "$topology" --set "dataset.path=$dataset" --set dataset.format=folder \
    --set "pipeline.batch_size=$batch" --set "trainer.epochs=$(node_epochs)" --set "gpus=$gpus" \
    --set "serve.socket=$socket" --set monitor.interval_ms=10000 --log-level info \
    >"$out/node-$label.json" 2>"$out/node-$label.log" &
  node=$!
  if ! train "$label" --feed conveyor --socket "$socket"; then
    kill "$node" 2>/dev/null || true
    wait "$node" || true
    log "$label failed; the node's log ($out/node-$label.log) ends:"
    tail -n 20 "$out/node-$label.log" >&2
    return 1
  fi
  kill -TERM "$node"  # it would wait for the epochs the trainer leaves
  wait "$node" || true
}

# run_feed FEED: prints FEED's JSON line.
run_feed() {
  local topology
  case $1 in
    synthetic) train synthetic --feed synthetic ;;
    dataloader | pydataset) train "$1" --feed "$1" --data "$dataset" --workers "$workers" ;;
    conveyor)
      topology=$(recipe uint8 "$to_uint8")
      served conveyor "$topology" 1 ;;
    conveyor-gpu-norm)
      topology=$(recipe gpu-norm "$on_gpu")
      served conveyor-gpu-norm "$topology" "[0]" ;;
    conveyor-gpu-decode)
      topology=$(recipe gpu-decode "$gpu_decode")
      served conveyor-gpu-decode "$topology" 1 ;;
    *) echo "gpu_train.sh: unknown feed $1" >&2; return 2 ;;
  esac
}

# where_measured: the Markdown lines that say where and how.
where_measured() {
  if [[ -n $bundle ]]; then
    echo "- machine: $(nproc) cores; bundle: $(sed -n '1,2p' "$bundle/README.txt" | tr '\n' ' ')"
  else
    machine_description
  fi
  if command -v nvidia-smi >/dev/null; then
    echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  fi
  if [[ $model == unet3d ]]; then
    echo "- dataset: $cases synthetic KiTS19-like cases (conveyor-pack --synthetic-volumes;" \
      "depth 128..640, sides 128..400) through the MLPerf reference's PytTrain;" \
      "DataLoader and conveyor.DataLoader workers: $workers"
  else
    echo "- dataset: $images synthetic JPEGs (10% of them 1800-3200 px), an image folder;" \
      "DataLoader workers: $workers; node preprocessors: auto ($(nproc))"
  fi
  if [[ " $feeds " == *" conveyor-gpu-decode "* ]]; then
    echo "- conveyor-gpu-decode's node: $(gpu_decode_note "$out/node-conveyor-gpu-decode.log")"
  fi
  echo "- command: bench/gpu_train.sh --device $device --model $model --batch $batch" \
    "--steps $steps --warmup $warmup --workers $workers --amp $amp" \
    "$([[ $model == unet3d ]] && echo "--cases $cases" || echo "--images $images")" \
    "--feeds \"$feeds\""
}

# ensure_samples: the dataset the feeds read, made once.
ensure_samples() {
  if [[ $model == unet3d ]]; then
    ensure_made "$dataset" "$cases synthetic UNet3D cases" "$PACK_BIN" --synthetic-volumes \
      "$cases" --out
  else
    ensure_dataset "$dataset" "$images" 0.10
  fi
}

main() {
  local feed line
  mkdir -p "$out"
  : >"$RUNS"
  use_tools
  ensure_samples
  for feed in $feeds; do
    log "feed $feed"
    run_feed "$feed" >"$work/line.json"
    line=$(<"$work/line.json")
    echo "$line"
    record gpu_train "feed=$feed" <<<"$line"
  done
  {
    echo "# $model training fed $(wc -w <<<"$feeds") ways (bench/gpu_train.sh)"
    echo
    where_measured
    echo
    "$PYTHON" "$here/gpu_train_table.py" "$RUNS"
  } | tee "$out/gpu_train.md"
}

main
