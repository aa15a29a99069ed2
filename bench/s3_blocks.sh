#!/usr/bin/env bash
# Object storage at the store's speed without a cache of the whole set (issue 49): conveyor-node,
# first epoch, no cache, reading record shards from moto_server (an S3-compatible server, on
# loopback) with dataset.shuffle = "blocks" against the global shuffle, and against the same
# node on the same shards on the local disk; directly, and through bench/s3_proxy adding 30 ms
# to every request (an object store's time to the first byte). The set: 2000 synthetic photos
# (~77 KB, 154 MB) packed in class order into 8 MiB shards; the same in 64 MiB shards, in blocks
# only (moto reads a whole object for every range GET of it: ~0.3 CPU seconds a GET of a
# 64 MiB object on this machine, which real stores do not). Then the quality of each order on a
# set packed in class order (bench/quality/shuffle_quality.cpp): this set's shape, and
# ImageNet's (1,281,167 samples of 1000 classes, 110 KB each, 128 MiB shards).
#
#   bench/s3_blocks.sh [IMAGES=2000] [ROUNDS=3]
#        BUSY=1: two competing CPU-bound processes for the whole run
#
# Each round, in an order turned round from round to round: the node on local shards (global,
# blocks), and on s3:// (global, blocks) directly and through the proxy; blocks from the 64 MiB
# shards in the store. Every run: the default
# topology (blocks: shuffle_block 1M, shuffle_span 256), one GPU feeder, batch 64, step 0, one
# epoch, s3.connections 16. moto and the proxy run on this machine's cores too: their CPU
# seconds are counted per run.
# Targets: blocks from S3 >= 0.9x the node on local shards (directly and through the proxy);
# requests per epoch <= 2 x (set bytes / shuffle_block).
# Writes bench/results/s3_blocks.md (s3_blocks_busy.md with BUSY=1); JSON lines in
# $BUILD_DIR/bench-logs/s3_blocks*.jsonl.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-2000}
ROUNDS=${2:-3}
CONNECTIONS=16
LATENCY_MS=30
BLOCK=1048576
SET="$DATA_DIR/s3-photos-$IMAGES"
bench_outputs s3_blocks
QUALITY_BIN="$BUILD_DIR/bench/shuffle_quality"
s3_bench_credentials

# make_set DIR: the images (DIR/images, class after class) and their record shards of 8 MiB
# (DIR/shards) and 64 MiB (DIR/shards-64m), made once.
make_set() {
  "$PACK_BIN" --synthetic "$IMAGES" --images "$1/images" --out "$1/shards-64m" --large-fraction 0
  "$PACK_BIN" "$1/images" --out "$1/shards" --shard-size 8M
}

# start_servers: moto_server on a free port, the proxy in front; sets S3_PORT, PROXY_PORT.
start_servers() {
  S3_PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  moto_server -H 127.0.0.1 -p "$S3_PORT" >"$LOG_DIR/moto.log" 2>&1 &
  server_pid=$!
  local i
  for ((i = 0; i < 300; i++)); do  # up to 30 s for it to answer
    curl -sf "http://127.0.0.1:$S3_PORT/" -o /dev/null && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$S3_PORT/" -o /dev/null || {
    log "moto_server did not start: $(cat "$LOG_DIR/moto.log")"
    exit 1
  }
  start_proxy --latency-ms "$LATENCY_MS"
  log "moto_server on port $S3_PORT (pid $server_pid), the proxy (+$LATENCY_MS ms) on $PROXY_PORT"
}

# upload: the bucket and both sets of shards (the manifests last), with boto3, straight to moto.
upload() {
  upload_shards "$SET" shards shards-64m
}

