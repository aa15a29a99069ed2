# Shared by the bench/*.sh scripts (source it; it defines functions and paths, runs nothing).
# BUILD_DIR (default build-bench) is the build the scripts use; they build what they need in it
# first, unless NO_BUILD=1 (measure the binaries already there, e.g. while the tree is mid-change).

BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$BENCH_ROOT/build-bench}"
NODE_BIN="$BUILD_DIR/apps/conveyor-node/conveyor-node"
CEILING_BIN="$BUILD_DIR/bench/bench_ceiling"
PACK_BIN="$BUILD_DIR/apps/conveyor-pack/conveyor-pack"
DATA_DIR="$BUILD_DIR/data"
LOG_DIR="$BUILD_DIR/bench-logs"
PYTHON=/usr/bin/python3

# A command that fails inside $(...) fails the script too (the node exits 1 on lost samples).
shopt -s inherit_errexit

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# build_tools [TARGET...]: configures BUILD_DIR when needed and builds conveyor-node,
# bench_ceiling and the TARGETs given (Release, no CUDA), quietly: the compiler's output goes to
# $LOG_DIR/build.log, its errors shown on failure.
build_tools() {
  local build_log="$LOG_DIR/build.log" targets=(conveyor-node bench_ceiling "$@")
  mkdir -p "$LOG_DIR"
  if [[ "${NO_BUILD:-0}" == 1 ]]; then
    log "NO_BUILD=1: using the binaries in $BUILD_DIR as they are"
    return 0
  fi
  log "building ${targets[*]} in $BUILD_DIR"
  if ! {
    [[ -f "$BUILD_DIR/build.ninja" ]] ||
      cmake -S "$BENCH_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCONVEYOR_CUDA=OFF -DCONVEYOR_BUILD_TESTS=OFF
    cmake --build "$BUILD_DIR" --target "${targets[@]}" -j"$(nproc)"
  } >"$build_log" 2>&1; then
    grep -E '^FAILED|error:' "$build_log" | cut -c1-300 | head -n 10 >&2
    log "build failed; full output in $build_log"
    return 1
  fi
}

# DECODE_AUTO_SED: a sed script that sets decode on = "auto" in config/default.toml (its JPEGs
# shared between the CPU and nvJPEG by measured rates).
DECODE_AUTO_SED='s/^op = "decode"$/op = "decode"\non = "auto"/'

# gpu_decode_note LOG: how a decode.on = "auto" node shared its JPEGs, or why nvJPEG was not used.
gpu_decode_note() {
  local line
  line=$(grep -o 'decode: [0-9]* JPEGs on .*' "$1" | tail -n 1) || true  # none: grep fails
  [[ -n $line ]] || line=$(grep -o 'no GPU decoder for .*' "$1" | head -n 1 | cut -c1-160) || true
  echo "${line:-no decode line in the log}" | tr '\t|`' '   '
}

# ensure_dataset DIR COUNT LARGE_FRACTION: an image folder of COUNT synthetic JPEGs
# (core/synthetic_images.hpp), made once. Written aside and renamed, so that an interrupted
# run never leaves a partial dataset behind that a later run would take for a whole one.
ensure_dataset() {
  local dir=$1 count=$2 large=$3
  [[ -d "$dir" ]] && return 0
  log "generating $count images ($large of them 1800-3200 px) into $dir"
  rm -rf "$dir.partial"
  "$CEILING_BIN" --dataset "$dir.partial" --generate "$count" --large-fraction "$large" >&2
  mv "$dir.partial" "$dir"
}

