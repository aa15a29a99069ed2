#!/usr/bin/env bash
# The MinIO cache against the page cache alone (issue 16), where the page cache cannot hold
# the dataset: conveyor-node runs in a cgroup-v1 memory group of MEMORY_MB, on a generated shard
# set about twice that size, 3 epochs, the page cache dropped before each run. Figures per
# epoch from the node's JSON line: disk_mb (what the process read from the storage devices,
# /proc/self/io read_bytes), storage_mb (what the loader read from the dataset's files),
# cache_hits, and epoch_end_s. Needs root (cgroups, drop_caches).
#
#   bench/cache.sh [MEMORY_MB=512] [IMAGES=5000]
#
# One node: the page cache alone; a MinIO cache of CACHE_MB (default MEMORY_MB / 2) in the
# same group (the same memory for both: the page cache has whatever the process does not use);
# and that cache with a disk tier of DISK_MB (default MEMORY_MB) behind it.
# Three nodes on loopback ([cluster] world 3, each in its own group of CLUSTER_MB, default
# MEMORY_MB * 5 / 4), started together: the page cache alone; MinIO caches without peers (each
# node caches a third of the set for itself); and the partitioned cache (cluster.peers: the
# three caches, a third of the set each, cover it, and the nodes fetch each other's misses).
# Each node reads its own copy of the set, as nodes on separate hosts would: on one host they
# would otherwise share one page cache, three groups' worth, which holds the whole set.
# Writes bench/results/cache.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MEMORY_MB=${1:-512}
IMAGES=${2:-5000}
CACHE_MB=${CACHE_MB:-$((MEMORY_MB / 2))}
DISK_MB=${DISK_MB:-$MEMORY_MB}
CLUSTER_MB=${CLUSTER_MB:-$((MEMORY_MB * 5 / 4))}
DATASET="$DATA_DIR/cache-$IMAGES"
GROUP=/sys/fs/cgroup/memory/conveyor-cache-bench
RESULT="$BENCH_ROOT/bench/results/cache.md"
TIER_DIR="$BUILD_DIR/cache-tier"

build_tools conveyor-pack
ensure_shards "$DATASET" "$IMAGES" 0.1
dataset_mb=$(du -sm "$DATASET" | cut -f1)
share_mb=$((dataset_mb * 11 / 30))  # a third of the set, and 10% to spare
mkdir -p "$TIER_DIR"
for r in 0 1 2; do  # real copies: hard links would share the page cache
  [[ -d "$DATASET-copy-$r" ]] || cp -r "$DATASET" "$DATASET-copy-$r"
done

groups=("$GROUP" "$GROUP-0" "$GROUP-1" "$GROUP-2")
trap 'for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null || true; done' EXIT
make_group() {  # make_group DIR MB
  mkdir -p "$1"
  echo $(($2 * 1024 * 1024)) >"$1/memory.limit_in_bytes"
}
make_group "$GROUP" "$MEMORY_MB"
for r in 0 1 2; do
  make_group "$GROUP-$r" "$CLUSTER_MB"
done

cold_page_cache() {
  sync
  echo 3 >/proc/sys/vm/drop_caches
}

# in_group GROUP NAME KEY=VALUE...: one node run in GROUP (the settings of every run, then
# the run's own); its JSON line on stdout.
in_group() {
  local group=$1 name=$2
  shift 2
  local sets=() kv
  for kv in "dataset.path=\"$DATASET\"" trainer.epochs=3 pipeline.batch_size=32 \
    trainer.step_ms=0 "$@"; do
    sets+=(--set "$kv")
  done
  sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$group" "$NODE_BIN" \
    --topology "$BENCH_ROOT/config/default.toml" "${sets[@]}" 2>"$LOG_DIR/cache-$name.log"
}

# cluster NAME KEY=VALUE...: the three nodes started together, each in its group; their JSON
# lines, rank 0 first.
cluster() {
  local name=$1 pids=() r
  shift
  cold_page_cache
  for r in 0 1 2; do
    in_group "$GROUP-$r" "$name-$r" cluster.world=3 "cluster.rank=$r" \
      "dataset.path=\"$DATASET-copy-$r\"" "$@" \
      >"$LOG_DIR/cache-$name-$r.json" &
    pids+=($!)
  done
  for r in 0 1 2; do
    wait "${pids[$r]}"
  done
  cat "$LOG_DIR/cache-$name-"{0,1,2}.json
}

