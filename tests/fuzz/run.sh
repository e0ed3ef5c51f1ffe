#!/usr/bin/env bash
# Builds the fuzz targets once and runs each from its committed corpus for a bounded time;
# fails on the first crash (the input is left in target/fuzz/artifacts/<target>/).
# Usage: bash tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]   (default 5 s, all)
#        bash tests/fuzz/run.sh --build-only                      (build the targets, run none)
# FUZZ_PROFILE=release builds optimised targets, for long runs (a cold release build takes
# over twice the CPU of the default dev build: FUZZING.md, Build cost).
# New inputs the fuzzer finds go to a scratch directory, so the committed corpus stays as
# it is (FUZZING.md says how to merge the useful ones).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_only=false
if [ "${1:-}" = --build-only ]; then build_only=true; shift; fi
seconds="${1:-5}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(request_info selectors bodies patches lists definitions crds)
fi
target_dir=target/fuzz
profile="${FUZZ_PROFILE:-dev}"
if [ "$profile" = release ]; then build_flag=--release; out=release; else build_flag=--dev; out=debug; fi
# Stable toolchain: cargo-fuzz's -Z flags need RUSTC_BOOTSTRAP. No sanitizer: the server
# forbids unsafe code, so AddressSanitizer would find nothing a panic does not.
RUSTC_BOOTSTRAP=1 cargo fuzz build "$build_flag" -s none --fuzz-dir tests/fuzz --target-dir "$target_dir"
if $build_only; then exit 0; fi
bin_dir="$target_dir/$(rustc -vV | sed -n 's/^host: //p')/$out"
artifacts="$target_dir/artifacts"
for t in "${targets[@]}"; do
  scratch="$(mktemp -d)"
  mkdir -p "$artifacts/$t"
  echo "--> fuzz target $t: ${seconds}s from tests/fuzz/corpus/$t"
  if ! "$bin_dir/$t" "$scratch" "tests/fuzz/corpus/$t" -max_total_time="$seconds" \
      -timeout=10 -artifact_prefix="$artifacts/$t/" -print_final_stats=1 2>"$scratch.log"; then
    tail -n 60 "$scratch.log" >&2
    echo "fuzz target $t crashed; the input is in $artifacts/$t/" >&2
    rm -rf "$scratch" "$scratch.log"
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$scratch.log" || true
  rm -rf "$scratch" "$scratch.log"
done
