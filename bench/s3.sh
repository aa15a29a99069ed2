#!/usr/bin/env bash
# Datasets in object storage (issue 33): conveyor-node reading the heavy-tailed image set (10%
# of the images 1800-3200 px) as record shards from an S3 server on loopback (s3rver:
# scripts/ensure-s3rver) behind the fault proxy (bench/s3_proxy: 20 ms added to every request,
# 400 Mbit/s per connection), against the same node on the same shards on the local disk; and
# PyTorch's DataLoader reading the images one object each with boto3 (bench/s3_dataloader.py,
# 2 workers) through the same proxy, as the anchor. Step 0 (the trainer takes each batch at
# once), batch 64, one GPU feeder.
#
#   bench/s3.sh [IMAGES=2000] [ROUNDS=3] [EPOCHS=3]
#        BUSY=1: two competing CPU-bound processes for the whole run
#
# Each round, in an order turned round from round to round: the node on local shards and on
# s3:// with a cache of the whole set (cache.memory 2G: EPOCHS epochs; the first fetches,
# the later ones must make no request), the node on s3:// without a cache (2 epochs), and the
# DataLoader (1 epoch). The link's own ceiling is measured once: every 8 MiB range of every
# shard, 16 at a time, with curl through the proxy (no node). s3rver and the proxy run on this
# machine's cores too: their CPU seconds are counted per run.
# Targets: from S3 >= 0.9x the samples/s from local shards; the first epoch's fetch time within
# 1.2x of bytes / bandwidth (16 connections x 400 Mbit/s); later epochs with the whole set
# cached: no request.
# Writes bench/results/s3.md (s3_busy.md with BUSY=1); JSON lines in build-bench/bench-logs/s3*.jsonl.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-2000}
ROUNDS=${2:-3}
EPOCHS=${3:-3}
CONNECTIONS=16
MBIT=400
LATENCY_MS=20
SET="$DATA_DIR/s3-heavy-$IMAGES"
bench_outputs s3
s3_bench_credentials

# make_set DIR: the images (DIR/images) and their record shards (DIR/shards), made once.
make_set() {
  "$PACK_BIN" --synthetic "$IMAGES" --images "$1/images" --out "$1/shards" --large-fraction 0.1
}

# start_servers: s3rver on a fresh data directory, the proxy in front; sets S3_PORT, PROXY_PORT.
start_servers() {
  local s3rver data
  s3rver=$("$BENCH_ROOT/scripts/ensure-s3rver")
  data="$LOG_DIR/s3rver-data"
  rm -rf "$data" && mkdir -p "$data"
  "$s3rver" -d "$data" -a 127.0.0.1 -p 0 >"$LOG_DIR/s3rver.log" 2>&1 &
  server_pid=$!
  local i
  for ((i = 0; i < 300; i++)); do  # up to 30 s for it to say where it listens
    S3_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$LOG_DIR/s3rver.log")
    [[ -n $S3_PORT ]] && break
    sleep 0.1
  done
  [[ -n $S3_PORT ]] || { log "s3rver did not start: $(cat "$LOG_DIR/s3rver.log")"; exit 1; }
  start_proxy --latency-ms "$LATENCY_MS" --mbit-per-connection "$MBIT"
  log "s3rver on port $S3_PORT (pid $server_pid), the proxy on $PROXY_PORT"
}

# upload: the bucket, the shards (conveyor-pack's staging is the local set: uploaded with boto3,
# the manifest last) and the images one object each; straight to s3rver, not through the proxy.
upload() {
  upload_shards "$SET" shards
  "$PYTHON" "$BENCH_ROOT/bench/s3_dataloader.py" "http://127.0.0.1:$S3_PORT" s3://bench/images \
    --images "$SET/images" --upload >/dev/null
}

# link_ceiling: seconds to fetch every 8 MiB range of every shard, 16 at a time, with curl
# through the proxy.
link_ceiling() {
  local start end
  start=$(date +%s.%N)
  for f in "$SET"/shards/shard-*.cvs; do
    local size name o e
    size=$(stat -c %s "$f") name=$(basename "$f")
    for ((o = 0; o < size; o += 8388608)); do
      e=$((o + 8388607 < size ? o + 8388607 : size - 1))
      echo "$name $o $e"
    done
  done | xargs -P "$CONNECTIONS" -n 3 sh -c 'curl -sf --aws-sigv4 aws:amz:us-east-1:s3 \
    -u S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -r "$1-$2" \
    "http://127.0.0.1:'"$PROXY_PORT"'/bench/shards/$0" -o /dev/null'
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}

