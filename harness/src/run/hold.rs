//! Holding a thread that simulates a hang, and releasing it.
//!
//! A copy that never completes, or a provider that hangs on purpose, parks
//! its thread here. A watchdog that gives up on a case releases the holds of
//! the thread it gave up on, so the hung call returns an error and the
//! thread is not lost.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};
use std::thread::ThreadId;

thread_local! {
    static PARK_HOOK: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Call `hook` on this thread each time it parks in
/// [`park_until_released`], after it is registered as parked (replacing an
/// earlier hook; `None` removes it).
///
/// A simulated hang lasts until the harness releases it, so a watchdog that
/// hears of the park knows the case will overrun any deadline: it can judge
/// the deadline at once instead of waiting it out on the wall clock (the
/// test owns the clock of a simulated hang; a real hang keeps the wall
/// clock).
///
/// # Examples
///
/// ```
/// use std::sync::mpsc;
/// use tenferro_transfer_harness::hold;
///
/// let (parked, heard) = mpsc::channel();
/// let worker = std::thread::spawn(move || {
///     hold::on_park(Some(Box::new(move || {
///         let _ = parked.send(());
///     })));
///     hold::park_until_released();
/// });
/// heard.recv().unwrap();
/// hold::release(worker.thread().id());
/// worker.join().unwrap();
/// ```
pub fn on_park(hook: Option<Box<dyn Fn()>>) {
    PARK_HOOK.with(|slot| *slot.borrow_mut() = hook);
}

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
/// use tenferro_transfer_harness::hold;
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
    // Nothing but a release ends this hold, so whoever watches the thread
    // may advance its clock to the deadline now (see `on_park`).
    PARK_HOOK.with(|hook| {
        if let Some(hook) = hook.borrow().as_ref() {
            hook();
        }
    });
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
