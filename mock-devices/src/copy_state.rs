//! The life of one copy in flight, the bottom of the simulated devices'
//! copy machinery: when queued copies complete ([`CompletionMode`]), how one
//! lands ([`CopyPlan`]), the state of its destination ([`Memory`]: ready,
//! pending or failed, seen from outside as [`StorageCompletion`]), the copy
//! itself ([`CopyOp`]: completing it writes the landed image, settles the
//! destination's state, records the trace and wakes its waiters) and its
//! [`CopyToken`].
//!
//! It imports none of the device, storage and stream modules: what it needs
//! of the device a copy runs on (its clock, whether it is lost) it reaches
//! through [`CopyHost`].

use std::fmt;
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::trace::{self, Trace, TraceEvent};
use crate::{DeviceError, Element, hold};

/// When queued copies complete.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum CompletionMode {
    /// Deterministic (the default): a copy completes only when its token, or
    /// the token of a later copy on the same stream, is waited on, or the
    /// device releases it; never on its own, so tests do not depend on
    /// timing.
    #[default]
    Held,
    /// Soak runs: a copy completes `base` plus up to `jitter` after it was
    /// queued (a pseudo-random amount from `seed` and the copy number), in
    /// order within a stream and out of order across streams.
    Latency {
        /// Fixed latency.
        base: Duration,
        /// Largest extra latency.
        jitter: Duration,
        /// Seed of the jitter.
        seed: u64,
    },
}

/// How one copy lands, as the fault plan decides when it is queued.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CopyPlan {
    Full,
    Partial(usize),
    FailAfter(usize),
}

/// Whether the last copy into a storage has completed.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum StorageCompletion {
    /// Every copy into it has completed: it is readable.
    Complete,
    /// A copy into it is still in flight: it holds poison and refuses reads.
    Pending {
        /// The device doing the copy.
        device: String,
        /// The copy's number on that device.
        copy: u64,
    },
    /// The copy into it failed: it holds a partial image and refuses reads.
    Failed(DeviceError),
}

enum Status {
    Ready,
    /// A copy is writing the memory: the memory keeps its copy alive, as a
    /// real device keeps a queued copy whether or not anyone holds its event.
    Pending(Arc<CopyOp>),
    Failed(DeviceError),
}

/// The shared cells of one allocation: a copy in flight writes them later.
pub(crate) struct Memory<T> {
    data: RwLock<Vec<T>>,
    status: Mutex<Status>,
}

impl<T> Memory<T> {
    pub(crate) fn new(data: Vec<T>) -> Arc<Self> {
        Arc::new(Self {
            data: RwLock::new(data),
            status: Mutex::new(Status::Ready),
        })
    }

    /// How many elements it holds now (nothing, before a queued copy lands).
    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }

    /// Its elements, whatever its state (callers check
    /// [`Self::completion`] first).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Vec<T>> {
        self.data.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Its elements, to overwrite, whatever its state (callers check
    /// [`Self::completion`] first).
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Vec<T>> {
        self.data.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take its elements out, leaving it empty.
    pub(crate) fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.write())
    }

    fn set_status(&self, status: Status) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// A copy lands: `image` becomes its memory, then it is ready, or failed
    /// with `error`.
    fn land(&self, image: Vec<T>, error: Option<DeviceError>) {
        *self.write() = image;
        self.set_status(match error {
            None => Status::Ready,
            Some(error) => Status::Failed(error),
        });
    }

    /// The completion state, first letting a due copy complete (a copy in
    /// latency mode completes when it is observed after its due time).
    pub(crate) fn completion(&self) -> StorageCompletion {
        let pending = match &*self.status.lock().unwrap_or_else(PoisonError::into_inner) {
            Status::Ready => return StorageCompletion::Complete,
            Status::Failed(error) => return StorageCompletion::Failed(error.clone()),
            Status::Pending(op) => op.clone(),
        };
        pending.poll();
        match &*self.status.lock().unwrap_or_else(PoisonError::into_inner) {
            Status::Ready => StorageCompletion::Complete,
            Status::Failed(error) => StorageCompletion::Failed(error.clone()),
            Status::Pending(_) => StorageCompletion::Pending {
                device: pending.device.clone(),
                copy: pending.number,
            },
        }
    }
}

/// What a copy in flight needs of the device it runs on.
pub(crate) trait CopyHost: Send + Sync {
    /// The device's time now.
    fn now(&self) -> Instant;