# node NAME PATH EPOCHS [KEY=VALUE...]: conveyor-node at step 0; its JSON line with cpu_s.
node() {
  local name=$1 path=$2 epochs=$3
  shift 3
  local sets=(--set "dataset.path=\"$path\"" --set gpus=1 --set trainer.step_ms=0
    --set "trainer.epochs=$epochs" --set pipeline.batch_size=64
    --set "s3.endpoint_url=\"http://127.0.0.1:$PROXY_PORT\""
    --set "s3.connections=$CONNECTIONS") kv
  for kv in "$@"; do
    sets+=(--set "$kv")
  done
  with_cpu_time "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" "${sets[@]}" \
    --log-level info 2>"$LOG_DIR/s3$SUFFIX-$name.log"
}

run_one() {
  local what=$1 round=$2 json
  case $what in
    local) json=$(with_server_cpu node "local-r$round" "$SET/shards" "$EPOCHS" 'cache.memory="2G"') ;;
    s3) json=$(with_server_cpu node "s3-r$round" s3://bench/shards "$EPOCHS" 'cache.memory="2G"') ;;
    s3_uncached) json=$(with_server_cpu node "s3-uncached-r$round" s3://bench/shards 2) ;;
    dataloader)
      json=$(with_server_cpu with_cpu_time "$PYTHON" "$BENCH_ROOT/bench/s3_dataloader.py" \
        "http://127.0.0.1:$PROXY_PORT" s3://bench/images --images "$SET/images" --epochs 1 \
        --workers 2 --batch-size 64)
      ;;
  esac
  record "$what" "round=$round" <<<"$json"
  log "round $round, $what: $(json_field "$json" samples_per_s) samples/s"
}

report() {
  "$PYTHON" - "$RUNS" "$1" "$2" "$IMAGES" "$EPOCHS" "$ROUNDS" "${BUSY:-0}" "$CONNECTIONS" "$MBIT" \
    "$LATENCY_MS" "$BENCH_ROOT" <<'PY'
import json, os, statistics, sys

runs_file, machine, ceiling_s, images, epochs, rounds, busy, conns, mbit, latency, root = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "bench"))
from report_format import fmt, verdict  # noqa: E402
runs = [json.loads(l) for l in open(runs_file)]
med = statistics.median
by = lambda kind: [r for r in runs if r["bench"]["kind"] == kind]
images, epochs, conns, mbit = int(images), int(epochs), int(conns), float(mbit)
bandwidth = conns * mbit * 1e6 / 8  # bytes/s


def epoch_rates(r):
    ends = r["epoch_end_s"]
    return [images / (b - a) for a, b in zip([0.0] + ends[:-1], ends)]


local, s3, unc, dl = by("local"), by("s3"), by("s3_uncached"), by("dataloader")
ratio_all = med(b["samples_per_s"] / a["samples_per_s"] for a, b in zip(local, s3))
ratio_first = med(epoch_rates(b)[0] / epoch_rates(a)[0] for a, b in zip(local, s3))
ratio_later = med(med(epoch_rates(b)[1:]) / med(epoch_rates(a)[1:]) for a, b in zip(local, s3))
fetch = [r["s3_fetch_s"][0] for r in s3]
fetched = [r["s3_mb"][0] * 1e6 for r in s3]
nominal = med(f / (b / bandwidth) for f, b in zip(fetch, fetched))
ceiling = float(ceiling_s)
set_bytes = med(fetched)
later_requests = [sum(r["s3_requests"][1:]) for r in s3]
o = []
title = "Datasets in object storage: the node reading s3:// shards" + (", busy machine" if busy == "1" else "")
o.append(f"# {title}\n")
o.append(machine)
o.append(f"- set: {images} synthetic JPEGs (10% of them 1800-3200 px), {set_bytes / 1e6:.0f} MB of record "
         f"shards (conveyor-pack, 64M shards); the same images as {images} objects for the DataLoader")
o.append(f"- store: s3rver 3 on loopback behind bench/s3_proxy ({latency} ms added to every request, "
         f"{mbit:.0f} Mbit/s per connection); the node with s3.connections {conns}, s3.read_size 8M")
o.append(f"- every run: config/default.toml, one GPU feeder, batch 64, step 0; rounds: {rounds}; "
         f"node runs with the whole set cached: {epochs} epochs, cache.memory 2G")
