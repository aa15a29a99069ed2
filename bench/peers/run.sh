#!/usr/bin/env bash
# Conveyor against its peers, in one invocation: the bare-loop ceiling (bench_ceiling),
# conveyor-node (in_order and latency_aware) and PyTorch's DataLoader (bench/peers/
# torch_loader.py, Debian's python3-torch), on one heavy-tailed shard dataset, with the same
# batch size, epochs and simulated trainer. Where the decode step has `scaled`, the ceiling and
# the node run with full and with DCT-scaled decodes; torch decodes in full (cv2, and TurboJPEG).
# Trainer demands: step 0, then steps that ask for 70/85/100% of the full-decode
# ceiling's samples/s (step_ms = 1000 x batch / (demand x capacity)). Every round runs every
# contender once per demand, interleaved (the order reverses on even rounds), so that all see
# the same machine load; the report takes medians over rounds.
#
#   bench/peers/run.sh [IMAGES=1000] [ROUNDS=3]
#
# Environment: DEMANDS (default "0 0.70 0.85 1.00"), SCALED (auto: when
# config/transform_schema.cpp knows decode's `scaled`; 1 or 0 to force), TORCH_DECODERS (default
# "cv2 turbojpeg": torch_loader.py's --decoder, one contender each), BUILD_DIR and NO_BUILD
# (bench/lib.sh). Writes bench/results/peers.md, .csv and .png (RESULTS_DIR: elsewhere); raw
# JSON lines and the contenders' logs stay in $BUILD_DIR/bench-logs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

IMAGES=${1:-1000}
ROUNDS=${2:-3}
read -r -a DEMANDS <<<"${DEMANDS:-0 0.70 0.85 1.00}"
read -r -a TORCH_DECODERS <<<"${TORCH_DECODERS:-cv2 turbojpeg}"
EPOCHS=2
BATCH=64
LARGE_FRACTION=0.10
PEERS="$BENCH_ROOT/bench/peers"
RESULTS="${RESULTS_DIR:-$BENCH_ROOT/bench/results}"
DATASET="$DATA_DIR/peers-heavy-$IMAGES"
RAW="$LOG_DIR/peers.jsonl"
PACKAGES=(python3-torch python3-opencv python3-numpy python3-matplotlib)

# scaled_supported: 0 or 1, whether conveyor-node's decode step takes `scaled`.
scaled_supported() {
  case ${SCALED:-auto} in
    auto) grep -q '"scaled"' "$BENCH_ROOT/config/transform_schema.cpp" && echo 1 || echo 0 ;;
    *) echo "$SCALED" ;;
  esac
}

# write_topology DECODE: config/default.toml with `scaled = true|false` set in the decode table
# (--set cannot reach into the [[transform]] array); prints its path. Without `scaled` support,
# the default topology (full decodes) as it is.
write_topology() {
  local decode=$1 file="$LOG_DIR/peers-decode-$1.toml" value=false
  if ((!HAS_SCALED)); then
    echo "$BENCH_ROOT/config/default.toml"
    return
  fi
  [[ $decode == scaled ]] && value=true
  sed -e '/^op = "decode"$/,/^\[\[/{/^scaled *=/d}' -e "/^op = \"decode\"\$/a scaled = $value" \
    "$BENCH_ROOT/config/default.toml" >"$file"
  if [[ $(grep -c '^scaled *=' "$file") != 1 ]] || ! grep -q "^scaled = $value\$" "$file"; then
    log "could not set scaled = $value in the decode table of config/default.toml"
    return 1
  fi
  echo "$file"
}

# ceilings: the bare-loop ceilings of a round, kind:policy:decode like contenders.
ceilings() {
  echo ceiling:bare_loop:full
  ((HAS_SCALED)) && echo ceiling:bare_loop:scaled
  return 0
}

# contenders: kind:policy:decode (torch: kind:decoder:decode), in the order of an odd round.
contenders() {
  printf '%s\n' node:in_order:full node:latency_aware:full
  ((HAS_SCALED)) && printf '%s\n' node:in_order:scaled node:latency_aware:scaled
  printf 'torch:%s:full\n' "${TORCH_DECODERS[@]}"
}

