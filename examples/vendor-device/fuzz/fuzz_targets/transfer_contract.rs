//! `cargo +nightly fuzz run transfer_contract`, in the vendor's crate: the
//! bytes decode into the suite's routes and a few cases in order, through
//! the vendor's own provider on the vendor's own device. Any broken rule is
//! a crash; `cargo test --test conformance fuzz_inputs` replays the crash
//! file under `cargo test`.
//!
//! The cases run on libFuzzer's own thread (`inline`), with no deadline: a
//! hang is libFuzzer's `-timeout`, and its file replays under the
//! deadline in `cargo test`. Handing each case to a worker thread and back
//! ran 0.85 to 0.94 times as fast (docs/performance.md, *Fuzzing*).

#![no_main]

// The suite and the device adapter, exactly as the crate's tests declare
// them.
#[path = "../../tests/support/mod.rs"]
mod support;

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use tenferro_transfer_conformance::SuiteFuzzer;

thread_local! {
    static FUZZER: RefCell<SuiteFuzzer> = RefCell::new(support::suite().fuzzer().inline());
}

fuzz_target!(|data: &[u8]| {
    FUZZER.with(|fuzzer| {
        if let Err(failure) = fuzzer.borrow_mut().run(data) {
            panic!("{failure}");
        }
    });
});