# node NAME PATH PORT SHUFFLE: conveyor-node for one epoch at step 0, no cache; its JSON line
# with cpu_s and server_cpu_s.
node() {
  local name=$1 path=$2 port=$3 shuffle=$4
  with_server_cpu with_cpu_time "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" \
    --set "dataset.path=\"$path\"" --set "dataset.shuffle=$shuffle" --set gpus=1 \
    --set trainer.step_ms=0 --set trainer.epochs=1 --set pipeline.batch_size=64 \
    --set "s3.endpoint_url=\"http://127.0.0.1:$port\"" --set "s3.connections=$CONNECTIONS" \
    --log-level info 2>"$LOG_DIR/s3_blocks$SUFFIX-$name.log"
}

run_one() {
  local what=$1 round=$2 json where port shuffle
  case $what in
    local_*) where="$SET/shards" port=$S3_PORT ;;
    s3_*) where=s3://bench/shards port=$S3_PORT ;;
    proxy_*) where=s3://bench/shards port=$PROXY_PORT ;;
    big_*) where=s3://bench/shards-64m port=$S3_PORT ;;
  esac
  case $what in
    *_global) shuffle=true ;;
    *_blocks) shuffle='"blocks"' ;;
  esac
  json=$(node "$what-r$round" "$where" "$port" "$shuffle")
  record "$what" "round=$round" <<<"$json"
  log "round $round, $what: $(json_field "$json" samples_per_s) samples/s"
}

report() {
  "$PYTHON" - "$RUNS" "$1" "$IMAGES" "$ROUNDS" "${BUSY:-0}" "$CONNECTIONS" "$LATENCY_MS" \
    "$BLOCK" "$(du -sb "$SET/shards" | cut -f1)" "$BENCH_ROOT" "$2" "$3" <<'PY'
import json, os, statistics, sys

(runs_file, machine, images, rounds, busy, conns, latency, block, set_bytes, root,
 quality_set, quality_imagenet) = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "bench"))
from report_format import verdict  # noqa: E402
runs = [json.loads(l) for l in open(runs_file)]
med = statistics.median
by = lambda kind: [r for r in runs if r["bench"]["kind"] == kind]
block, set_bytes = int(block), int(set_bytes)
rate = lambda kind: med(r["samples_per_s"] for r in by(kind))
# Ratios within each round (the runs of one round ran back to back), then the median.
def ratio(a, b):
    rs = [x["samples_per_s"] / y["samples_per_s"] for x, y in zip(by(a), by(b))]
    return med(rs), min(rs), max(rs)
limit = 2 * set_bytes / block
o = []
title = "Object storage in blocks: the node's first epoch from s3:// without a cache" + (
    ", busy machine" if busy == "1" else "")
o.append(f"# {title}\n")
o.append(machine)
o.append(f"- set: {images} synthetic photos (conveyor-pack --synthetic, 10 classes, packed class after "
         f"class), {set_bytes / 1e6:.0f} MB of record shards of 8 MiB; the same in 64 MiB shards for `64 MiB shards`")
o.append(f"- store: moto_server on loopback; `proxy`: bench/s3_proxy in front of it, {latency} ms "
         f"added to every request; s3.connections {conns}, s3.read_size 8M")
o.append("- every run: config/default.toml, one GPU feeder, batch 64, step 0, one epoch, no cache; "
         f"blocks: the defaults (shuffle_block 1M, shuffle_span 256); rounds: {rounds}")
o.append("- moto and the proxy run on this machine's cores too: `server CPU s` is theirs, during the run")
o.append(f"- command: bench/s3_blocks.sh {images} {rounds}" + (" (BUSY=1: two competing CPU-bound processes)" if busy == "1" else ""))
o.append("")
o.append("## Targets\n")
o.append("| target | measured (median of rounds, [min, max]) | |")
o.append("|---|---|---|")
for kind, name in (("s3_blocks", "directly"), ("proxy_blocks", f"through the proxy (+{latency} ms)")):
    m, lo, hi = ratio(kind, "local_global")
    o.append(f"| blocks from S3 {name} >= 0.9x the node on local shards (global) | {m:.3f}x "
             f"[{lo:.3f}, {hi:.3f}] | {verdict(m >= 0.9)} |")
