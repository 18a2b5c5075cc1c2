#!/bin/bash -eu
# Builds the cargo-fuzz targets for ClusterFuzzLite / OSS-Fuzz and puts each
# binary, its seed corpus and its options into $OUT.
#
# Inside the builder image $SRC and $OUT are set; outside it (to check this
# script on a developer machine) they default to the checkout's parent and
# ./cfl-out, e.g.:
#   OUT=/tmp/cfl-out FUZZ_TARGET_DIR=~/.cache/tenferro-transfer-conformance/fuzz-target .clusterfuzzlite/build.sh
here="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${SRC:-$(dirname "$here")}"
OUT="${OUT:-$here/cfl-out}"
mkdir -p "$OUT"
cd "$here"

# rust-toolchain.toml pins a stable toolchain, which cannot build with a
# sanitizer; the fuzz build uses the image's nightly.
export RUSTUP_TOOLCHAIN="${RUSTUP_TOOLCHAIN:-nightly}"
target_dir="${FUZZ_TARGET_DIR:-fuzz/target}"

# Release with debug assertions, as `cargo fuzz run` builds by default; the
# builder image's cargo wrapper adds the sanitizer of $SANITIZER. An
# address build keeps AddressSanitizer on every crate under test, as the
# image's checks of the binaries expect (fuzz/rustc-wrapper drops it by
# default, for speed: docs/fuzzing.md).
if [ "${SANITIZER:-}" = address ]; then
  export FUZZ_SANITIZE_PATH_CRATES=1
fi
cargo fuzz build -O --debug-assertions --target-dir "$target_dir"

bin_dir="$target_dir/x86_64-unknown-linux-gnu/release"
for target in transfer_contract host_provider; do
  cp "$bin_dir/$target" "$OUT/$target"
  rm -f "$OUT/${target}_seed_corpus.zip"
  (cd "fuzz/seeds/$target" && zip -q -j "$OUT/${target}_seed_corpus.zip" ./*)
  # A broken provider's hang is cut short by the harness's own watchdog;
  # anything near 60 s is a real hang.
  # detect_leaks = 0: the targets keep rigs between inputs (docs/fuzzing.md).
  printf '[libfuzzer]\ntimeout = 60\nrss_limit_mb = 4096\ndetect_leaks = 0\n[asan]\ndetect_leaks = 0\n' > "$OUT/$target.options"
done
echo "built into $OUT: $(ls "$OUT" | tr '\n' ' ')"