    /// Wait until `due`: the device's clock skips ahead to it.
    fn advance_to(&self, due: Instant);

    /// The error every operation gets once the device is lost.
    fn lost_error(&self, device: &str) -> Option<DeviceError>;

    /// The copies queued on `stream` before copy `number` that may still be
    /// in flight, oldest first: a stream completes in order, so a wait
    /// lands them first.
    fn queued_before(&self, stream: usize, number: u64) -> Vec<Arc<CopyOp>>;
}

/// Who queues a copy, and when and how it lands.
pub(crate) struct CopySpec {
    /// The device doing the copy.
    pub(crate) device: String,
    /// The copy's number on that device.
    pub(crate) number: u64,
    /// The stream (command queue) it is queued on.
    pub(crate) stream: usize,
    /// When it completes on its own once observed (latency mode or a
    /// latency spike); `None`: only a wait or a release completes it.
    pub(crate) due: Option<Instant>,
    /// It never completes (a wait parks until the harness releases it).
    pub(crate) never: bool,
    /// How it lands.
    pub(crate) plan: CopyPlan,
}

type Landing = Box<dyn FnOnce(usize, Option<DeviceError>) + Send>;

/// One queued copy.
pub(crate) struct CopyOp {
    device: String,
    number: u64,
    stream: usize,
    bytes: usize,
    due: Option<Instant>,
    never: bool,
    plan: CopyPlan,
    landing: Mutex<Option<Landing>>,
    result: Mutex<Option<Result<(), DeviceError>>>,
    done: Condvar,
    trace: Option<Arc<Trace>>,
    host: Arc<dyn CopyHost>,
}