# step_ms DEMAND: the trainer step that asks for DEMAND x CAPACITY samples/s (0: step 0).
step_ms() {
  awk -v b="$BATCH" -v d="$1" -v c="$CAPACITY" \
    'BEGIN { printf "%.3f\n", (d > 0) ? 1000 * b / (d * c) : 0 }'
}

# command_of KIND POLICY DECODE STEP_MS: the command line of one contender, one word a line.
command_of() {
  local kind=$1 policy=$2 decode=$3 step=$4
  case $kind in
    ceiling)
      printf '%s\n' "$CEILING_BIN" --dataset "$DATASET" --format shards --epochs "$EPOCHS"
      if ((HAS_SCALED)) && [[ $decode == full ]]; then
        echo --full-decode
      fi
      ;;
    node)
      printf '%s\n' "$NODE_BIN" --topology "${TOPOLOGY[$decode]}" --log-level warn \
        --set "dataset.path=$DATASET" --set dataset.format=shards \
        --set "trainer.epochs=$EPOCHS" --set "pipeline.batch_size=$BATCH" \
        --set "trainer.step_ms=$step" --set "batching.policy=$policy"
      ;;
    torch)
      printf '%s\n' "$PYTHON" "$PEERS/torch_loader.py" --dataset "$DATASET" --batch-size "$BATCH" \
        --epochs "$EPOCHS" --step-ms "$step" --workers "$(nproc)" --decoder "$policy"
      ;;
  esac
}

# measure ROUND DEMAND SPEC: runs one contender under bench/peers/measure.py (process-tree RSS
# and PSS, CPU time) and prints its JSON line, tagged; a failed run is kept, with its rc.
measure() {
  local round=$1 demand=$2 spec=$3 kind policy decode step cmd json
  IFS=: read -r kind policy decode <<<"$spec"
  step=$(step_ms "$demand")
  mapfile -t cmd < <(command_of "$kind" "$policy" "$decode" "$step")
  json=$("$PYTHON" "$PEERS/measure.py" --tag round="$round" --tag demand="$demand" \
    --tag contender="$kind" --tag policy="$policy" --tag decode="$decode" --tag step_ms="$step" \
    -- "${cmd[@]}" 2>>"$LOG_DIR/peers-$kind.log") || true
  log "round $round, demand $demand, $spec: $(brief "$json")"
  echo "$json"
}

# brief JSON: samples/s, stall and exit status of one run, for the log.
brief() {
  "$PYTHON" -c 'import json, sys; r = json.loads(sys.argv[1])
print(", ".join(f"{k} {r.get(k)}" for k in ("samples_per_s", "stall_fraction", "rc")))' "$1"
}

# run_round ROUND: the ceilings, then every contender at every demand.
run_round() {
  local round=$1 demand spec specs
  mapfile -t specs < <(contenders)
  if ((round % 2 == 0)); then
    mapfile -t specs < <(printf '%s\n' "${specs[@]}" | tac)
  fi
  for spec in $(ceilings); do
    measure "$round" 0 "$spec" >>"$RAW"
  done
  for demand in "${DEMANDS[@]}"; do
    for spec in "${specs[@]}"; do
      measure "$round" "$demand" "$spec" >>"$RAW"
    done
  done
}

# header: where, what and how, the top of peers.md (report.py appends the figures).
header() {
  echo "# Conveyor vs its peers: the bare-loop ceiling and PyTorch's DataLoader"
  echo
  machine_description
  echo "- CPU: $(lscpu | awk -F': +' '/^Model name/ { print $2; exit }'), $(nproc) cores seen"
  echo "- peers: $("$PYTHON" -c 'import sys, torch, cv2, numpy; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, OpenCV {cv2.__version__}, numpy {numpy.__version__}")') (Debian's, /usr/bin/python3)"
  echo "- dataset: $IMAGES synthetic JPEGs ($LARGE_FRACTION of them 1800-3200 px, the others 300-640 px) packed into record shards (conveyor-pack --synthetic); every contender reads these shards"
  echo "- every run: batch $BATCH, $EPOCHS epochs, shuffled; node and torch: the simulated trainer; $(nproc) preprocessors / workers / ceiling threads"
  echo "- capacity: $CAPACITY samples/s (bench_ceiling, full decodes, before the rounds); step_ms at demand d = 1000 x $BATCH / (d x capacity): $(for d in "${DEMANDS[@]}"; do printf '%s: %s ms ' "$d" "$(step_ms "$d")"; done)"
  if ((HAS_SCALED)); then
    echo "- decodes: conveyor-node and the ceiling both full (scaled = false, bench_ceiling --full-decode) and DCT-scaled (scaled = true); torch in full; the demands are fractions of the full-decode capacity"
  else
    echo "- node decodes: full only (this tree's decode step has no \`scaled\` yet); the scaled-decode comparison with torch is not measured"
  fi
  echo "- command: bench/peers/run.sh $IMAGES $ROUNDS (DEMANDS=\"${DEMANDS[*]}\"); $ROUNDS round(s), medians over rounds"
  echo
  fairness
}

