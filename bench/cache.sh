#!/usr/bin/env bash
# The MinIO cache against the page cache alone (issue 16), where the page cache cannot hold
# the dataset: conveyor-node runs in a cgroup-v1 memory group of MEMORY_MB, on a generated shard
# set about twice that size, 3 epochs, the page cache dropped before each run. Figures per
# epoch from the node's JSON line: disk_mb (what the process read from the storage devices,
# /proc/self/io read_bytes), storage_mb (what the loader read through the page cache),
# cache_hits, and epoch_end_s. Needs root (cgroup, drop_caches).
#
#   bench/cache.sh [MEMORY_MB=512] [IMAGES=5000]
#
# The MinIO run gets cache.memory = CACHE_MB (default MEMORY_MB / 2) in the same group: the
# same memory for both, the page cache has whatever the process does not use.
# Writes bench/results/cache.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MEMORY_MB=${1:-512}
IMAGES=${2:-5000}
CACHE_MB=${CACHE_MB:-$((MEMORY_MB / 2))}
DATASET="$DATA_DIR/cache-$IMAGES"
GROUP=/sys/fs/cgroup/memory/conveyor-cache-bench
RESULT="$BENCH_ROOT/bench/results/cache.md"

build_tools conveyor-pack
ensure_shards "$DATASET" "$IMAGES" 0.1
dataset_mb=$(du -sm "$DATASET" | cut -f1)

mkdir -p "$GROUP"
trap 'rmdir "$GROUP" 2>/dev/null || true' EXIT
echo $((MEMORY_MB * 1024 * 1024)) >"$GROUP/memory.limit_in_bytes"

# in_group NAME [key=value ...]: one node run in the group from a cold page cache; its JSON line.
in_group() {
  local name=$1
  shift
  local sets=(--set "dataset.path=$DATASET" --set trainer.epochs=3 --set pipeline.batch_size=32
    --set trainer.step_ms=0)
  local kv
  for kv in "$@"; do
    sets+=(--set "$kv")
  done
  sync
  echo 3 >/proc/sys/vm/drop_caches
  sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$GROUP" "$NODE_BIN" \
    --topology "$BENCH_ROOT/config/default.toml" "${sets[@]}" 2>"$LOG_DIR/cache-$name.log"
}

log "dataset $dataset_mb MB in a $MEMORY_MB MB memory group"
page=$(in_group page-cache)
minio=$(in_group minio "cache.memory=\"${CACHE_MB}M\"")

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

{
  echo "# The MinIO cache vs the page cache alone"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs (10% of them 1800-3200 px) in record shards, $dataset_mb MB"
  echo "- node: in a cgroup-v1 memory group of $MEMORY_MB MB (page cache included), default"
  echo "  topology, batch 32, 3 epochs, trainer.step_ms 0; page cache dropped before each run"
  echo "- MinIO: cache.memory = ${CACHE_MB}M in the same group"
  echo "- command: bench/cache.sh $MEMORY_MB $IMAGES"
  echo
  echo "| run | disk MB per epoch | loader reads MB per epoch | cache hits per epoch | epoch s | cached MB | peak RSS MB |"
  echo "|---|---|---|---|---|---|---|"
  row "page cache alone" "$page"
  row "MinIO ${CACHE_MB}M" "$minio"
} >"$RESULT"
cat "$RESULT"
