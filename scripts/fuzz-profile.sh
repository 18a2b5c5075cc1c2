#!/usr/bin/env bash
# Where a fuzz target's time goes, by kind of work, from `perf record`:
#
#   scripts/fuzz-profile.sh <fuzz binary> <seconds> [corpus dirs and libFuzzer flags...]
#   scripts/fuzz-profile.sh fuzz/target/x86_64-unknown-linux-gnu/release/transfer_contract 30 \
#     /tmp/corpus fuzz/seeds/transfer_contract -entropic=0
#
# Runs the binary for <seconds> (-max_total_time) under `perf record -F 499
# -g`, prints libFuzzer's closing figures, then each kind's share of the
# samples (self time, by symbol):
#   libFuzzer        fuzzer::* and the C++ library it uses: collecting the
#                    coverage features after each input, the corpus, mutations
#   coverage hooks   __sanitizer_cov_* (trace-compares callbacks)
#   ASan runtime     __asan*, __sanitizer::*, interceptors: the allocator,
#                    its stack traces, shadow poisoning, fake stacks
#   kernel           page faults (fresh pages the allocator hands out),
#                    scheduling, the corpus files libFuzzer writes
#   harness          this repository's crates (and std code instantiated
#                    for them, e.g. the case hand-off's channels)
#   tenferro         tenferro and its kernels
#   rust std         core, alloc, std
#   libc             memcpy, memset and the like
# and the 25 heaviest symbols. Needs `perf` (linux-perf); the data stays in
# $OUT (default: a temporary folder).
set -euo pipefail

binary="$1"
seconds="$2"
shift 2
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:detect_odr_violation=0}"

perf record -F 499 -g -o "$out/perf.data" -- "$binary" "$@" \
  -max_total_time="$seconds" -print_final_stats=1 -detect_leaks=0 > "$out/run.log" 2>&1 || true
grep -E "^#[0-9]+[[:space:]]+DONE|average_exec_per_sec" "$out/run.log" || tail -n 5 "$out/run.log"
perf report -i "$out/perf.data" --no-children --sort dso,sym -g none --percent-limit 0 --stdio 2>/dev/null \
  > "$out/report.txt"
python3 - "$out/report.txt" <<'EOF'
import re
import sys

ours = ("tenferro_transfer_", "tenferro_mock_devices", "example_vendor_device")
buckets = {}
rows = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    share, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
    if kind == "k":
        bucket = "kernel"
    elif sym.startswith("fuzzer::") or sym.startswith("std::__") or sym.startswith("std::_") or "fuzzer::" in sym[:40]:
        bucket = "libFuzzer"
    elif sym.startswith("__sanitizer_cov"):
        bucket = "coverage hooks"
    elif sym.startswith(("__asan", "__sanitizer", "__lsan", "asan_", "__interceptor", "___interceptor", "__ubsan")):
        bucket = "ASan runtime"
    elif any(name in sym for name in ours):
        bucket = "harness"
    elif "tenferro" in sym or sym.startswith(("strided", "<strided", "tcontract", "<tcontract", "t4a", "<t4a", "computegraph", "<computegraph")):
        bucket = "tenferro"
    elif sym.startswith(("core::", "<core::", "alloc::", "<alloc::", "std::", "<std::", "hashbrown", "<hashbrown")):
        bucket = "rust std"
    elif dso.startswith(("libc", "libm", "libstdc", "libgcc", "ld-linux")) or sym.startswith(("__mem", "mem", "__str", "__libc", "_int_", "pthread")):
        bucket = "libc"
    else:
        bucket = "other"
    buckets[bucket] = buckets.get(bucket, 0.0) + share
    rows.append((share, bucket, sym))
print("| kind | share of samples |")
print("|---|---|")
for bucket, share in sorted(buckets.items(), key=lambda item: -item[1]):
    print(f"| {bucket} | {share:.1f} % |")
print()
for share, bucket, sym in sorted(rows, reverse=True)[:25]:
    print(f"{share:6.2f} %  {bucket:15} {sym[:110]}")
EOF
echo "perf data, report and the run's log: $out"
