#!/usr/bin/env bash
# Push latency against an independent server in its own process: the tower-mcp test peer
# (tests/interop/tower_peer) logs every push it makes (TASKRAIL_PEER_PUSH_LOG), and
# `taskrail bench push-latency --url` runs TASKS `work` tasks of STEPS steps DELAY_MS
# apart on it, matching each logged push with the frame that drew it.
#
#   benches/scripts/push_tower.sh [TASKS=100] [STEPS=20] [DELAY_MS=400]
# TASKRAIL_PEER_NODELAY=1 makes the peer's sockets set TCP_NODELAY (axum's default, and
# so the peer's, leaves Nagle's algorithm on: its small SSE writes then wait for ACKs).
# Needs: cargo build --profile dist (or PROFILE=release after cargo build --release).
# Builds the peer if needed, as tests/support/tower.rs does (dev profile, into
# ${CARGO_TARGET_DIR:-target}/tower-peer), so the tests' build is reused.
set -euo pipefail
tasks="${1:-100}"
steps="${2:-20}"
delay_ms="${3:-400}"
for v in "$tasks" "$steps" "$delay_ms"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "usage: $0 [TASKS] [STEPS] [DELAY_MS] (whole numbers)" >&2; exit 2; }
done
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target/${PROFILE:-dist}/taskrail"
peer_dir="$target/tower-peer"
peer_bin="$peer_dir/debug/taskrail-tower-peer"
[[ -x "$bin" ]] || { echo "build first: cargo build --profile ${PROFILE:-dist}" >&2; exit 2; }
out="$(mktemp -d)"
peer_pid=""
trap '[[ -z "$peer_pid" ]] || kill "$peer_pid" 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$out"' EXIT
unset TASKRAIL_DB

# A no-op when the peer is up to date. Settings meant for the main crate stay out.
env -u CARGO_TARGET_DIR -u RUSTFLAGS timeout 1500 \
  cargo build --locked --profile dev --manifest-path "$repo/tests/interop/tower_peer/Cargo.toml" \
  --target-dir "$peer_dir" >"$out/peer-build.log" 2>&1 \
  || { tail -20 "$out/peer-build.log" >&2; echo "building the tower peer failed" >&2; exit 1; }
[[ -x "$peer_bin" ]] || { echo "tower peer built but $peer_bin is missing" >&2; exit 1; }

TASKRAIL_PEER_PUSH_LOG="$out/push.log" "$peer_bin" --port 0 >"$out/peer.out" 2>"$out/peer.err" &
peer_pid=$!
for _ in $(seq 100); do grep -q READY "$out/peer.out" 2>/dev/null && break; sleep 0.1; done
url="$(awk '/^READY / {print $2; exit}' "$out/peer.out")"
[[ -n "$url" ]] || { echo "the tower peer did not get ready:" >&2; cat "$out/peer.err" >&2; exit 1; }

"$bin" bench push-latency --tasks "$tasks" --url "$url" --tool work \
  --args "{\"steps\":$steps,\"delay_ms\":$delay_ms}" --push-log "$out/push.log"
