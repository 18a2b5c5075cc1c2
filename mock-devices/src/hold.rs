//! Holding a thread that simulates a hang, and releasing it.
//!
//! A copy that never completes, or a provider that hangs on purpose, parks
//! its thread here. A watchdog that gives up on a case releases the holds of
//! the thread it gave up on, so the hung call returns an error and the
//! thread is not lost.

use std::collections::HashSet;
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};
use std::thread::ThreadId;

struct Holds {
    released: Mutex<HashSet<ThreadId>>,
    wake: Condvar,
}

static HOLDS: LazyLock<Holds> = LazyLock::new(|| Holds {
    released: Mutex::new(HashSet::new()),
    wake: Condvar::new(),
});

/// Park the calling thread until [`release`] names it. Returns once released.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::hold;
///
/// let worker = std::thread::spawn(|| hold::park_until_released());
/// let id = worker.thread().id();
/// while !hold::is_parked(id) {
///     std::thread::yield_now();
/// }
/// hold::release(id);
/// worker.join().unwrap();
/// ```
pub fn park_until_released() {
    let me = std::thread::current().id();
    let mut released = HOLDS
        .released
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    PARKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(me);
    while !released.remove(&me) {
        released = HOLDS
            .wake
            .wait(released)
            .unwrap_or_else(PoisonError::into_inner);
    }
    PARKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&me);
}

static PARKED: LazyLock<Mutex<HashSet<ThreadId>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// Whether `thread` is parked in [`park_until_released`] now.
pub fn is_parked(thread: ThreadId) -> bool {
    PARKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&thread)
}

/// Release `thread` if it is parked; a release of a thread that is not
/// parked is forgotten, so it cannot leak into a later hold.
pub fn release(thread: ThreadId) {
    if !is_parked(thread) {
        return;
    }
    HOLDS
        .released
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(thread);
    HOLDS.wake.notify_all();
}
