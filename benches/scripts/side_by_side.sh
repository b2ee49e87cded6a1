#!/usr/bin/env bash
# Side by side on one FastMCP peer: `taskrail watch` following N concurrent tasks to the
# end, then a FastMCP-client script following another N (tasks/get per task every
# pollIntervalMs, at most 16 in flight, as taskrail). Each follower runs
# under /usr/bin/time (CPU = user+sys, peak RSS = max resident); the peer logs when each
# task returns and the followers' terminal lines are stamped on arrival.
#
#   benches/scripts/side_by_side.sh [N=1000] [POLL_MS=2000]
# ONLY_TASKRAIL=1 skips the FastMCP round (the scaling table: CPU per tasks/get and RSS
# at N followed tasks; tasks/get counted from the watch's own ledger timeline). Between
# the rounds, `taskrail bench client-floor` follows another N tasks with the protocol
# client alone (no engine, ledger or output): the floor for CPU per tasks/get
# (NO_FLOOR=1 skips it).
# Needs: cargo build --profile dist (or PROFILE=release after cargo build --release), bash tests/interop/setup.sh (the .peers venv).
set -euo pipefail
n="${1:-1000}"
poll_ms="${2:-2000}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${TASKRAIL_PEERS_DIR:-$repo/.peers}/venv/bin/python"
bin="${CARGO_TARGET_DIR:-$repo/target}/${PROFILE:-dist}/taskrail"
here="$repo/benches/scripts"
out="$(mktemp -d)"
trap 'kill "$peer_pid" 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$out"' EXIT
[[ -x "$bin" ]] || { echo "build first: cargo build --profile ${PROFILE:-dist}" >&2; exit 2; }
[[ -x "$py" ]] || { echo "install the peers first: bash tests/interop/setup.sh" >&2; exit 2; }

TASKRAIL_PEER_DONE_LOG="$out/done.jsonl" TASKRAIL_PEER_SLEEP_POLL_MS="$poll_ms" \
  TASKRAIL_PEER_CONCURRENCY=$(( 2 * n + 100 )) \
  "$py" "$repo/tests/interop/fastmcp_peer.py" >"$out/peer.out" 2>"$out/peer.err" &
peer_pid=$!
for _ in $(seq 300); do grep -q READY "$out/peer.out" 2>/dev/null && break; sleep 0.1; done
url="$(awk '/READY/ {print $2}' "$out/peer.out")"
[[ -n "$url" ]] || { cat "$out/peer.err" >&2; exit 1; }
echo "peer: $url (pid $peer_pid)"
uptime

# Tasks end between BASE and BASE+SPREAD seconds after creation starts: long enough
# for the creation of all N, and spread so completions fall anywhere in a poll cycle.
base=$(( 20 + n / 50 )); spread=20

echo "round 1: taskrail watch"
"$py" "$here/fastmcp_tasks_client.py" create "$url" "$n" --base "$base" --spread "$spread" --out "$out/taskrail.ids"
mapfile -t ids <"$out/taskrail.ids"
/usr/bin/time -f '%U %S %M %e' -o "$out/taskrail.time" \
  "$bin" --db "$out/ledger.db" --log-file "$out/taskrail.log" watch --server "$url" --json -- "${ids[@]}" \
  2>"$out/taskrail.err" | python3 "$here/fastmcp_tasks_client.py" stamp --out "$out/taskrail.detected" || true

if [[ -z "${NO_FLOOR:-}" ]]; then
  echo "floor: the protocol client alone (taskrail bench client-floor)"
  "$py" "$here/fastmcp_tasks_client.py" create "$url" "$n" --base "$base" --spread "$spread" --out "$out/floor.ids"
  mapfile -t floor_ids <"$out/floor.ids"
  "$bin" bench client-floor --url "$url" -- "${floor_ids[@]}" | sed -n 1,2p || true
fi

if [[ -z "${ONLY_TASKRAIL:-}" ]]; then
  echo "round 2: FastMCP client"
  "$py" "$here/fastmcp_tasks_client.py" create "$url" "$n" --base "$base" --spread "$spread" --out "$out/fastmcp.ids"
  /usr/bin/time -f '%U %S %M %e' -o "$out/fastmcp.time" \
    "$py" "$here/fastmcp_tasks_client.py" follow "$url" "$out/fastmcp.ids" --out "$out/fastmcp.detected"
fi

python3 "$here/side_by_side_report.py" "$out" "$poll_ms"
uptime
