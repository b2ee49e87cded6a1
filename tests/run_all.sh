#!/usr/bin/env bash
# The project's whole test run, from a fresh clone: installs the third-party test
# peers, then format check, clippy and every cargo test. Exits non-zero if any step fails.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=()
step() {
  echo "==> $*"
  if ! "$@"; then
    failed+=("$*")
    echo "==> FAILED: $*"
  fi
}

if ! bash tests/interop/setup.sh; then
  echo "==> FAILED: bash tests/interop/setup.sh (test peers not installed)"
  exit 1
fi
# The tower-mcp peer is its own Cargo project; build it before the tests that start it.
step cargo build --locked --profile dev --manifest-path tests/interop/tower_peer/Cargo.toml \
  --target-dir "${CARGO_TARGET_DIR:-target}/tower-peer"
step cargo fmt --check
step cargo clippy --all-targets --locked -- -D warnings
step cargo test --locked --all-targets --no-fail-fast
step bash tests/conformance/run.sh

if ((${#failed[@]})); then
  printf '==> %d step(s) failed:\n' "${#failed[@]}"
  printf '    %s\n' "${failed[@]}"
  exit 1
fi
echo "==> all steps passed"
