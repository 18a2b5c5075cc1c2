//! The machine's own figure, not the suite's: a libFuzzer target that only
//! looks at its input. `scripts/fuzz-night.sh` runs it beside the real
//! targets, so that a reader of docs/fuzzing.md can tell how fast this
//! machine runs libFuzzer at all from how fast the suite runs on it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(data);
});
