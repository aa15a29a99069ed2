#!/usr/bin/env bash
# What watching a node costs (issue 51): the image recipe at trainer.step_ms 0 (the node as
# fast as it goes), without [monitor] metrics and with it while a scraper asks for /metrics and
# /state.json every second (a Prometheus scrape and the live page's poll), alternately in one
# invocation so both see the same machine. Target: the scraped node's samples/s within 1% of
# the plain node's (median over rounds).
#
#   bench/metrics_scrape.sh [ROUNDS=6]
#   BUSY=1 bench/metrics_scrape.sh [ROUNDS]   two CPU-bound competitors throughout
#
# Writes bench/results/metrics_scrape.md (BUSY=1: metrics_scrape_busy.md); the node logs stay
# in $LOG_DIR/metrics-*.log.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${1:-6}
BUSIED=""
LOAD="idle"
if [[ "${BUSY:-0}" == 1 ]]; then
  BUSIED="BUSY=1 "
  LOAD="two CPU-bound competitors at normal priority throughout"
fi
RESULT="$BENCH_ROOT/bench/results/metrics_scrape${BUSIED:+_busy}.md"
declare -A rate scrapes

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# scrape_every_second PORT COUNTFILE: asks for /metrics and /state.json once a second, one
# line in COUNTFILE per answered /metrics, until killed. One long-lived process, as Prometheus
# and a browser are (a curl started twice a second costs this 2-core machine more CPU than the
# node's endpoint does, and took it from the node: 0.979x with curl, BUSY=1, 12 rounds).
scrape_every_second() {
  exec "$PYTHON" - "$1" "$2" <<'PY'  # the background job is the scraper: kill ends it
import sys, time, urllib.request
port, count = sys.argv[1], sys.argv[2]
while True:
    for path in ("/metrics", "/state.json"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                r.read()
            if path == "/metrics":
                with open(count, "a") as f:
                    f.write("\n")
        except OSError:
            pass
    time.sleep(1)
PY
}

run_variant() {
  local round=$1 variant=$2 port out scraper="" count="$LOG_DIR/metrics-scrapes-$2-$1"
  NODE_LOG="$LOG_DIR/metrics-$variant-$round.log"
  : >"$count"
  if [[ $variant == scraped ]]; then
    port=$(free_port)
    scrape_every_second "$port" "$count" &
    scraper=$!
    out=$(recipe_node --set trainer.step_ms=0 --set monitor.metrics="127.0.0.1:$port")
    kill "$scraper"
    wait "$scraper" 2>/dev/null || true
  else
    out=$(recipe_node --set trainer.step_ms=0)
  fi
  rate[$variant,$round]=$(json_field "$out" samples_per_s)
  scrapes[$variant,$round]=$(wc -l <"$count")
  log "round $round: $variant ${rate[$variant,$round]} samples/s, ${scrapes[$variant,$round]} scrapes"
}

report() {
  local r plain scraped ratios=()
  echo "# What watching a node costs: /metrics and /state.json scraped every second"
  echo
  echo "$1"
  echo "- recipe: image (config/default.toml, map-400: 400 synthetic JPEGs, 10% 1800-3200 px), $EPOCHS epochs, trainer.step_ms 0"
  echo "- scraped: [monitor] metrics on a loopback port, one Python process asking /metrics then /state.json once a second"
  echo "- machine load: $LOAD"
  echo "- command: ${BUSIED}bench/metrics_scrape.sh $ROUNDS (the order alternates from round to round)"
  echo
  echo "| round | plain samples/s | scraped samples/s | scraped / plain | scrapes |"
  echo "|---|---|---|---|---|"
  for ((r = 1; r <= ROUNDS; r++)); do
    ratios+=("$(ratio "${rate[scraped,$r]}" "${rate[plain,$r]}")")
    echo "| $r | ${rate[plain,$r]} | ${rate[scraped,$r]} | ${ratios[-1]} | ${scrapes[scraped,$r]} |"
  done
  plain=$(median $(for ((r = 1; r <= ROUNDS; r++)); do echo "${rate[plain,$r]}"; done))
  scraped=$(median $(for ((r = 1; r <= ROUNDS; r++)); do echo "${rate[scraped,$r]}"; done))
  echo
  echo "Medians: plain $plain, scraped $scraped samples/s: **$(ratio "$scraped" "$plain")x**;" \
    "median of the per-round ratios $(median "${ratios[@]}")x (target >= 0.99x)."
}

build_tools
bench_recipe image
machine=$(machine_description)
busy_if_asked
alternating_rounds "$ROUNDS" plain scraped run_variant
report "$machine" | tee "$RESULT"