# fairness: what makes the contenders comparable, and where they still differ.
fairness() {
  cat <<'EOF'
## Fairness

- Same bytes: every contender reads the same shard files (in the page cache after the first
  run). torch_loader.py parses shard format v1 itself, one pread per record, and skips the
  record checksum that conveyor-node verifies (XXH3: GB/s, small next to a JPEG decode).
- Same per-sample work: decode (full unless the row says scaled), RandomResizedCrop 224 with
  scale (0.08, 1) and ratio (3/4, 4/3), bilinear; flip p 0.5; ImageNet mean/std to float32 CHW.
  Torch does it with cv2.imdecode (libjpeg-turbo under OpenCV) and numpy, swapping BGR to RGB
  while normalising in one float pass. cv2.imdecode spends ~1.6x the CPU of TurboJPEG's
  tjDecompress2 (the node's call) on the same bytes for the same pixels, so a second torch row
  decodes with TurboJPEG through ctypes: the gap that is left is the loader's, not the
  decoder binding's.
- Same parallelism: one worker process / preprocessor / ceiling thread per core, each
  single-threaded (cv2.setNumThreads(0), torch.set_num_threads(1); the node and the ceiling
  turn OpenCV's pool off too). Each side's default read-ahead: DataLoader prefetch_factor 2
  per worker, persistent workers, fork; conveyor-node pipeline.prefetch_batches 2.
- Same trainer: wait for a batch (the stall), sleep step_ms, batch 64, shuffled, 2 epochs. The
  demands are fractions of the ceiling's full-decode samples/s, the same step for everyone: a
  contender slower than the ceiling is asked for more than it can give, as a GPU would.
- Clocks: conveyor-node's starts once its pipeline is created, torch's once the DataLoader is
  built (epoch 1 includes forking the workers; `import torch` is before it, but is in its CPU
  time). The ceiling times its loop.
- Memory from outside, the same way for all (bench/peers/measure.py): the process tree's RSS
  and PSS; PSS is the fair one for forked workers that share pages.
- Scaled decodes (where the node has them): the node's scaled rows are compared with a ceiling
  that does the same scaled decodes, and with torch, which decodes in full as DataLoader
  recipes do (cv2's IMREAD_REDUCED_* takes its factor before the image size is known, so it
  cannot be chosen per crop the way the node's DCT-scaled decode is).
EOF
}

main() {
  "$BENCH_ROOT/scripts/install-deps" "${PACKAGES[@]}" >&2
  build_tools conveyor-pack
  mkdir -p "$LOG_DIR" "$RESULTS"
  ensure_shards "$DATASET" "$IMAGES" "$LARGE_FRACTION"
  HAS_SCALED=$(scaled_supported)
  declare -gA TOPOLOGY=([full]="$(write_topology full)")
  ((HAS_SCALED)) && TOPOLOGY[scaled]=$(write_topology scaled)
  local cmd
  mapfile -t cmd < <(command_of ceiling bare_loop full 0)
  CAPACITY=$(json_field "$("${cmd[@]}")" samples_per_s)
  log "capacity (ceiling, full decodes): $CAPACITY samples/s; scaled decodes: $HAS_SCALED"
  header >"$RESULTS/peers.md"
  : >"$RAW"
  local round
  for ((round = 1; round <= ROUNDS; round++)); do
    run_round "$round"
  done
  "$PYTHON" "$PEERS/report.py" "$RAW" "$RESULTS/peers"
  log "wrote $RESULTS/peers.md, peers.csv, peers.png"
}

main