# ensure_shards DIR COUNT LARGE_FRACTION [PACK_FLAGS...]: a shard dataset (conveyor-pack --synthetic: COUNT
# synthetic JPEGs packed into record shards), made once, aside and renamed like ensure_dataset.
# Needs conveyor-pack (build_tools conveyor-pack); the loose JPEGs are deleted once packed.
ensure_shards() {
  local dir=$1 count=$2 large=$3
  shift 3  # the rest: more conveyor-pack flags (e.g. --restart)
  [[ -d "$dir" ]] && return 0
  log "generating and packing $count images ($large of them 1800-3200 px) into $dir $*"
  rm -rf "$dir.partial" "$dir.images"
  "$PACK_BIN" --synthetic "$count" --images "$dir.images" --out "$dir.partial" \
    --large-fraction "$large" "$@" >&2
  rm -rf "$dir.images"
  mv "$dir.partial" "$dir"
}

# ensure_made DIR WHAT CMD...: DIR made once by CMD, which writes into DIR.partial (its output to
# stderr); aside and renamed, so that an interrupted run leaves no partial set behind that a
# later run would take for a whole one.
ensure_made() {
  local dir=$1 what=$2
  shift 2
  [[ -d "$dir" ]] && return 0
  log "making $what in $dir"
  rm -rf "$dir.partial"
  mkdir -p "$(dirname "$dir")"
  "$@" "$dir.partial" >&2
  mv "$dir.partial" "$dir"
}

# mean_file_bytes DIR: the mean size of the files under DIR.
mean_file_bytes() {
  find "$1" -type f -printf '%s\n' | awk '{ s += $1; n++ } END { printf "%d\n", s / n }'
}

# json_field JSON KEY: one field of a one-line JSON object.
json_field() {
  "$PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# measure_and_report ROUNDS RESULT: the calling script's run_round for rounds 1 to ROUNDS, then
# its report (handed the machine's description, taken before the first round) into RESULT and
# on stdout.
measure_and_report() {
  local machine round
  machine=$(machine_description)
  for ((round = 1; round <= $1; round++)); do
    run_round "$round"
  done
  report "$machine" | tee "$2"
}

# median N...: the median of the numbers given.
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A / B to three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a / b }'; }

# record KIND KEY=VALUE... < JSON: appends the JSON line to $RUNS (the
# calling script's) with a "bench" field.
record() {
  local kind=$1
  shift
  "$PYTHON" -c '
import json, sys
d = json.loads(sys.stdin.read())
d["bench"] = dict([("kind", sys.argv[1])] + [kv.split("=", 1) for kv in sys.argv[2:]])
print(json.dumps(d))' "$kind" "$@" >>"$RUNS"
}

# with_cpu_time CMD...: runs CMD, which prints one JSON object on stdout, and prints that
# object with "cpu_s" (the command's user + system CPU seconds) added. On a machine shared with
# other work, samples per CPU-second compares efficiency where samples/s compares CPU shares.
with_cpu_time() {
  local times out
  times=$(mktemp)
  out=$(/usr/bin/time -o "$times" -f '%U %S' "$@") || {
    rm -f "$times"
    return 1
  }
  echo "${out%\}},\"cpu_s\":$(awk '{ print $1 + $2 }' "$times")}"
  rm -f "$times"
}

# run_ceiling DATASET EPOCHS: the bare-loop ceiling's JSON line, with cpu_s.
run_ceiling() {
  with_cpu_time "$CEILING_BIN" --dataset "$1" --format folder --epochs "$2"
}

# run_node DATASET LOGFILE KEY=VALUE...: conveyor-node on the default topology (or $TOPOLOGY; an image
# folder), with the given overrides; prints its JSON line with cpu_s; logs (info: the
# monitor's lines) go to LOGFILE.
run_node() {
  local dataset=$1 logfile=$2
  shift 2
  local sets=(--set "dataset.path=$dataset" --set dataset.format=folder)
  local kv
  for kv in "$@"; do
    sets+=(--set "$kv")
  done
  with_cpu_time "$NODE_BIN" --topology "${TOPOLOGY:-$BENCH_ROOT/config/default.toml}" "${sets[@]}" \
    --log-level info 2>"$logfile"
}