impl fmt::Debug for CopyOp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CopyOp")
            .field("device", &self.device)
            .field("number", &self.number)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl CopyOp {
    /// A copy of the `len` values `read` gives when the copy lands (the
    /// values themselves, or a kernel's read of its input as it runs) into
    /// `target`, which holds poison (refuses reads) from now until then.
    pub(crate) fn queue_reading<T: Element>(
        spec: CopySpec,
        host: Arc<dyn CopyHost>,
        len: usize,
        read: Box<dyn FnOnce() -> Vec<T> + Send>,
        target: &Arc<Memory<T>>,
    ) -> Arc<Self> {
        let bytes = len * std::mem::size_of::<T>();
        // The memory keeps the copy alive while it is pending; the copy
        // keeps only a weak reference back, so dropping the memory drops
        // the copy (it has nowhere to land).
        let memory = Arc::downgrade(target);
        let landing: Landing = Box::new(move |written: usize, error: Option<DeviceError>| {
            let Some(memory) = memory.upgrade() else {
                return;
            };
            let width = std::mem::size_of::<T>().max(1);
            let count = (written / width).min(len);
            // The target holds nothing until now (nobody can read memory a
            // copy is writing), so the copied values become its memory, and
            // whatever the copy did not reach holds poison.
            let mut image = read();
            image.truncate(count);
            image.resize(len, T::POISON);
            memory.land(image, error);
        });
        let op = Arc::new(Self {
            device: spec.device,
            number: spec.number,
            stream: spec.stream,
            bytes,
            due: spec.due,
            never: spec.never,
            plan: spec.plan,
            landing: Mutex::new(Some(landing)),
            result: Mutex::new(None),
            done: Condvar::new(),
            trace: trace::current(),
            host,
        });
        target.set_status(Status::Pending(Arc::clone(&op)));
        op
    }

    /// Record in the trace that the copy is queued.
    pub(crate) fn record_queued(&self) {
        self.record(TraceEvent::CopyQueued {
            device: self.device.clone(),
            copy: self.number,
            bytes: self.bytes,
        });
    }

    fn finished(&self) -> Option<Result<(), DeviceError>> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, event: TraceEvent) {
        if let Some(trace) = &self.trace {
            trace.push(event);
        }
    }

    /// Land the copy now: all of it, a prefix, or nothing, as its plan and
    /// the device's state say.
    fn complete(&self, forced: Option<DeviceError>) {
        let Some(landing) = self
            .landing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let forced = forced.or_else(|| self.host.lost_error(&self.device));
        let (written, error) = match (forced, self.plan) {
            (Some(error), _) => (0, Some(error)),
            (None, CopyPlan::Full) => (self.bytes, None),
            (None, CopyPlan::Partial(bytes)) => (bytes.min(self.bytes), None),
            (None, CopyPlan::FailAfter(bytes)) => {
                let written = bytes.min(self.bytes);
                (
                    written,
                    Some(DeviceError::CopyFailed {
                        device: self.device.clone(),
                        copy: self.number,
                        written,
                        bytes: self.bytes,
                    }),
                )
            }
        };
        landing(written, error.clone());
        self.record(match &error {
            None => TraceEvent::CopyCompleted {
                device: self.device.clone(),
                copy: self.number,
            },
            Some(error) => TraceEvent::CopyFailed {
                device: self.device.clone(),
                copy: self.number,
                reason: error.to_string(),
            },
        });
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(match error {
            None => Ok(()),
            Some(error) => Err(error),
        });
        self.done.notify_all();
    }

    /// Its number on its device.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Whether it is queued on `stream` before copy `number`.
    pub(crate) fn is_queued_before(&self, stream: usize, number: u64) -> bool {
        self.stream == stream && self.number < number
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished().is_some()
    }

    /// Complete the copy now unless it never completes (a device release),
    /// and return only once it has: another thread may be landing it, and
    /// a device's release, like a real device's synchronise, returns after
    /// every copy landed.
    pub(crate) fn poll_forced(&self) {
        if !self.never {
            self.complete(None);
            // Its outcome is for its own waiters.
            let _ = self.await_result();
        }
    }

    /// Complete the copy if it is due (latency mode); a held copy waits.
    fn poll(&self) {
        if self.never {
            return;
        }
        if self.due.is_some_and(|due| self.host.now() >= due) {
            self.complete(None);
        }
    }

    /// Land the copy if it can complete, as a later copy of its stream is
    /// waited on: a copy that never completes (a fault) holds up only its
    /// own waiters.
    fn land_in_order(&self) {
        if self.never || self.finished().is_some() {
            return;
        }
        if let Some(due) = self.due {
            self.host.advance_to(due);
        }
        self.complete(None);
        // Its outcome is for its own waiters: a later copy of the stream
        // lands whether or not an earlier one failed.
        let _ = self.await_result();
    }

    /// Block until whoever is landing the copy has recorded its result.
    fn await_result(&self) -> Result<(), DeviceError> {
        let mut result = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(result) = result.clone() {
                return result;
            }
            result = self
                .done
                .wait(result)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn wait(&self) -> Result<(), DeviceError> {
        self.record(TraceEvent::TokenWaited {
            device: self.device.clone(),
            copy: self.number,
        });
        if let Some(result) = self.finished() {
            return result;
        }
        // A stream completes in order: its earlier copies land first, whether
        // or not anyone still holds their tokens.
        for earlier in self.host.queued_before(self.stream, self.number) {
            earlier.land_in_order();
        }
        if self.never {
            hold::park_until_released();
            self.complete(Some(DeviceError::Abandoned {
                device: self.device.clone(),
                copy: self.number,
            }));
        } else {
            if let Some(due) = self.due {
                // The device's clock skips ahead: a modelled latency costs
                // no wall time.
                self.host.advance_to(due);
            }
            self.complete(None);
        }
        self.await_result()
    }
}

/// The completion token of one queued copy. Waiting is repeatable.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, StorageCompletion};
///
/// let device = SimDevice::new(0).unwrap();
/// let (tensor, token) = device.stream(0).enqueue_copy(vec![2], vec![1.5_f32, -0.0]).unwrap();
/// let storage = tenferro_mock_devices::sim_storage_of::<f32>(&tensor).unwrap();
/// assert!(matches!(storage.completion(), StorageCompletion::Pending { .. }));
/// token.wait().unwrap();
/// assert_eq!(storage.completion(), StorageCompletion::Complete);
/// ```
#[derive(Clone, Debug)]
pub struct CopyToken {
    op: Arc<CopyOp>,
}

impl CopyToken {
    pub(crate) fn new(op: Arc<CopyOp>) -> Self {
        Self { op }
    }

    /// Block until the copy completes; its error if it failed.
    ///
    /// # Errors
    ///
    /// The [`DeviceError`] the device's fault plan injected, or
    /// [`DeviceError::Abandoned`] when the harness gave up on the copy.
    pub fn wait(&self) -> Result<(), DeviceError> {
        self.op.wait()
    }

    /// Whether the copy has completed (successfully or not), without
    /// blocking.
    pub fn is_complete(&self) -> bool {
        self.op.poll();
        self.op.finished().is_some()
    }

    /// The copy's number on its device.
    pub fn copy_number(&self) -> u64 {
        self.op.number
    }
}
