//! The device's copy engine: a worker thread that lands queued copies in
//! order, later than they are queued.
//!
//! Like a real device's command queue, copies are batched: the worker
//! starts one when the host rings the doorbell for it (a wait on it, or on a
//! later copy), or when it has sat in the queue for the batching window.
//! A copy nobody waits for therefore lands a window after it was queued,
//! and memory it writes holds poison until then.
//!
//! A host thread that waits for a copy spins for a moment before it
//! sleeps, as CUDA's default schedule (`cudaDeviceScheduleAuto`) does on a
//! machine with more cores than devices: a short copy then lands without
//! the waiting thread being put to sleep and woken again.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The work of one copy, run on the worker thread: it writes memory that
/// was allocated on the caller's thread and marks it landed. It holds the
/// memory it writes: an allocation whose tensors are dropped while a copy
/// into it is queued is freed once the copy is done, on the worker.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How long a host thread waiting for a copy spins before it sleeps.
/// Waking a sleeping thread costs tens of microseconds, about as much as a
/// small copy takes.
const WAIT_SPIN: Duration = Duration::from_micros(50);

struct Queued {
    number: u64,
    queued_at: Instant,
    job: Job,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Queued>,
    /// Copies up to this number were asked for: start them now.
    doorbell: u64,
    /// Number of the last copy queued (copies are numbered from 1).
    queued: u64,
    shutdown: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    work: Condvar,
    /// Number of the last copy that landed (they land in order).
    landed: AtomicU64,
    /// Held to sleep on `landed_signal` and to signal it, so that a waiter
    /// that found its copy not landed cannot miss the signal.
    landed_lock: Mutex<()>,
    landed_signal: Condvar,
    window: Duration,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Ask for copies up to `number` now. The worker is woken only when
    /// that asks for something new: a ring for copies already asked for
    /// (or landed) leaves it asleep.
    fn ring(&self, number: u64) {
        let mut queue = lock(&self.queue);
        if number <= queue.doorbell {
            return;
        }
        queue.doorbell = number;
        drop(queue);
        self.work.notify_all();
    }

    /// Ring for `number`, spin for [`WAIT_SPIN`] while it lands, then
    /// sleep until it has.
    fn wait(&self, number: u64) {
        if self.has_landed(number) {
            return;
        }
        self.ring(number);
        let start = Instant::now();
        while start.elapsed() < WAIT_SPIN {
            if self.has_landed(number) {
                return;
            }
            std::hint::spin_loop();
        }
        let mut guard = lock(&self.landed_lock);
        while !self.has_landed(number) {
            guard = self
                .landed_signal
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn has_landed(&self, number: u64) -> bool {
        self.landed.load(Ordering::Acquire) >= number
    }

    /// The worker: start the first queued copy once it is asked for or its
    /// window has passed; on shutdown, land everything still queued.
    fn run(&self) {
        let mut queue = lock(&self.queue);
        loop {
            let Some(front) = queue.jobs.front() else {
                if queue.shutdown {
                    return;
                }
                queue = self
                    .work
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let rest = self.window.saturating_sub(front.queued_at.elapsed());
            if !(queue.shutdown || front.number <= queue.doorbell || rest.is_zero()) {
                queue = self
                    .work
                    .wait_timeout(queue, rest)
                    .map(|(queue, _)| queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0);
                continue;
            }
            let Some(copy) = queue.jobs.pop_front() else {
                continue;
            };
            drop(queue);
            // A copy that panics still counts as landed, so that nobody
            // waits for it forever; its memory keeps its poison.
            let _ = catch_unwind(AssertUnwindSafe(copy.job));
            self.landed.store(copy.number, Ordering::Release);
            drop(lock(&self.landed_lock));
            self.landed_signal.notify_all();
            queue = lock(&self.queue);
        }
    }
}

/// A queued copy: wait for it, or ask whether it has landed.
#[derive(Clone)]
pub struct CopyTicket {
    number: u64,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CopyTicket {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CopyTicket")
            .field("copy", &self.number)
            .field("landed", &self.has_landed())
            .finish()
    }
}

impl CopyTicket {
    /// The copy's number on its device (copies are numbered from 1).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Start the copy now if it is still queued, and block until it (and
    /// every copy queued before it) has landed.
    pub fn wait(&self) {
        self.shared.wait(self.number);
    }

    /// Whether the copy has landed.
    pub fn has_landed(&self) -> bool {
        self.shared.has_landed(self.number)
    }
}

/// The queue and its worker thread; dropping it lands what is queued and
/// stops the worker.
pub(crate) struct CopyEngine {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
}

impl CopyEngine {
    /// Start a worker thread called `name`, which batches copies for
    /// `window`.
    pub(crate) fn start(name: String, window: Duration) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            landed: AtomicU64::new(0),
            landed_lock: Mutex::new(()),
            landed_signal: Condvar::new(),
            window,
        });
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(name)
                .spawn(move || shared.run())?
        };
        Ok(Self {
            shared,
            worker: Some(worker),
        })
    }

    /// Queue a copy: `make` receives the copy's number (to mark the memory
    /// it writes as in flight) and returns the work. Returns at once.
    pub(crate) fn enqueue(&self, make: impl FnOnce(u64) -> Job) -> CopyTicket {
        let mut queue = lock(&self.shared.queue);
        queue.queued += 1;
        let number = queue.queued;
        let job = make(number);
        // A worker with copies queued already waits out the first one's
        // window, which a later copy does not change: only an idle worker
        // needs waking, to start timing this one.
        let was_idle = queue.jobs.is_empty();
        queue.jobs.push_back(Queued {
            number,
            queued_at: Instant::now(),
            job,
        });
        drop(queue);
        if was_idle {
            self.shared.work.notify_all();
        }
        CopyTicket {
            number,
            shared: Arc::clone(&self.shared),
        }
    }

    /// Block until copy `number` has landed.
    pub(crate) fn wait(&self, number: u64) {
        self.shared.wait(number);
    }

    /// Block until every copy queued so far has landed.
    pub(crate) fn synchronize(&self) {
        let last = lock(&self.shared.queue).queued;
        self.shared.wait(last);
    }

    /// The batching window.
    pub(crate) fn window(&self) -> Duration {
        self.shared.window
    }
}

impl Drop for CopyEngine {
    fn drop(&mut self) {
        lock(&self.shared.queue).shutdown = true;
        self.shared.work.notify_all();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
