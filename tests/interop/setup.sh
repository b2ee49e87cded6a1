#!/usr/bin/env bash
# Installs the third-party MCP servers the interop tests run against:
#   $TASKRAIL_PEERS_DIR/venv  Python venv with fastmcp + fastmcp-tasks (requirements.txt)
#   $TASKRAIL_PEERS_DIR/node  npm ci of package-lock.json (@modelcontextprotocol/server-everything)
# TASKRAIL_PEERS_DIR defaults to <repo>/.peers. Idempotent: each part is redone only
# when its pinned input file changed or the install is incomplete.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
peers="${TASKRAIL_PEERS_DIR:-$repo/.peers}"
mkdir -p "$peers"
peers="$(cd "$peers" && pwd)"

digest() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- Python: FastMCP peer ---------------------------------------------------
venv="$peers/venv"
want="$(digest "$here/requirements.txt")"
if [[ "$(cat "$venv/.taskrail-stamp" 2>/dev/null)" != "$want" ]] \
  || [[ ! -x "$venv/bin/python" ]]; then
  echo "setup: creating Python venv in $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$here/requirements.txt"
  "$venv/bin/python" -c 'import fastmcp, fastmcp_tasks'
  echo "$want" >"$venv/.taskrail-stamp"
else
  echo "setup: Python venv up to date ($venv)"
fi

# --- Node: server-everything ------------------------------------------------
node_dir="$peers/node"
want="$(digest "$here/package.json" "$here/package-lock.json")"
entry="$node_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ "$(cat "$node_dir/.taskrail-stamp" 2>/dev/null)" != "$want" || ! -f "$entry" ]]; then
  echo "setup: npm ci in $node_dir"
  mkdir -p "$node_dir"
  rm -f "$node_dir/.taskrail-stamp"
  cp "$here/package.json" "$here/package-lock.json" "$node_dir/"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  test -f "$entry"
  echo "$want" >"$node_dir/.taskrail-stamp"
else
  echo "setup: Node peers up to date ($node_dir)"
fi

echo "setup: peers ready in $peers"
