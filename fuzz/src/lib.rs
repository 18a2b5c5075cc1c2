//! What both fuzz targets share: the panic hook, and how a failure is
//! printed.

use std::error::Error;
use std::panic;

use tenferro_transfer_conformance::fuzzing::INJECTED_PANIC_PREFIX;
use tenferro_transfer_conformance::harness::{panic_message, source_chain};

/// libfuzzer-sys aborts on every panic, before any `catch_unwind` sees it.
/// The broken providers panic on purpose and the Spy catches that; those
/// panics pass silently, every other one still goes to libfuzzer-sys's hook
/// and is a crash.
pub fn crash_on_unexpected_panics() {
    let crash = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !panic_message(info.payload()).starts_with(INJECTED_PANIC_PREFIX) {
            crash(info);
        }
    }));
}

/// `error` and its source chain, one cause a line.
pub fn describe(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    for cause in source_chain(error) {
        text.push_str(&format!("\n  caused by: {cause}"));
    }
    text
}
