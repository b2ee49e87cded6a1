#!/usr/bin/env bash
# Peak RSS of `taskrail watch` and of the dashboard against each memory-hostile server
# behaviour, and subscriptions/listen requests per 10 s against a listen that keeps
# ending. Each run lasts SECS (default 20); RSS is VmHWM from /proc, sampled every 0.2 s
# (a run that hits the 6 GiB address-space cap ends early and says so).
#
#   benches/scripts/hostile_rss.sh BIN [SECS]
# BIN: the taskrail binary to measure (e.g. target/debug/taskrail, or an older build).
# Needs: cargo test --no-run --test engine (the hostile server: its ignored test hostile_server::serve), python3, tmux.
set -uo pipefail
bin="$(realpath "$1")"
secs="${2:-20}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
serve="$(ls -t "${CARGO_TARGET_DIR:-$repo/target}"/debug/deps/engine-* | grep -v '\.d$' | head -1)"
out="$(mktemp -d)"
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$out"' EXIT

hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# Sample the peak RSS of PID for SECS seconds, or $2 (or until it exits); prints kB.
peak() {
  local pid=$1 best=0 v
  for _ in $(seq $((${2:-$secs} * 5))); do
    v=$(hwm "$pid"); [[ -n "$v" ]] || break
    ((v > best)) && best=$v
    sleep 0.2
  done
  echo "$best"
}

start_server() { # plan -> sets url, spid; the server's stderr counts what it saw
  local run="$1.$BASHPID.$RANDOM"
  mkfifo "$out/in.$run"
  HOSTILE_PLAN="$1" "$serve" --ignored --exact hostile_server::serve --nocapture \
    <"$out/in.$run" >"$out/serve.$run" 2>"$out/seen.$1" &
  spid=$!
  exec {hold}>"$out/in.$run"
  for _ in $(seq 100); do grep -q READY "$out/serve.$run" 2>/dev/null && break; sleep 0.1; done
  url="$(awk '/READY/ {print $2}' "$out/serve.$run")"
}
stop_server() { exec {hold}>&-; wait "$spid" 2>/dev/null; }

run_cli() { # plan, args… -> peak kB of the taskrail process
  local plan=$1; shift
  start_server "$plan"
  local args=("$@")
  args=("${args[@]//URL/$url}")
  ( ulimit -v 6291456; TASKRAIL_DB="$out/db.$plan" TASKRAIL_LOG="$out/log.$plan" \
      exec "$bin" "${args[@]}" >/dev/null 2>"$out/err.$plan" ) &
  local pid=$!
  local kb; kb=$(peak "$pid" "$([[ "$plan" == inputs-50k ]] && echo $((secs * 3)))")
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  stop_server
  echo "$kb"
}

run_board() { # plan -> peak kB of the dashboard in tmux
  local plan=$1 session="hostile-$$-$1"
  start_server "$plan"
  # The dashboard follows what its ledger holds: record the hostile task first.
  TASKRAIL_DB="$out/bdb.$plan" TASKRAIL_LOG="$out/blog.$plan" timeout 120 \
    "$bin" get -s "$url" task-0001-abcdef >/dev/null 2>&1
  tmux new -d -s "$session" -x 120 -y 35 \
    "ulimit -v 6291456; TASKRAIL_NO_NOTIFY=1 TASKRAIL_DB=$out/bdb.$plan TASKRAIL_LOG=$out/blog.$plan exec $bin --server $url"
  local pid; pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
  local kb
  if [[ "$plan" == inputs-50k ]]; then
    # 50,000 requests make every tasks/get slow: wait for the row, open its input form,
    # then measure with the form open.
    for _ in $(seq 120); do
      tmux capture-pane -p -t "$session" | grep -q "input needed" && break; sleep 0.5
    done
    tmux send-keys -t "$session" a
    kb=$(peak "$pid" $((secs * 2)))
  else
    kb=$(peak "$pid")
  fi
  local cpu; cpu=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null)
  tmux kill-session -t "$session" 2>/dev/null
  stop_server
  echo "$kb kB (CPU ticks ${cpu:-?})"
}

echo "binary: $bin ($secs s per run)"; uptime
for plan in get-flood-nonl get-flood-lines inputs-50k; do
  echo "watch  $plan: $(run_cli "$plan" watch -s URL task-0001-abcdef) kB"
  echo "board  $plan: $(run_board "$plan")"
done
echo "call   post-flood-nonl: $(run_cli post-flood-nonl call -s URL work) kB"
py="$repo/tests/support/hostile_stdio.py"
( ulimit -v 6291456; TASKRAIL_DB="$out/sdb" TASKRAIL_LOG="$out/slog" exec "$bin" call \
    -s "stdio:python3 $py --stderr-flood $((4 << 30))" work >/dev/null 2>&1 ) &
pid=$!
echo "call   stdio stderr flood: $(peak "$pid") kB"
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
start=$(date +%s.%N)
( ulimit -v 6291456; TASKRAIL_DB="$out/cdb" exec "$bin" --config /dev/zero ls >/dev/null 2>"$out/cerr" )
echo "config /dev/zero: exit $? after $(echo "$(date +%s.%N) - $start" | bc) s: $(head -c 200 "$out/cerr")"

for plan in listen-ends listen-unknown-response; do
  start_server "$plan"
  TASKRAIL_DB="$out/ldb.$plan" TASKRAIL_LOG="$out/llog.$plan" "$bin" watch -s "$url" \
    task-0001-abcdef >/dev/null 2>"$out/lerr.$plan" &
  pid=$!
  sleep 10; a=$(tail -1 "$out/seen.$plan" | awk '{print $3}')
  sleep 10; b=$(tail -1 "$out/seen.$plan" | awk '{print $3}')
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  stop_server
  echo "listen $plan: ${a:-?} listens in the first 10 s, $(( ${b:-0} - ${a:-0} )) in the next 10 s; $(grep -c 'push off' "$out/lerr.$plan") push-off notice(s)"
done
