#!/usr/bin/env bash
# The fast lane: what can be checked in a few minutes without the third-party peers, tmux
# or the network. Format check, clippy on every target, the library's unit tests, the
# benches compiled (not run), and the fast test binaries: house (layering, import loops,
# a pure reducer, file size and `//!` lines, the crate map) and views (the snapshot tests). Exits non-zero if any step fails; `bash tests/run_all.sh`
# runs everything.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# A snapshot that differs fails without writing a .snap.new beside it; INSTA_UPDATE=auto
# (or `cargo insta test`) to review one.
export INSTA_UPDATE="${INSTA_UPDATE:-no}"

failed=()
step() {
  echo "==> $*"
  if ! "$@"; then
    failed+=("$*")
    echo "==> FAILED: $*"
  fi
}

started=$SECONDS
step cargo fmt --check
step cargo clippy --all-targets --locked -- -D warnings
step cargo build --locked --benches
step cargo test --locked --lib --test house --test views

if ((${#failed[@]})); then
  printf '==> %d step(s) failed in %d s:\n' "${#failed[@]}" "$((SECONDS - started))"
  printf '    %s\n' "${failed[@]}"
  exit 1
fi
echo "==> fast lane passed in $((SECONDS - started)) s"