reqs = [r["s3_requests"][0] for r in by("s3_blocks") + by("proxy_blocks")]
o.append(f"| requests per epoch <= 2 x (set bytes / shuffle_block) = {limit:.0f} | "
         f"{min(reqs)} to {max(reqs)} | {verdict(max(reqs) <= limit)} |")
o.append("")
o.append("## Runs (medians over rounds)\n")
o.append("| run | samples/s | of local (global) | requests | MB fetched | KiB a request | fetch s | node CPU s | server CPU s | lost + duplicated |")
o.append("|---|---|---|---|---|---|---|---|---|---|")
names = {"local_global": "local shards, global", "local_blocks": "local shards, blocks",
         "s3_global": "s3://, global", "s3_blocks": "s3://, blocks",
         "proxy_global": f"s3:// + {latency} ms, global", "proxy_blocks": f"s3:// + {latency} ms, blocks",
         "big_blocks": "s3://, 64 MiB shards, blocks"}
for kind, name in names.items():
    rs = by(kind)
    remote = kind != "local_global" and kind != "local_blocks"
    cell = lambda key, f: f(med(r[key][0] for r in rs)) if remote else "-"
    o.append(f"| {name} | {rate(kind):.1f} | {ratio(kind, 'local_global')[0]:.3f}x | "
             f"{cell('s3_requests', lambda v: f'{v:.0f}')} | {cell('s3_mb', lambda v: f'{v:.0f}')} | "
             f"{cell('s3_request_kib', lambda v: f'{v:.0f}')} | {cell('s3_fetch_s', lambda v: f'{v:.2f}')} | "
             f"{med(r['cpu_s'] for r in rs):.1f} | {med(r['server_cpu_s'] for r in rs):.1f} | "
             f"{sum(r['lost'] + r['duplicates'] for r in rs)} |")
o.append("")
o.append("## Shuffle quality, the set packed in class order (the worst case)\n")
o.append("Per-batch label entropy (of the batch's own labels) and distinct shards per batch, "
         "mean over an epoch's batches of 64 (bench/quality/shuffle_quality.cpp, pure computation "
         "on the orders); resident: what the order keeps fetched ahead (blocks: the span read and "
         "the next; WebDataset: its buffer).\n")
o.append(f"### This set's shape ({images} samples, 10 classes, {set_bytes / int(images) / 1e3:.0f} KB, 8 MiB shards; 3 epochs)\n")
o.append(quality_set)
o.append("### ImageNet's shape (1,281,167 samples, 1000 classes, 110 KB, 128 MiB shards; one epoch)\n")
o.append(quality_imagenet)
print("\n".join(o))
PY
}

mkdir -p "$LOG_DIR"
build_tools conveyor-pack s3_proxy shuffle_quality
command -v moto_server >/dev/null || { log "moto_server is not on PATH"; exit 1; }
trap stop_servers EXIT
busy_if_asked
trap stop_servers EXIT
ensure_made "$SET" "the set of $IMAGES photos" make_set
MACHINE=$(machine_description)
start_servers
upload
: >"$RUNS"
order=(local_global local_blocks s3_global s3_blocks proxy_global proxy_blocks big_blocks)
for ((round = 1; round <= ROUNDS; round++)); do
  seq=("${order[@]}")
  ((round % 2)) || seq=(big_blocks proxy_blocks proxy_global s3_blocks s3_global local_blocks local_global)
  for what in "${seq[@]}"; do
    run_one "$what" "$round"
  done
done
QUALITY_SET=$("$QUALITY_BIN" "$IMAGES" 10 "$(($(du -sb "$SET/shards" | cut -f1) / IMAGES))" 8388608 64 3)
QUALITY_IMAGENET=$("$QUALITY_BIN" 1281167 1000 110000 134217728 64 1)
report "$MACHINE" "$QUALITY_SET" "$QUALITY_IMAGENET" >"$RESULT"
log "wrote $RESULT"
