//! A reader beside the call: the borrowed input read over and over, on a
//! thread of its own, for as long as the provider has it.
//!
//! A borrow may be read by others while the transfer runs (another
//! transfer of the same input, an engine reading it): a provider that
//! writes into its input and puts it back before it returns (swapping its
//! bytes in place to send them, say) leaves it as it found it, yet a reader
//! beside the call sees it changed. The reads after the call cannot see
//! that; this one can, where it reads while the input is changed: always
//! when the call waits with it changed (on its device, on the wire), and
//! where the machine has a core free for the reader otherwise. A call that
//! changes its input and puts it back within one stretch on a core the
//! reader shares may go unseen: the check can miss, but never fails a
//! provider that leaves its input alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tenferro_tensor::TensorRead;

use crate::run::effects::reread_backing;
use crate::values::compared::ReferenceView;
use crate::{Compared, Endpoint};

/// The longest a reader reads beside one call: a call that runs longer
/// (or hangs) is read for this long only.
const READ_FOR_AT_MOST: Duration = Duration::from_secs(2);

/// How long the call waits for the reader's first read before it goes on
/// without one.
const FIRST_READ_WAIT: Duration = Duration::from_secs(1);

/// `call` made while a reader beside it reads `input` from `source` and
/// compares it with `reference`: the call's result, and what the reader saw
/// (`Some(Compared::Same)`: it read the input at least once while the call
/// was in flight and it never differed; an `Image`: the first read that
/// differed; `None`: no read in flight succeeded, so nothing is known).
///
/// The reader reads once before the call starts, so that it is already
/// reading when the provider gets the input, and stops when the call
/// returns or after [`READ_FOR_AT_MOST`].
pub(super) fn read_beside<R>(
    source: &Endpoint,
    input: &TensorRead<'_>,
    reference: ReferenceView<'_>,
    call: impl FnOnce() -> R,
) -> (R, Option<Compared>) {
    let returned = AtomicBool::new(false);
    let reading = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("input-reader".to_owned())
            .spawn_scoped(scope, || {
                let seen = read_until(source, input, reference, &returned, &reading);
                // However it ended, the call waits no longer.
                reading.store(true, Ordering::Release);
                seen
            });
        let Ok(reader) = reader else {
            // No thread to read beside the call: the call alone.
            return (call(), None);
        };
        // Waited for by yielding, not by sleeping: a wake-up here would put
        // this thread on the reader's core, and the reader would sit out
        // the call.
        let waiting = Instant::now();
        while !reading.load(Ordering::Acquire) && waiting.elapsed() < FIRST_READ_WAIT {
            std::thread::yield_now();
        }
        let result = call();
        returned.store(true, Ordering::Release);
        let seen = reader.join().ok().flatten();
        (result, seen)
    })
}

/// Read `input` until `returned` (or for [`READ_FOR_AT_MOST`]); tell
/// `reading` after the first read.
fn read_until(
    source: &Endpoint,
    input: &TensorRead<'_>,
    reference: ReferenceView<'_>,
    returned: &AtomicBool,
    reading: &AtomicBool,
) -> Option<Compared> {
    let started = Instant::now();
    let mut in_flight = false;
    loop {
        // Whether the call was in flight for the whole read: only then
        // does what it saw count.
        let before = reading.load(Ordering::Relaxed) && !returned.load(Ordering::Acquire);
        match reread_backing(source, input, reference) {
            Compared::Same => in_flight |= before,
            changed @ Compared::Image(_) if before => return Some(changed),
            // Changed before the call began: not the call's doing to
            // judge here (the read before the call judges the input).
            Compared::Image(_) => return None,
            // A device busy with the call may refuse a read (memory a copy
            // reads from): that proves nothing, and the next may succeed.
            Compared::Failed { .. } => {}
            Compared::NotReadable { .. } => return None,
        }
        reading.store(true, Ordering::Release);
        if returned.load(Ordering::Acquire) || started.elapsed() > READ_FOR_AT_MOST {
            return in_flight.then_some(Compared::Same);
        }
        // Between reads, any other thread waiting for this core (the
        // device's own, which the call may be waiting on) runs first: a
        // reader that kept its core made the calls of a busy machine ten
        // times slower.
        std::thread::yield_now();
    }
}
