#!/usr/bin/env bash
# Every benchmark in one run, then the README performance table (markdown) with the
# machine line: CPU model, cores, memory, load average before and after.
#
#   benches/scripts/bench_all.sh            # everything (about 30 min on 2 cores)
#   QUICK=1 benches/scripts/bench_all.sh    # small sizes, to check the command works
#
# Needs: cargo build --profile dist (or PROFILE=release after cargo build --release), bash tests/interop/setup.sh (TASKRAIL_PEERS_DIR/.peers).
# Every `taskrail bench` scenario uses its own temporary ledger; the FastMCP peer
# (side_by_side.sh) and the tower-mcp peer (push_tower.sh, built on first use) run in
# their own processes, so those figures are the client's alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${CARGO_TARGET_DIR:-$repo/target}/${PROFILE:-dist}/taskrail"
here="$repo/benches/scripts"
[[ -x "$bin" ]] || { echo "build first: cargo build --profile ${PROFILE:-dist}" >&2; exit 2; }
out="$(mktemp -d)"
trap 'kill "${demo_pid:-}" 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$out"' EXIT
unset TASKRAIL_DB

if [[ -n "${QUICK:-}" ]]; then
  push="--tasks 20 --pages 5"; push_tower="20 5 400"; idle="--tasks 100 --secs 5"; polite="--tasks 20 --secs 5 --poll-interval 500"
  start10="--tasks 1000"; start100="--tasks 5000"; sides=(100); scale=(100); criterion=""; floor_n=500
else
  push="--tasks 100 --pages 20"; push_tower="100 20 400"; idle="--tasks 1000 --secs 30"; polite="--tasks 100 --secs 20 --poll-interval 500"
  start10="--tasks 10000"; start100="--tasks 100000"; sides=(100 1000); scale=(100 1000 10000); criterion=1; floor_n=5000
fi

machine() {
  local model cores mem
  model="$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  cores="$(nproc)"
  mem="$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "${model:-unknown CPU}, $cores cores, $mem, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

run() { # name, command...
  local name="$1"; shift
  echo "== $name: $*" >&2
  "$@" >"$out/$name.txt" 2>&1 || echo "(failed: exit $?)" >>"$out/$name.txt"
  cat "$out/$name.txt" >&2
}

before="$(machine)"
if [[ -n "$criterion" ]]; then
  run reducer cargo bench --manifest-path "$repo/Cargo.toml" --bench reducer
  run render cargo bench --manifest-path "$repo/Cargo.toml" --bench render
fi
# shellcheck disable=SC2086
{
  run push "$bin" bench push-latency $push
  run push_tower bash "$here/push_tower.sh" $push_tower
  TASKRAIL_PEER_NODELAY=1 run push_tower_nodelay bash "$here/push_tower.sh" $push_tower
  run idle "$bin" bench idle $idle
  run politeness "$bin" bench politeness $polite
  run startup10 "$bin" bench startup $start10
  run startup100 "$bin" bench startup $start100
}
# The HTTP client alone, against the demo server in a process of its own.
"$bin" serve-demo >"$out/demo.url" 2>/dev/null &
demo_pid=$!
for _ in $(seq 100); do [[ -s "$out/demo.url" ]] && break; sleep 0.1; done
demo_url="$(head -1 "$out/demo.url")"
run http_floor "$bin" bench http-floor --url "$demo_url" --requests $floor_n
run http_floor_gap "$bin" bench http-floor --url "$demo_url" --requests $((floor_n / 5)) --gap-ms 10
kill "$demo_pid" 2>/dev/null || true
for n in "${sides[@]}"; do run "side$n" bash "$here/side_by_side.sh" "$n" 1000; done
for n in "${scale[@]}"; do ONLY_TASKRAIL=1 run "scale$n" bash "$here/side_by_side.sh" "$n" 1000; done
after="$(machine)"

pick() { grep -h -m1 "$2" "$out/$1.txt" 2>/dev/null | sed 's/^ *//; s/|/\//g' || true; }
echo
echo "machine: $before (at the start); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| what | measured | command |"
echo "|---|---|---|"
if [[ -n "$criterion" ]]; then
  echo "| reducer ingest | $(grep -h -A1 'ingest' "$out/reducer.txt" | grep -m2 'time:' | tr -s ' ' | paste -sd';') | \`cargo bench --bench reducer\` |"
  echo "| frame, render | $(grep -h -A1 -E 'frame|draw' "$out/render.txt" | grep 'time:' | tr -s ' ' | paste -sd';') | \`cargo bench --bench render\` |"
fi
echo "| push sent → drawn | $(pick push 'sent -> frame drawn') | \`taskrail bench push-latency $push\` |"
echo "| push sent → received / drawn, tower-mcp peer in its own process (axum's default sockets) | $(pick push_tower 'sent -> received') ; $(pick push_tower 'sent -> frame drawn') | \`benches/scripts/push_tower.sh $push_tower\` |"
echo "| same, the peer's sockets with TCP_NODELAY | $(pick push_tower_nodelay 'sent -> received') ; $(pick push_tower_nodelay 'sent -> frame drawn') | \`TASKRAIL_PEER_NODELAY=1 benches/scripts/push_tower.sh $push_tower\` |"
echo "| idle | $(pick idle 'CPU') ; $(pick idle 'frames drawn') | \`taskrail bench idle $idle\` |"
echo "| politeness | $(pick politeness 'per-task rate') ; $(pick politeness 'push on') | \`taskrail bench politeness $polite\` |"
echo "| start-up $start10 | $(pick startup10 'first frame') ; $(pick startup10 'RSS') | \`taskrail bench startup $start10\` |"
echo "| start-up $start100 | $(pick startup100 'first frame') ; $(pick startup100 'RSS') | \`taskrail bench startup $start100\` |"
echo "| HTTP client alone, back to back / 10 ms apart | $(pick http_floor 'us per request') ; $(pick http_floor_gap 'us per request') | \`taskrail bench http-floor --url URL\` (and \`--gap-ms 10\`) |"
for n in "${sides[@]}"; do
  echo "| watch vs FastMCP client, $n tasks, pollIntervalMs 1000 | $(pick "side$n" '^ratio') ; $(pick "side$n" '^taskrail watch') ; $(pick "side$n" '^FastMCP Client') | \`benches/scripts/side_by_side.sh $n 1000\` |"
done
echo
echo "| followed tasks | CPU per tasks/get, peak RSS | command |"
echo "|---|---|---|"
for n in "${scale[@]}"; do
  echo "| $n | $(pick "scale$n" '^scaling') | \`ONLY_TASKRAIL=1 benches/scripts/side_by_side.sh $n 1000\` |"
done
echo
echo "machine at the end: $after"
