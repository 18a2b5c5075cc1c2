//! `SimStream`: a simulated device's command queue. A queued copy poisons
//! its destination and completes only later: when someone waits on its
//! token, when the device releases it, or (in latency mode) once its due
//! time has passed and someone looks.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tenferro_tensor::{Error, StorageBuffer, Tensor, TypedTensor};

use crate::device::{CopyPlan, DeviceCore};
use crate::storage::{Memory, Status};
use crate::trace::{self, Trace, TraceEvent};
use crate::{DeviceError, Element, SimDevice, SimStorage, hold};

/// When queued copies complete.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum CompletionMode {
    /// Deterministic (the default): a copy completes only when its token is
    /// waited on or the device releases it, never on its own, so tests do
    /// not depend on timing.
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

type Landing = Box<dyn FnOnce(usize, Option<DeviceError>) + Send>;

/// One queued copy.
pub(crate) struct CopyOp {
    device: String,
    number: u64,
    bytes: usize,
    due: Option<Instant>,
    never: bool,
    plan: CopyPlan,
    landing: Mutex<Option<Landing>>,
    result: Mutex<Option<Result<(), DeviceError>>>,
    done: Condvar,
    trace: Option<Arc<Trace>>,
    core: Arc<DeviceCore>,
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
    pub(crate) fn device(&self) -> &str {
        &self.device
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
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
    pub(crate) fn complete(&self, forced: Option<DeviceError>) {
        let Some(landing) = self
            .landing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let forced = forced.or_else(|| self.core.lost_error(&self.device));
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

    pub(crate) fn is_finished(&self) -> bool {
        self.finished().is_some()
    }

    /// Complete the copy now unless it never completes (a device release).
    pub(crate) fn poll_forced(&self) {
        if !self.never {
            self.complete(None);
        }
    }

    /// Complete the copy if it is due (latency mode); a held copy waits.
    pub(crate) fn poll(&self) {
        if self.never {
            return;
        }
        if self.due.is_some_and(|due| self.core.clock.now() >= due) {
            self.complete(None);
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
                self.core.clock.advance_to(due);
            }
            self.complete(None);
        }
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

/// One command queue of a simulated device.
#[derive(Clone, Debug)]
pub struct SimStream {
    device: SimDevice,
    index: usize,
}

impl SimStream {
    pub(crate) fn new(device: SimDevice, index: usize) -> Self {
        Self { device, index }
    }

    /// The stream's index on its device.
    pub fn index(&self) -> usize {
        self.index
    }

    fn queue<T: Element>(
        &self,
        values: Vec<T>,
        memory: Arc<Memory<T>>,
    ) -> Result<Arc<CopyOp>, DeviceError> {
        let core = self.device.core();
        let bytes = std::mem::size_of_val(values.as_slice());
        let (number, plan, spike, never) = core.begin_copy(self.device.name())?;
        let due = match core.mode() {
            CompletionMode::Held => spike.map(|delay| core.clock.now() + delay),
            CompletionMode::Latency { base, jitter, seed } => {
                let extra = jitter.mul_f64(unit_interval(seed, number));
                let due = core.clock.now() + base + extra + spike.unwrap_or_default();
                // A stream completes in order.
                Some(core.in_stream_order(self.index, due))
            }
        };
        let target = Arc::clone(&memory);
        let landing: Landing = Box::new(move |written: usize, error: Option<DeviceError>| {
            let width = std::mem::size_of::<T>().max(1);
            let len = values.len();
            let count = (written / width).min(len);
            // The target holds nothing until now (nobody can read memory a
            // copy is writing), so the copied values become its memory, and
            // whatever the copy did not reach holds poison.
            let mut image = values;
            image.truncate(count);
            image.resize(len, T::POISON);
            *target.data.write().unwrap_or_else(PoisonError::into_inner) = image;
            target.set_status(match error {
                None => Status::Ready,
                Some(error) => Status::Failed(error),
            });
        });
        let op = Arc::new(CopyOp {
            device: self.device.name().to_owned(),
            number,
            bytes,
            due,
            never,
            plan,
            landing: Mutex::new(Some(landing)),
            result: Mutex::new(None),
            done: Condvar::new(),
            trace: trace::current(),
            core: Arc::clone(&core),
        });
        memory.set_status(Status::Pending(Arc::downgrade(&op)));
        core.track(&op);
        op.record(TraceEvent::CopyQueued {
            device: self.device.name().to_owned(),
            copy: number,
            bytes,
        });
        Ok(op)
    }

    /// Allocate device memory for `shape`, poison it, and queue a copy of
    /// `values` into it. The returned tensor refuses reads until the token
    /// completes.
    ///
    /// # Errors
    ///
    /// A validation error when `values` does not fill `shape`, or the
    /// device's [`DeviceError`] (inside `Error::BackendSource`) when the
    /// fault plan fails the allocation or the device is lost.
    pub fn enqueue_copy<T: Element>(
        &self,
        shape: Vec<usize>,
        values: Vec<T>,
    ) -> tenferro_tensor::Result<(Tensor, CopyToken)> {
        const OP: &str = "SimStream::enqueue_copy";
        let (storage, memory) = self
            .device
            .allocate_for_copy::<T>(values.len())
            .map_err(|error| Error::backend_source(OP, error))?;
        let op = self
            .queue(values, memory)
            .map_err(|error| Error::backend_source(OP, error))?;
        let tensor = TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(storage)),
            self.device.placement(),
        )
        .map(Tensor::from_typed)?;
        Ok((tensor, CopyToken { op }))
    }

    /// Queue a copy of `values` from this device into host memory, then
    /// wait for it: the device-to-host direction of a blocking transfer.
    ///
    /// # Errors
    ///
    /// The device's [`DeviceError`] when the copy fails.
    pub fn download<T: Element>(&self, values: Vec<T>) -> Result<Vec<T>, DeviceError> {
        let landing = Memory::new(Vec::new());
        let op = self.queue(values, Arc::clone(&landing))?;
        CopyToken { op }.wait()?;
        // The landed image is ours alone now: take it rather than copy it.
        let data =
            std::mem::take(&mut *landing.data.write().unwrap_or_else(PoisonError::into_inner));
        Ok(data)
    }
}

/// A number in [0, 1) from a seed and a copy number (splitmix64).
fn unit_interval(seed: u64, number: u64) -> f64 {
    let mut z = seed ^ number.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1_u64 << 53) as f64
}

/// The [`SimStorage`] behind a tensor, if it has one of element type `T`.
pub fn sim_storage_of<T: Element>(tensor: &Tensor) -> Option<&SimStorage<T>> {
    match tensor.as_typed::<T>()?.buffer() {
        StorageBuffer::Backend(storage) => storage.as_any().downcast_ref::<SimStorage<T>>(),
        StorageBuffer::Host(_) => None,
    }
}
