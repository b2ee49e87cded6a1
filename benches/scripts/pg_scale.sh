#!/usr/bin/env bash
# The scale of the PostgreSQL ledger (issue 37, point 5), on a throwaway PostgreSQL 15:
# start-up of the dashboard on TASKS finished tasks (first frame with all of them, RSS),
# the :stats read on them, and WRITERS writer processes (10 tasks/s each) for SECS seconds
# while two watchers run the dashboard's feed loop (lost / duplicated / latency).
#
#   benches/scripts/pg_scale.sh [TASKS] [WRITERS] [SECS] [RUNS]
# Defaults: 100000 20 30 3 (RUNS: start-up and feed runs, for the run-to-run range).
# TASKRAIL_BIN: the binary (default target/release/taskrail, built if missing).
# TASKRAIL_PG_BIN: PostgreSQL's bin directory (default /usr/lib/postgresql/15/bin).
# FEED_INTERVAL_MS: how often the watchers check for news (default 250, the dashboard's).
# SKIP_FILL=1: skip the fill, start-up and :stats steps (feed scale only).
# The server: initdb in /tmp, loopback on a free port, trust auth, default settings
# (fsync on); run as the postgres user when this runs as root; stopped and removed at exit.
set -euo pipefail
tasks="${1:-100000}"
writers="${2:-20}"
secs="${3:-30}"
runs="${4:-3}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TASKRAIL_BIN:-$repo/target/release/taskrail}"
if [[ ! -x "$bin" ]]; then
  (cd "$repo" && cargo build --release)
fi
pgbin="${TASKRAIL_PG_BIN:-/usr/lib/postgresql/15/bin}"
[[ -x "$pgbin/initdb" ]] || { echo "no PostgreSQL 15 at $pgbin (apt-get install postgresql-15)" >&2; exit 1; }

as_pg() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

data="$(mktemp -d /tmp/taskrail-pgscale-XXXXXX)"
[[ "$(id -u)" == 0 ]] && chown postgres:postgres "$data"
stop() {
  as_pg "$pgbin/pg_ctl" -D "$data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$data"
}
trap stop EXIT
as_pg "$pgbin/initdb" -D "$data" -A trust -U postgres -E UTF8 >/dev/null
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_pg "$pgbin/pg_ctl" -D "$data" -o "-c listen_addresses=127.0.0.1 -p $port -k $data" \
  -l "$data/server.log" -w -t 60 start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
psql_() { "$pgbin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
unset TASKRAIL_DB

echo "== PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $data)"
"$bin" --db "$url" ledger migrate
if [[ -z "${SKIP_FILL:-}" ]]; then
  echo "== filling the ledger with $tasks finished tasks (bench populate; synchronous_commit off for the fill only)"
  t0=$(date +%s.%N)
  PGOPTIONS='-c synchronous_commit=off' "$bin" bench populate --tasks "$tasks" --ledger "$url"
  echo "   filled in $(echo "$(date +%s.%N) - $t0" | bc) s"
  psql_ -c 'VACUUM ANALYZE'
  psql_ -At -c "SELECT 'ledger size: ' || pg_size_pretty(pg_database_size('postgres'))"

  for i in $(seq "$runs"); do
    echo "== start-up, run $i of $runs"
    "$bin" bench startup --ledger "$url"
  done

  # `bench populate` writes no timeline entries: give each task the ones a followed task
  # has (two status changes, a push, a run of unchanged polls), in SQL, for the read.
  echo "== :stats read (4 timeline entries a task added in SQL first)"
  psql_ -c "INSERT INTO taskrail.events (task, at, kind, latency_ms, detail)
    SELECT t.id, t.recorded_at + e.dt, e.kind, e.lat, e.detail
      FROM taskrail.tasks t,
           (VALUES (0, 'status', NULL::bigint, '{\"from\":null,\"to\":\"working\"}'),
                   (10, 'push', 3, '{}'),
                   (20, 'polls', NULL, '{\"unchanged\":5,\"status\":\"working\"}'),
                   (30, 'status', NULL, '{\"from\":\"working\",\"to\":\"completed\"}'))
             AS e(dt, kind, lat, detail)
     WHERE t.server = 'bench'"
  psql_ -c 'VACUUM ANALYZE taskrail.events'
  "$bin" bench activity --ledger "$url" --runs 5 --default-read
fi

for i in $(seq "$runs"); do
  echo "== feed scale, run $i of $runs"
  "$bin" bench feed-scale --ledger "$url" --writers "$writers" --rate 10 --secs "$secs" --watchers 2 \
    --feed-interval-ms "${FEED_INTERVAL_MS:-250}"
done