# Competing CPU-bound processes at normal priority, in this session (so in the node's
# scheduling group, as a trainer's threads are): a busy machine, as real nodes are.
competitors=()
# start_competitors N: N more of them.
start_competitors() {
  local i
  for ((i = 0; i < $1; i++)); do
    "$PYTHON" -c 'while True: pass' &
    competitors+=($!)
  done
}
# stop_competitors: every one started (scripts trap it on EXIT).
stop_competitors() {
  if ((${#competitors[@]} > 0)); then
    kill "${competitors[@]}" 2>/dev/null || true
    wait "${competitors[@]}" 2>/dev/null || true
  fi
  competitors=()
}
# busy_if_asked: with BUSY=1, two competitors for the rest of the script.
busy_if_asked() {
  trap stop_competitors EXIT
  [[ "${BUSY:-0}" == 1 ]] && start_competitors 2
  return 0
}

# machine_description: the Markdown lines that say where and when the figures were taken.
machine_description() {
  local cpu tree
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  tree=$(git -C "$BENCH_ROOT" rev-parse --short HEAD)
  git -C "$BENCH_ROOT" diff --quiet HEAD || tree+=" + uncommitted changes"
  if [[ "${NO_BUILD:-0}" == 1 ]]; then
    tree+=" (NO_BUILD=1: conveyor-node built $(date -u -r "$NODE_BIN" '+%H:%M UTC'), maybe from an older tree)"
  fi
  echo "- machine: $(nproc) cores ($cpu), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -sr)"
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- commit: $tree"
}

# alternating_rounds ROUNDS FIRST SECOND RUN: RUN ROUND VARIANT for each of ROUNDS rounds and
# both variants, FIRST first in odd rounds and SECOND first in even ones, so that neither
# always runs on a machine the other has just warmed.
alternating_rounds() {
  local rounds=$1 first=$2 second=$3 run=$4 round variant order
  for round in $(seq 1 "$rounds"); do
    order=("$first" "$second")
    ((round % 2 == 0)) && order=("$second" "$first")
    for variant in "${order[@]}"; do
      "$run" "$round" "$variant"
    done
  done
}

# cpu_ticks PID: the process's user + system CPU time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# with_server_cpu CMD...: CMD's JSON line with "server_cpu_s" (the CPU seconds of the calling
# script's S3 server and proxy, $server_pid and $proxy_pid, while it ran) added.
with_server_cpu() {
  local before after out hz
  hz=$(getconf CLK_TCK)
  before=$(($(cpu_ticks "$server_pid") + $(cpu_ticks "$proxy_pid")))
  out=$("$@")
  after=$(($(cpu_ticks "$server_pid") + $(cpu_ticks "$proxy_pid")))
  echo "${out%\}},\"server_cpu_s\":$(awk -v t=$((after - before)) -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }')}"
}

# s3_bench_credentials: the S3 benches' credentials (s3rver checks them; moto takes any), and
# nothing of the caller's AWS setup.
s3_bench_credentials() {
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
  unset AWS_PROFILE AWS_ENDPOINT_URL AWS_SESSION_TOKEN
}

# The S3 benches' server and proxy (their start_servers sets these); stop_servers (trapped on
# EXIT) stops them and the competitors.
server_pid="" proxy_pid=""
stop_servers() {
  stop_competitors  # first: the wait below waits for every child, and they never end
  [[ -z $proxy_pid ]] || kill "$proxy_pid" 2>/dev/null || true
  [[ -z $server_pid ]] || kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}

# bench_outputs NAME: SUFFIX ("_busy" with BUSY=1, else ""), RESULT (bench/results/NAME$SUFFIX.md)
# and RUNS ($LOG_DIR/NAME$SUFFIX.jsonl, the runs' JSON lines).
bench_outputs() {
  SUFFIX=$([[ "${BUSY:-0}" == 1 ]] && echo _busy || true)
  RESULT="$BENCH_ROOT/bench/results/$1$SUFFIX.md"
  RUNS="$LOG_DIR/$1$SUFFIX.jsonl"
}

# start_proxy ARGS...: bench/s3_proxy in front of the server at $S3_PORT (ARGS: its options);
# sets proxy_pid and PROXY_PORT.
start_proxy() {
  coproc PROXY { exec "$BUILD_DIR/bench/s3_proxy" "$S3_PORT" "$@" 2>"$LOG_DIR/s3_proxy.log"; }
  proxy_pid=$PROXY_PID
  read -r PROXY_PORT <&"${PROXY[0]}"
}

# upload_shards DIR PREFIX...: the bucket "bench" on the server at $S3_PORT, and each shard set
# DIR/PREFIX as s3://bench/PREFIX (the manifest last), with boto3, not through the proxy.
upload_shards() {
  "$PYTHON" - "http://127.0.0.1:$S3_PORT" "$@" <<'PY'
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
s3.create_bucket(Bucket="bench")
for prefix in sys.argv[3:]:
    d = os.path.join(sys.argv[2], prefix)
    files = sorted(os.listdir(d))
    for name in [f for f in files if f != "manifest.txt"] + ["manifest.txt"]:
        s3.upload_file(os.path.join(d, name), "bench", prefix + "/" + name)
PY
}

# bench_recipe NAME: sets TOPOLOGY_FILE, DATASET, FORMAT_SET (extra --set arguments) and EPOCHS
# (about 10-20 s a run at step 0 on 2 cores) for one of the recipes the maps and the autotune
# sweep run, making its set under $DATA_DIR once: image = config/default.toml on 400 synthetic
# JPEGs (10% of them 1800-3200 px); detection = config/examples/detection.toml on
# scripts/make-detection-set 200; unet3d = config/examples/unet3d-kits19.toml on 30 synthetic
# cases; speech = config/examples/rnnt-librispeech.toml on scripts/make-speech-set 600.
# <NAME>_EPOCHS (IMAGE_EPOCHS, ...) sets EPOCHS.
bench_recipe() {
  local topology set
  FORMAT_SET=()
  case $1 in
    image)
      topology=default.toml set=map-400 EPOCHS=${IMAGE_EPOCHS:-6}
      FORMAT_SET=(--set dataset.format=folder)
      ;;
    detection) topology=examples/detection.toml set=detection-200 EPOCHS=${DETECTION_EPOCHS:-3} ;;
    unet3d) topology=examples/unet3d-kits19.toml set=kits19-30 EPOCHS=${UNET3D_EPOCHS:-40} ;;
    speech) topology=examples/rnnt-librispeech.toml set=speech-600 EPOCHS=${SPEECH_EPOCHS:-4} ;;
    *)
      log "unknown recipe $1 (image, detection, unet3d, speech)"
      exit 2
      ;;
  esac
  TOPOLOGY_FILE="$BENCH_ROOT/config/$topology"
  DATASET="$DATA_DIR/$set"
  case $1 in
    image) ensure_dataset "$DATASET" 400 0.1 ;;
    detection) ensure_made "$DATASET" "200 detection samples" "$PYTHON" \
      "$BENCH_ROOT/scripts/make-detection-set" 200 ;;
    unet3d) ensure_made "$DATASET" "30 synthetic KiTS19 cases" "$PACK_BIN" --synthetic-volumes 30 --out ;;
    speech) ensure_made "$DATASET" "600 utterances spoken by espeak-ng" "$PYTHON" \
      "$BENCH_ROOT/scripts/make-speech-set" 600 ;;
  esac
}

# recipe_node ARGS...: conveyor-node on the recipe bench_recipe set, its EPOCHS, the given
# arguments after; prints its JSON line with cpu_s; the log (info) to $NODE_LOG (or nowhere).
recipe_node() {
  with_cpu_time "$NODE_BIN" --topology "$TOPOLOGY_FILE" --set dataset.path="$DATASET" \
    "${FORMAT_SET[@]}" --set trainer.epochs="$EPOCHS" "$@" --log-level info \
    2>"${NODE_LOG:-/dev/null}"
}
