#!/usr/bin/env bash
# Fuzzing speed, before and after instrumenting only the crates under test
# (fuzz/rustc-wrapper), in one command:
#
#   scripts/fuzz-speed.sh              # 30 s and 5 min per target and build
#   FUZZ_SPEED_SECONDS="30" scripts/fuzz-speed.sh
#   FUZZ_SPEED_SECONDS="30" FUZZ_SPEED_FLAGS="-entropic=0" scripts/fuzz-speed.sh   # as the smoke run
#
# Builds each fuzz crate twice with `cargo +nightly fuzz build -s address`
# (release with debug assertions, as `cargo fuzz run` builds):
#   - "all": every crate instrumented and under AddressSanitizer, as before
#     the wrapper (RUSTC_WRAPPER set empty, which overrides
#     .cargo/config.toml), in its own target folder
#     ($FUZZ_BASELINE_TARGET_DIR, default fuzz/target/all);
#   - "under-test": the wrapper in effect (coverage on the crates under
#     test, ASan only where its `sanitize` list says), in fuzz/target
#     ($FUZZ_TARGET_DIR), the folder `cargo fuzz run` and .ci/fuzz-smoke use.
# Then, for each of the three targets (transfer_contract, host_provider and
# the vendor example's transfer_contract) and each duration, runs the two
# builds back to back, alternating which goes first, each from the
# checked-in seeds (the vendor target has none) into an empty corpus, with
# the options of docs/performance.md row 8:
#   -max_total_time=<s> -print_final_stats=1 -detect_leaks=0, ASAN_OPTIONS=detect_leaks=0
# and prints one table row per run: exec/s, libFuzzer's cov and ft at the
# end, the corpus it grew, the counters the binary registers and the load
# average before the run. Coverage of the code under test: each run's
# corpus (with the seeds) is replayed (-runs=0) through the under-test
# binary, whose counters are exactly the code under test, so the two
# builds' corpora are measured by one yardstick ("cov/ft under test").
#
# Everything goes under $OUT (default fuzz/target/speed); the table is
# $OUT/table.md. Load matters: the figures are ratios of runs made under
# the same conditions; note `uptime`.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# Word splitting wanted: lists of durations and of libFuzzer flags.
# shellcheck disable=SC2206
seconds_list=(${FUZZ_SPEED_SECONDS:-30 300})
# shellcheck disable=SC2206
extra_flags=(${FUZZ_SPEED_FLAGS:-})
out="$(mkdir -p "${OUT:-fuzz/target/speed}" && cd "${OUT:-fuzz/target/speed}" && pwd)"
under_test_dir="$(mkdir -p "${FUZZ_TARGET_DIR:-fuzz/target}" && cd "${FUZZ_TARGET_DIR:-fuzz/target}" && pwd)"
all_dir="$(mkdir -p "${FUZZ_BASELINE_TARGET_DIR:-fuzz/target/all}" && cd "${FUZZ_BASELINE_TARGET_DIR:-fuzz/target/all}" && pwd)"
triple=x86_64-unknown-linux-gnu
vendor=examples/vendor-device

# cargo-fuzz adds detect_odr_violation=0 when it runs a target; the
# binaries run directly here, so add it too.
export ASAN_OPTIONS="detect_leaks=0:detect_odr_violation=0"

mkdir -p "$out/bin"
# build <variant> <dir to run cargo fuzz in> <bin prefix> <target...>
build() {
  local variant="$1" dir="$2" prefix="$3"
  shift 3
  local target_dir="$under_test_dir"
  local -a env=()
  if [ "$variant" = all ]; then
    target_dir="$all_dir"
    env=(RUSTC_WRAPPER=)
  fi
  echo "--- build: $variant, $dir ($*)"
  # Every target of the fuzz crate (cargo fuzz build takes one name or none).
  (cd "$dir" && env "${env[@]+"${env[@]}"}" cargo +nightly fuzz build -s address --target-dir "$target_dir" 2>&1 | tail -n 2)
  for target in "$@"; do
    # The repository's and the vendor's targets share a name and may share
    # a target folder: keep a copy of each binary.
    cp "$target_dir/$triple/release/$target" "$out/bin/$variant-$prefix$target"
  done
}
for variant in all under-test; do
  build "$variant" . "" transfer_contract host_provider
  build "$variant" "$vendor" vendor- transfer_contract
done

# last_stat <log> <field>: the value after "<field>: " on the last status line.
last_stat() {
  grep -E "^#[0-9]+[[:space:]]" "$1" | tail -n 1 | sed -nE "s/.* $2: ([0-9]+(\/[0-9]+[a-zA-Z]*)?).*/\1/p"
}
counters() {
  sed -nE 's/.*Loaded 1 modules +\(([0-9]+) inline 8-bit counters\).*/\1/p' "$1" | head -n 1
}
# run <variant> <target> <seconds>: one run from the seeds into a fresh corpus.
run() {
  local variant="$1" target="$2" seconds="$3"
  local name="$variant-$target-${seconds}s"
  local corpus="$out/corpus/$name" seeds=()
  rm -rf "$corpus" && mkdir -p "$corpus" "$out/artifacts/$name"
  case "$target" in
    vendor-*) ;;
    *) seeds=("$root/fuzz/seeds/$target") ;;
  esac
  local load
  load="$(uptime | sed 's/.*load average: //')"
  # A crash ends the run early and shows in the log; the table says so.
  "$out/bin/$variant-$target" "$corpus" "${seeds[@]+"${seeds[@]}"}" \
    -max_total_time="$seconds" -print_final_stats=1 -detect_leaks=0 ${extra_flags[@]+"${extra_flags[@]}"} \
    -artifact_prefix="$out/artifacts/$name/" > "$out/$name.log" 2>&1 || echo "  ($name ended with status $?: see $out/$name.log)"
  # The same corpus through the under-test binary: coverage of the code under test.
  "$out/bin/under-test-$target" "$corpus" "${seeds[@]+"${seeds[@]}"}" -runs=0 -detect_leaks=0 \
    > "$out/$name.replay.log" 2>&1 || true
  printf '| `%s` | %s s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n' \
    "$target" "$seconds" "$variant" \
    "$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$out/$name.log")" \
    "$(last_stat "$out/$name.log" cov)" "$(last_stat "$out/$name.log" ft)" \
    "$(last_stat "$out/$name.log" corp)" "$(counters "$out/$name.log")" \
    "$(last_stat "$out/$name.replay.log" cov)" "$(last_stat "$out/$name.replay.log" ft)" \
    "$load" | tee -a "$out/table.md"
}

{
  echo "fuzz speed, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(cargo +nightly --version)," \
    "-max_total_time=<time> -print_final_stats=1 -detect_leaks=0 ${extra_flags[*]+${extra_flags[*]}}"
  echo
  echo "| target | time | build | exec/s | cov | ft | corpus | counters | cov / ft under test | load before |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$out/table.md"
cat "$out/table.md"
flip=0
for seconds in "${seconds_list[@]}"; do
  for target in transfer_contract host_provider vendor-transfer_contract; do
    # Alternate which build runs first, so a drift in load does not always
    # favour the same one.
    if [ "$flip" = 0 ]; then order=(all under-test); flip=1; else order=(under-test all); flip=0; fi
    for variant in "${order[@]}"; do
      run "$variant" "$target" "$seconds"
    done
  done
done
echo "table: $out/table.md"
