//! `cargo fuzz run transfer_contract`: a decoded case, route and provider
//! behaviour (a reference provider, a broken one, or a reference provider
//! meeting a device fault plan) through the real runtime, the Spy and the
//! oracle. Crashes when the harness panics, the oracle disagrees with the
//! runtime, a fault-free reference provider fails, or a broken provider or
//! device fault is not caught by exactly the rules the self-test declares.
//! The checks live in `tenferro_transfer_conformance::fuzzing`.

#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use tenferro_transfer_conformance::fuzzing::ContractFuzzer;
use tenferro_transfer_fuzz::{crash_on_unexpected_panics, describe};

thread_local! {
    // Rigs are kept between inputs: building a runtime per input would cost
    // most of the time.
    static FUZZER: RefCell<ContractFuzzer> = RefCell::new(ContractFuzzer::new());
}

fuzz_target!(init: crash_on_unexpected_panics(), |data: &[u8]| {
    FUZZER.with(|fuzzer| {
        if let Err(failure) = fuzzer.borrow_mut().run(data) {
            panic!("transfer_contract: {}", describe(&failure));
        }
    });
});
