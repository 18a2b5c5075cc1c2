#!/usr/bin/env bash
# GPU evidence in one command, for a machine with an NVIDIA GPU and driver
# (no CUDA toolkit needed: cudarc loads libcuda at run time, NVRTC compiles
# tenferro-gpu's kernels). Builds with --features cuda, then runs, each
# with TRANSFER_CONFORMANCE_REQUIRE_CUDA=1 so a missing GPU fails instead
# of skipping:
#   1. the CUDA conformance suite (cuda-upload, cuda-download), as JSON and table;
#   2. the CUDA tests of the harness and the conformance crate;
#   3. the self-test of the CUDA providers (cuda-early-return must be caught);
#   4. the bandwidth benchmark, 1 KiB to 256 MiB, ours vs cudarc raw memcpy;
#   5. the CUDA vendor example (examples/cuda-vendor): its correct providers
#      pass every rule test, and its naive upload fails `completion` and no
#      other rule (its rule tests, --features demonstrate-failure).
# Results go under $OUT (default: ./gpu-check-out). Exit status: the first
# failing step's, after every step has run.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
export TRANSFER_CONFORMANCE_REQUIRE_CUDA=1
# tenferro-gpu's own switch: its probe panics instead of answering "no GPU".
export TENFERRO_REQUIRE_GPU=1
# Keep NVRTC's compiled kernels between the steps' processes.
export TENFERRO_CUDA_ARTIFACT_CACHE="${TENFERRO_CUDA_ARTIFACT_CACHE:-$OUT/nvrtc-cache}"

status=0
step() {
  local name="$1"
  shift
  printf '\n=== %s: %s\n' "$name" "$*" | tee -a "$OUT/summary.txt"
  local start=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$OUT/$name.log"
  printf '%s: exit %d in %d s\n' "$name" "$rc" "$((SECONDS - start))" | tee -a "$OUT/summary.txt"
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then status=$rc; fi
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true; } >"$OUT/device.txt"
cat "$OUT/device.txt"

step build cargo build --release --features cuda --workspace --all-targets
step suite-json bash -c 'cargo run --release --features cuda -- --provider cuda-upload --provider cuda-download --format json >"$0"' "$OUT/cuda-suite.json"
step suite cargo run --release --features cuda -- --provider cuda-upload --provider cuda-download
step tests cargo test --release --features cuda -p tenferro-transfer-cuda --test cuda -p tenferro-transfer-conformance --test cuda -- --nocapture
step self-test cargo run --release --features cuda -- self-test --provider cuda-upload --provider cuda-download
step bandwidth cargo run --release -p tenferro-transfer-cuda --features cuda --example cuda_bandwidth -- "$OUT/bandwidth.md"
step vendor cargo test --release -p example-cuda-vendor --features cuda -- --nocapture
# The naive upload's rule tests must fail, on `completion` and nothing else.
naive_fails_completion_only() {
  local log="$OUT/vendor-naive-tests.log"
  if cargo test --release -p example-cuda-vendor --features demonstrate-failure --test naive_upload >"$log" 2>&1; then
    echo "the naive upload passed every rule test: completion did not catch it"; return 1
  fi
  local failed
  failed=$(grep -E "^test [^ ]+ \.\.\. FAILED" "$log")
  echo "$failed"
  [ "$failed" = "test naive_upload::completion ... FAILED" ]
}
step vendor-naive naive_fails_completion_only

printf '\nresults under %s (summary.txt, *.log, bandwidth.md)\n' "$OUT"
exit "$status"
