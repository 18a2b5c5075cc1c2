//! `cargo fuzz run host_provider`: a decoded tensor or strided view, its
//! values the input's own bytes, through the real `HostProvider` on the
//! host-to-host route; every bit must arrive. The checks live in
//! `tenferro_transfer_conformance::fuzzing`.

#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use tenferro_transfer_conformance::fuzzing::HostFuzzer;
use tenferro_transfer_fuzz::{crash_on_unexpected_panics, describe};

thread_local! {
    static FUZZER: RefCell<HostFuzzer> = RefCell::new(HostFuzzer::new());
}

fuzz_target!(init: crash_on_unexpected_panics(), |data: &[u8]| {
    FUZZER.with(|fuzzer| {
        if let Err(failure) = fuzzer.borrow_mut().run(data) {
            panic!("host_provider: {}", describe(&failure));
        }
    });
});
