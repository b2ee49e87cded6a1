#!/usr/bin/env bash
# Runs the MCP client conformance suite (@modelcontextprotocol/conformance, pinned in
# package-lock.json, with the Node 22 it needs from npm) against `taskrail conformance`.
# Installs into $TASKRAIL_PEERS_DIR/conformance (default <repo>/.peers/conformance).
# Exits non-zero when any scenario fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
peers="${TASKRAIL_PEERS_DIR:-$repo/.peers}"
dir="$peers/conformance"
scenarios=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)

want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$dir/.taskrail-stamp" 2>/dev/null)" != "$want" || ! -x "$dir/node_modules/.bin/node" ]]; then
  echo "conformance: npm ci in $dir"
  mkdir -p "$dir"
  rm -f "$dir/.taskrail-stamp"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$dir/.taskrail-stamp"
fi

# A private copy of the binary: a shared target dir may be rebuilt under us.
(cd "$repo" && cargo build --locked --quiet --bin taskrail)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "${CARGO_TARGET_DIR:-$repo/target}/debug/taskrail" "$work/taskrail"

export PATH="$dir/node_modules/.bin:$PATH"
node --version
passed=0
failed=0
for s in "${scenarios[@]}"; do
  echo "conformance: scenario $s"
  if (cd "$work" && timeout 180 conformance client \
    --command "$work/taskrail --db $work/ledger.db --log-file $work/$s.log conformance" \
    --scenario "$s" >"$work/$s.out" 2>&1) && grep -q "OVERALL: PASSED" "$work/$s.out"; then
    passed=$((passed + 1))
    grep -E "^Passed:" "$work/$s.out" || true
  else
    failed=$((failed + 1))
    cat "$work/$s.out"
    echo "--- client log"
    tail -n 40 "$work/$s.log" 2>/dev/null || true
  fi
done
echo "conformance: $passed passed, $failed failed"
((failed == 0))
