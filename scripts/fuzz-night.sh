#!/usr/bin/env bash
# A night's fuzzing, written down: every fuzz target for a number of
# executions (or a time), each from its checked-in seeds, keeping what it
# finds, with one table row per target.
#
#   scripts/fuzz-night.sh                          # 10,000,000 executions per target
#   FUZZ_NIGHT_RUNS=1000000 scripts/fuzz-night.sh  # fewer
#   FUZZ_NIGHT_SECONDS=30 scripts/fuzz-night.sh    # 30 s per target instead
#   FUZZ_NIGHT_TARGETS="transfer_contract host_provider" scripts/fuzz-night.sh
#                                                  # only these (default: all four)
#
# Targets, in order: `trivial` (a target that only looks at its input: the
# machine's own libFuzzer speed, so a reader can tell the machine from the
# suite), the repository's `transfer_contract` and `host_provider`, and the
# vendor example's `transfer_contract` (examples/vendor-device/fuzz, its own
# provider on its own device). Each is built as .ci/fuzz-smoke builds it
# (`cargo +nightly fuzz build -s address`, through fuzz/rustc-wrapper) and
# run directly with the smoke run's options (-entropic=0 -detect_leaks=0
# -timeout=60 -rss_limit_mb=4096).
#
# Everything goes under $OUT (default fuzz/target/night): the corpus each
# run grew (corpus/<target>, kept between nights: a second night goes on
# from the first), every crash, timeout and out-of-memory input
# (artifacts/<target>/), each run's log and table.md, the rows below.
# A crash does not stop the night: the run of that target ends, its row
# says so, and the next target runs. A crash input replays under
# `cargo test` once copied to fuzz/regressions/<target>/ (docs/fuzzing.md).
#
# Load matters: run it on an otherwise idle machine; each row notes the
# load average before its run.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

runs="${FUZZ_NIGHT_RUNS:-10000000}"
read -r -a targets <<< "${FUZZ_NIGHT_TARGETS:-trivial transfer_contract host_provider vendor-transfer_contract}"
for target in "${targets[@]}"; do
  case "$target" in
    trivial | transfer_contract | host_provider | vendor-transfer_contract) ;;
    *) echo "FUZZ_NIGHT_TARGETS: unknown target '$target' (trivial, transfer_contract, host_provider, vendor-transfer_contract)" >&2; exit 2 ;;
  esac
done
seconds="${FUZZ_NIGHT_SECONDS:-0}"
out="$(mkdir -p "${OUT:-fuzz/target/night}" && cd "${OUT:-fuzz/target/night}" && pwd)"
target_dir="$(mkdir -p "${FUZZ_TARGET_DIR:-fuzz/target}" && cd "${FUZZ_TARGET_DIR:-fuzz/target}" && pwd)"
triple="$(rustc -vV | sed -n 's/^host: //p')"
vendor=examples/vendor-device
# cargo-fuzz adds detect_odr_violation=0 when it runs a target; the
# binaries run directly here, so add it too.
export ASAN_OPTIONS="detect_leaks=0:detect_odr_violation=0"

if [ "$seconds" != 0 ]; then
  limit=(-max_total_time="$seconds")
  what="$seconds s per target"
else
  limit=(-runs="$runs")
  what="$runs executions per target"
fi

mkdir -p "$out/bin"
(cargo +nightly fuzz build -s address --target-dir "$target_dir" 2>&1 | tail -n 2)
for target in trivial transfer_contract host_provider; do
  cp "$target_dir/$triple/release/$target" "$out/bin/$target"
done
(cd "$vendor" && cargo +nightly fuzz build -s address --target-dir "$target_dir" 2>&1 | tail -n 2)
# The vendor's target shares its name with the repository's: copied apart.
cp "$target_dir/$triple/release/transfer_contract" "$out/bin/vendor-transfer_contract"

# last_stat <log> <field>: the value after "<field>: " on the last status line.
last_stat() {
  grep -E "^#[0-9]+[[:space:]]" "$1" | tail -n 1 | sed -nE "s/.* $2: ([0-9]+).*/\1/p"
}
final_stat() {
  sed -nE "s/^stat::$2: *([0-9]+).*/\1/p" "$1" | tail -n 1
}

{
  echo "fuzz night, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(cargo +nightly --version), $what," \
    "-print_final_stats=1 -entropic=0 -detect_leaks=0 -timeout=60 -rss_limit_mb=4096"
  echo
  echo "| target | executions | seconds | exec/s | cov | ft | corpus | inputs kept (crash, timeout, oom) | load before |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$out/table.md"
cat "$out/table.md"

for target in "${targets[@]}"; do
  corpus="$out/corpus/$target"
  artifacts="$out/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  if [ -d "$root/fuzz/seeds/$target" ]; then seeds=("$root/fuzz/seeds/$target"); fi
  load="$(uptime | sed 's/.*load average: //')"
  started="$(date +%s)"
  status=0
  "$out/bin/$target" "$corpus" "${seeds[@]+"${seeds[@]}"}" "${limit[@]}" \
    -print_final_stats=1 -entropic=0 -detect_leaks=0 -timeout=60 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" > "$out/$target.log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - started ))
  found="$(find "$artifacts" -type f | wc -l)"
  note=""
  if [ "$status" != 0 ]; then note=" (ended with status $status: $out/$target.log)"; fi
  printf '| `%s` | %s | %s | %s | %s | %s | %s | %s%s | %s |\n' \
    "$target" "$(final_stat "$out/$target.log" number_of_executed_units)" "$elapsed" \
    "$(final_stat "$out/$target.log" average_exec_per_sec)" \
    "$(last_stat "$out/$target.log" cov)" "$(last_stat "$out/$target.log" ft)" \
    "$(find "$corpus" -type f | wc -l)" "$found" "$note" "$load" | tee -a "$out/table.md"
done
echo "table: $out/table.md"