log "dataset $dataset_mb MB; one node in a $MEMORY_MB MB memory group"
cold_page_cache
page=$(in_group "$GROUP" page-cache)
cold_page_cache
minio=$(in_group "$GROUP" minio "cache.memory=\"${CACHE_MB}M\"")
cold_page_cache
tiered=$(in_group "$GROUP" tiered "cache.memory=\"${CACHE_MB}M\"" "cache.disk=\"$TIER_DIR\"" \
  "cache.disk_size=\"${DISK_MB}M\"")

log "three nodes on loopback, each in a $CLUSTER_MB MB memory group"
port=$((21000 + RANDOM % 9000))
peers="[\"127.0.0.1:$port\",\"127.0.0.1:$((port + 1))\",\"127.0.0.1:$((port + 2))\"]"
c_page=$(cluster c-page)
c_alone=$(cluster c-alone "cache.memory=\"${share_mb}M\"")
c_peers=$(cluster c-peers "cache.memory=\"${share_mb}M\"" "cluster.peers=$peers")

row() {  # row NAME JSON
  $PYTHON - "$1" "$2" <<'PY'
import json, sys
name, j = sys.argv[1], json.loads(sys.argv[2])
ends = j["epoch_end_s"]
times = [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]
fmt = lambda xs: " / ".join(f"{x:.0f}" for x in xs)
print(f"| {name} | {fmt(j['disk_mb'])} | {fmt(j['storage_mb'])} | "
      f"{' / '.join(str(x) for x in j['cache_hits'])} | {' / '.join(f'{t:.1f}' for t in times)} | "
      f"{j['cached_mb']:.0f} | {j['peak_rss_mb']:.0f} |")
PY
}

cluster_rows() {  # cluster_rows NAME JSON-LINES: the three nodes' sums per epoch
  $PYTHON - "$1" "$2" <<'PY'
import json, sys
name, nodes = sys.argv[1], [json.loads(l) for l in sys.argv[2].splitlines() if l.strip()]
def total(key):
    return [sum(n[key][e] if e < len(n[key]) else 0 for n in nodes) for e in range(3)]
fmt = lambda xs: " / ".join(f"{x:.0f}" for x in xs)
wall = max(n["wall_s"] for n in nodes)
failed = sum(len(n["failed_peers"]) for n in nodes)
print(f"| {name} | {fmt(total('disk_mb'))} | {fmt(total('storage_mb'))} | "
      f"{fmt(total('storage_reads'))} | {fmt(total('peer_mb'))} | {fmt(total('peer_fallbacks'))} | "
      f"{fmt(total('cache_hits'))} | {wall:.1f} | {sum(n['lost'] for n in nodes)} | {failed} |")
PY
}

{
  echo "# The MinIO cache vs the page cache alone, on one node and on three"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs (10% of them 1800-3200 px) in record shards, $dataset_mb MB"
  echo "- every run: default topology, batch 32, 3 epochs, trainer.step_ms 0; page cache dropped"
  echo "  before each run; command: bench/cache.sh $MEMORY_MB $IMAGES"
  echo
  echo "## One node, in a cgroup-v1 memory group of $MEMORY_MB MB (page cache included)"
  echo
  echo "| run | disk MB per epoch | loader reads MB per epoch | cache hits per epoch | epoch s | cached MB | peak RSS MB |"
  echo "|---|---|---|---|---|---|---|"
  row "page cache alone" "$page"
  row "MinIO ${CACHE_MB}M" "$minio"
  row "MinIO ${CACHE_MB}M + disk tier ${DISK_MB}M" "$tiered"
  echo
  echo "## Three nodes on loopback ([cluster] world 3), each in a memory group of $CLUSTER_MB MB"
  echo
  echo "Sums over the three nodes per epoch; wall: the slowest node. Caches: ${share_mb}M a node"
  echo "(a third of the set and 10% to spare). Each node reads its own copy of the set, as on"
  echo "separate hosts (on one host, three groups would share one page cache that holds the set)."
  echo
  echo "| run | disk MB | loader reads MB | storage reads | peer MB | peer fallbacks | cache hits | wall s | lost | failed peers |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cluster_rows "page cache alone" "$c_page"
  cluster_rows "MinIO, no peers" "$c_alone"
  cluster_rows "partitioned (cluster.peers)" "$c_peers"
} >"$RESULT"
cat "$RESULT"