o.append("- s3rver and the proxy run on this machine's cores too: `server CPU s` is theirs, during the run")
o.append(f"- command: bench/s3.sh {images} {rounds} {epochs}" + (" (BUSY=1: two competing CPU-bound processes)" if busy == "1" else ""))
o.append("")
o.append("## Targets\n")
o.append("| target | measured | |")
o.append("|---|---|---|")
o.append(f"| from S3 >= 0.9x the samples/s from local shards ({epochs} epochs, whole set cached) | "
         f"{ratio_all:.3f}x (first epoch {ratio_first:.3f}x, later epochs {ratio_later:.3f}x) | "
         f"{verdict(ratio_all >= 0.9)} |")
o.append(f"| first epoch's fetch time within 1.2x of bytes / bandwidth ({conns} x {mbit:.0f} Mbit/s "
         f"= {bandwidth / 1e6:.0f} MB/s) | {nominal:.2f}x ({med(fetch):.2f} s for {set_bytes / 1e6:.0f} MB; "
         f"the link's own ceiling, curl with {conns} range GETs of 8 MiB through the proxy: "
         f"{ceiling:.2f} s, so {med(fetch) / ceiling:.2f}x of it) | {verdict(nominal <= 1.2)} |")
o.append(f"| later epochs, whole set cached: no request | {later_requests} requests | "
         f"{verdict(all(n == 0 for n in later_requests))} |")
o.append("")
o.append("## Runs (medians over rounds)\n")
o.append("| run | samples/s | per epoch | requests per epoch | MB per epoch | fetch s per epoch | retries | node CPU s | server CPU s | samples per node CPU s |")
o.append("|---|---|---|---|---|---|---|---|---|---|")
def row(name, rs, node=True):
    rate = med(r["samples_per_s"] for r in rs)
    per_epoch = " / ".join(fmt(med(epoch_rates(r)[e] for r in rs), 0) for e in range(len(rs[0]["epoch_end_s"]))) if node else "-"
    req = " / ".join(str(int(med(r["s3_requests"][e] for r in rs))) for e in range(len(rs[0]["s3_requests"]))) if node and rs[0]["s3_requests"] else "-"
    mb = " / ".join(fmt(med(r["s3_mb"][e] for r in rs), 0) for e in range(len(rs[0]["s3_mb"]))) if node and rs[0]["s3_mb"] else "-"
    fs = " / ".join(fmt(med(r["s3_fetch_s"][e] for r in rs), 2) for e in range(len(rs[0]["s3_fetch_s"]))) if node and rs[0]["s3_fetch_s"] else "-"
    retries = str(int(med(r.get("s3_retries", 0) for r in rs))) if node else "-"
    cpu = med(r["cpu_s"] for r in rs)
    scpu = med(r["server_cpu_s"] for r in rs)
    o.append(f"| {name} | {rate:.1f} | {per_epoch} | {req} | {mb} | {fs} | {retries} | {cpu:.1f} | {scpu:.1f} | "
             f"{med(r['samples'] / r['cpu_s'] for r in rs):.1f} |")
row("node, local shards, cached", local)
row("node, s3://, cached", s3)
row("node, s3://, no cache (2 epochs)", unc)
row("DataLoader + boto3, 2 workers (1 epoch)", dl, node=False)
o.append("")
dl_rate = med(r["samples_per_s"] for r in dl)
o.append(f"The node from S3, whole set cached: {med(r['samples_per_s'] for r in s3) / dl_rate:.1f}x the DataLoader's "
         f"samples/s; without a cache {med(r['samples_per_s'] for r in unc) / dl_rate:.1f}x. "
         f"Lost and duplicated samples over every node run: {sum(r['lost'] + r['duplicates'] for r in local + s3 + unc)}.")
print("\n".join(o))
PY
}

mkdir -p "$LOG_DIR"
build_tools conveyor-pack s3_proxy
trap stop_servers EXIT
busy_if_asked
trap stop_servers EXIT
ensure_made "$SET" "the heavy-tailed set of $IMAGES images" make_set
MACHINE=$(machine_description)
start_servers
upload
CEILING=$(link_ceiling)
log "link ceiling: every range in $CEILING s"
: >"$RUNS"
order=(local s3 s3_uncached dataloader)
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then seq=("${order[@]}"); else seq=(dataloader s3_uncached s3 local); fi
  for what in "${seq[@]}"; do
    run_one "$what" "$round"
  done
done
report "$MACHINE" "$CEILING" >"$RESULT"
log "wrote $RESULT"
