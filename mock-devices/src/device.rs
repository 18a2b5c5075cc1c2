//! `SimDevice`: a simulated accelerator with its own identities and memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use tenferro_runtime::{
    EngineId, HardwareClassId, ProviderDeviceIdentity, ProviderId, RuntimeConfigError,
    StorageClass, TransferEndpoint,
};
use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, MemoryKind, Placement, TensorRead,
};

use crate::clock::SimClock;
use crate::copy_state::{CompletionMode, CopyHost, CopyOp, CopyPlan};
use crate::trace::{self, TraceEvent};
use crate::{AllocationLedger, DeviceError, FaultPlan, MockError};

/// Backend family of every simulated device's storage.
pub const SIM_FAMILY: &str = "tenferro-mock.sim";
/// Provider id shared by the simulated devices.
pub const SIM_PROVIDER_ID: &str = "tenferro-mock.sim";
/// Hardware class shared by the simulated devices.
pub const SIM_HARDWARE_CLASS: &str = "tenferro-mock.sim.v1";
/// Device kind of a simulated device's placement.
pub const SIM_DEVICE_KIND: &str = "tenferro-mock-sim";

/// How a simulated device accounts for its memory, as its adapter may
/// show it to the harness. The device keeps its ledger either way; the
/// mode says what a real device of its kind would expose.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{Accounting, SimDevice};
///
/// assert_eq!(SimDevice::new(0).unwrap().accounting(), Accounting::Ledger);
/// assert_eq!(SimDevice::counting_only(0).unwrap().accounting(), Accounting::CountsOnly);
/// ```
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum Accounting {
    /// A per-allocation ledger (id, domain, bytes, allocating thread): more
    /// than hardware tells, so `no-leak` can name each leaked allocation
    /// and the case that made it.
    #[default]
    Ledger,
    /// Only the counts of live allocations and bytes
    /// ([`SimDevice::memory_in_use`]), as real devices and their memory
    /// pools report them: `no-leak` must work from counts alone.
    CountsOnly,
}

/// What a simulated device's layout kernels (reshape, compaction) return
/// for a tensor they can leave as it is.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{Kernels, SimDevice, SimEngine};
/// use tenferro_tensor::{TensorRead, TensorStructural};
///
/// let device = SimDevice::new(0).unwrap();
/// device.set_kernels(Kernels::Copying);
/// let x = device.tensor(vec![2, 2], vec![1_i32, 2, 3, 4]).unwrap();
/// let y = SimEngine::new(device.clone()).reshape_read(TensorRead::from_tensor(&x), &[4]).unwrap();
/// // Fresh memory: two allocations, and `x` can go on its own.
/// assert_eq!(device.ledger().live(), 2);
/// drop(x);
/// assert_eq!(device.ledger().live(), 1);
/// ```
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum Kernels {
    /// A new tensor over the same allocation, as most devices do for a
    /// reshape of compact memory: whoever holds the result holds the input.
    #[default]
    Aliasing,
    /// Always fresh device memory, written by the kernel: the result holds
    /// nothing of its input, as devices whose layout ops launch a copy do.
    Copying,
    /// Fresh device memory, written by a kernel the engine queues and does
    /// not wait for, as an asynchronous device's engine does: the result
    /// refuses host reads (`GpuAccessInProgress`) until the engine is
    /// synchronized (`ExecutionEngine::synchronize`), or a later kernel
    /// reads it (one queue, in order: the engine then waits for the
    /// kernels before it).
    Queued,
    /// As [`Kernels::Queued`], but a kernel over an owned compact tensor
    /// reads its input when it runs, not when it is queued, as a real
    /// device's kernel does, and holds no handle to it (a raw pointer):
    /// memory the input's tensor no longer holds, written before the
    /// kernel ran (a block a caching allocator hands out again and writes
    /// from the host at once), is what the kernel reads.
    Lazy,
}

#[derive(Debug)]
struct Identity {
    name: String,
    ordinal: usize,
    engine_id: EngineId,
    storage_class: StorageClass,
    provider_device: ProviderDeviceIdentity,
    hardware_class: HardwareClassId,
    domain: AllocationDomainId,
    ledger: Arc<AllocationLedger>,
    accounting: Accounting,
    /// What the layout kernels return ([`Kernels`]), as its index.
    kernels: std::sync::atomic::AtomicU8,
    core: Arc<DeviceCore>,
}

#[derive(Debug, Default)]
struct FaultState {
    plan: FaultPlan,
    allocations: u64,
    copies: u64,
    operations: u64,
    lost_at: Option<u64>,
}

/// The mutable heart of a device: its fault plan and counters, its
/// completion mode, and its copies in flight.
#[derive(Debug, Default)]
pub(crate) struct DeviceCore {
    state: Mutex<FaultState>,
    mode: Mutex<CompletionMode>,
    pending: Mutex<Vec<Weak<CopyOp>>>,
    last_due: Mutex<HashMap<usize, Instant>>,
    /// Until when every stream is held back ([`SimDevice::stall`]).
    stalled_until: Mutex<Option<Instant>>,
    copy_numbers: AtomicU64,
    /// The device's clock, which waits skip ahead.
    clock: SimClock,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DeviceCore {
    pub(crate) fn mode(&self) -> CompletionMode {
        *lock(&self.mode)
    }

    /// Count one operation; fail it if the device is, or now becomes, lost.
    fn operate(&self, device: &str, state: &mut FaultState) -> Result<(), DeviceError> {
        state.operations += 1;
        if state.lost_at.is_none()
            && state
                .plan
                .lost_after
                .is_some_and(|after| state.operations > after)
        {
            state.lost_at = Some(state.operations - 1);
            trace::record(TraceEvent::FaultInjected {
                device: device.to_owned(),
                fault: format!("device lost after {} operations", state.operations - 1),
            });
        }
        match state.lost_at {
            Some(operations) => Err(DeviceError::DeviceLost {
                device: device.to_owned(),
                operations,
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn begin_allocation(&self, device: &str, bytes: usize) -> Result<(), DeviceError> {
        let mut state = lock(&self.state);
        self.operate(device, &mut state)?;
        state.allocations += 1;
        if state.plan.out_of_memory_at == Some(state.allocations) {
            trace::record(TraceEvent::FaultInjected {
                device: device.to_owned(),
                fault: format!("out of memory at allocation {}", state.allocations),
            });
            return Err(DeviceError::OutOfMemory {
                device: device.to_owned(),
                allocation: state.allocations,
                bytes,
            });
        }
        Ok(())
    }

    /// Number a new copy and decide how it lands: (number, plan, extra
    /// latency, never completes).
    pub(crate) fn begin_copy(
        &self,
        device: &str,
    ) -> Result<(u64, CopyPlan, Option<Duration>, bool), DeviceError> {
        let mut state = lock(&self.state);
        self.operate(device, &mut state)?;
        state.copies += 1;
        let k = state.copies;
        let number = self.copy_numbers.fetch_add(1, Ordering::Relaxed) + 1;
        let inject = |fault: String| {
            trace::record(TraceEvent::FaultInjected {
                device: device.to_owned(),
                fault,
            });
        };
        let mut plan = CopyPlan::Full;
        if let Some((at, bytes)) = state.plan.partial_copy.filter(|(at, _)| *at == k) {
            inject(format!(
                "copy #{number} (copy {at} of the plan) silently writes only {bytes} bytes"
            ));
            plan = CopyPlan::Partial(bytes);
        }
        if let Some((at, bytes)) = state.plan.copy_error.filter(|(at, _)| *at == k) {
            inject(format!(
                "copy #{number} (copy {at} of the plan) fails after {bytes} bytes"
            ));
            plan = CopyPlan::FailAfter(bytes);
        }
        let spike = state
            .plan
            .latency_spike
            .filter(|(at, _)| *at == k)
            .map(|(_, delay)| {
                inject(format!("copy #{number} completes {delay:?} late"));
                delay
            });
        let never = state.plan.never_complete == Some(k);
        if never {
            inject(format!("copy #{number} never completes"));
        }
        Ok((number, plan, spike, never))
    }

    pub(crate) fn in_stream_order(&self, stream: usize, due: Instant) -> Instant {
        let due = lock(&self.stalled_until).map_or(due, |until| due.max(until));
        let mut last = lock(&self.last_due);
        let due = last.get(&stream).map_or(due, |previous| due.max(*previous));
        last.insert(stream, due);
        due
    }

    pub(crate) fn track(&self, op: &Arc<CopyOp>) {
        let mut pending = lock(&self.pending);
        pending.retain(|op| op.upgrade().is_some_and(|op| !op.is_finished()));
        pending.push(Arc::downgrade(op));
    }

    fn in_flight(&self) -> Vec<Arc<CopyOp>> {
        lock(&self.pending)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }
}

impl CopyHost for DeviceCore {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn advance_to(&self, due: Instant) {
        self.clock.advance_to(due);
    }

    fn lost_error(&self, device: &str) -> Option<DeviceError> {
        let state = lock(&self.state);
        state.lost_at.map(|at| DeviceError::DeviceLost {
            device: device.to_owned(),
            operations: at,
        })
    }

    fn queued_before(&self, stream: usize, number: u64) -> Vec<Arc<CopyOp>> {
        let mut earlier: Vec<Arc<CopyOp>> = lock(&self.pending)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|op| op.is_queued_before(stream, number) && !op.is_finished())
            .collect();
        // Threads queueing at once may track copies out of their numbers'
        // order; the stream's order is the numbers'.
        earlier.sort_by_key(|op| op.number());
        earlier
    }
}

/// A simulated device: its own engine id, storage class, provider-device
/// identity, allocation domain and device placement (`MemoryKind::Device`
/// with an ordinal). Cloning shares the device.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::SimDevice;
/// use tenferro_tensor::MemoryKind;
///
/// let a = SimDevice::new(0).unwrap();
/// let b = SimDevice::new(1).unwrap();
/// assert_ne!(a.engine_id(), b.engine_id());
/// assert_ne!(a.allocation_domain(), b.allocation_domain());
/// assert_eq!(a.placement().memory_kind, MemoryKind::Device);
///
/// let tensor = a.tensor(vec![2], vec![1.5_f64, -0.0]).unwrap();
/// assert!(a.owns(&tenferro_tensor::TensorRead::from_tensor(&tensor)));
/// assert!(!b.owns(&tenferro_tensor::TensorRead::from_tensor(&tensor)));
/// assert_eq!(a.ledger().live(), 1);
/// drop(tensor);
/// assert_eq!(a.ledger().live(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct SimDevice {
    identity: Arc<Identity>,
}

impl SimDevice {
    /// The simulated device `sim<ordinal>`.
    ///
    /// # Errors
    ///
    /// Returns [`MockError::Config`] if tenferro rejects an identifier.
    pub fn new(ordinal: usize) -> Result<Self, MockError> {
        Self::named("sim", ordinal)
    }

    /// A simulated device called `<name><ordinal>`; `name` must be a valid
    /// tenferro identifier component (lowercase ASCII, digits, `-`, `_`).
    ///
    /// # Errors
    ///
    /// Returns [`MockError::Config`] if tenferro rejects an identifier.
    pub fn named(name: &str, ordinal: usize) -> Result<Self, MockError> {
        Self::named_with(name, ordinal, Accounting::Ledger)
    }

    /// The simulated device `sim<ordinal>` that accounts for its memory as
    /// real devices do, by counts only ([`Accounting::CountsOnly`]).
    ///
    /// # Errors
    ///
    /// Returns [`MockError::Config`] if tenferro rejects an identifier.
    pub fn counting_only(ordinal: usize) -> Result<Self, MockError> {
        Self::named_with("sim", ordinal, Accounting::CountsOnly)
    }

    /// A simulated device called `<name><ordinal>` (see [`Self::named`])
    /// with the given accounting mode.
    ///
    /// # Errors
    ///
    /// Returns [`MockError::Config`] if tenferro rejects an identifier.
    pub fn named_with(
        name: &str,
        ordinal: usize,
        accounting: Accounting,
    ) -> Result<Self, MockError> {
        let full = format!("{name}{ordinal}");
        let config = |source: RuntimeConfigError| MockError::Config {
            device: full.clone(),
            source: Box::new(source),
        };
        let engine_id = EngineId::new(format!("tenferro-mock.{full}.v1"))
            .map_err(|error| config(error.into()))?;
        let storage_class = StorageClass::new(format!("tenferro-mock.{full}.memory.v1"))
            .map_err(|error| config(error.into()))?;
        let provider = ProviderId::new(SIM_PROVIDER_ID).map_err(|error| config(error.into()))?;
        let provider_device = ProviderDeviceIdentity::new(provider, full.clone())
            .map_err(|error| config(error.into()))?;
        let hardware_class =
            HardwareClassId::new(SIM_HARDWARE_CLASS).map_err(|error| config(error.into()))?;
        Ok(Self {
            identity: Arc::new(Identity {
                name: full.clone(),
                ordinal,
                engine_id,
                storage_class,
                provider_device,
                hardware_class,
                domain: AllocationDomainId::fresh(),
                ledger: Arc::new(AllocationLedger::default()),
                accounting,
                kernels: std::sync::atomic::AtomicU8::new(0),
                core: Arc::new(DeviceCore::default()),
            }),
        })
    }

    /// Human-readable name, e.g. `sim0`.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// Device ordinal in its placement.
    pub fn ordinal(&self) -> usize {
        self.identity.ordinal
    }

    /// Engine id of this device's engine.
    pub fn engine_id(&self) -> &EngineId {
        &self.identity.engine_id
    }

    /// The device's one storage class.
    pub fn storage_class(&self) -> &StorageClass {
        &self.identity.storage_class
    }

    /// Provider-device identity, distinct per device.
    pub fn provider_device_identity(&self) -> &ProviderDeviceIdentity {
        &self.identity.provider_device
    }

    /// Hardware class of simulated devices.
    pub fn hardware_class(&self) -> &HardwareClassId {
        &self.identity.hardware_class
    }

    /// The allocation domain owning this device's memory.
    pub fn allocation_domain(&self) -> AllocationDomainId {
        self.identity.domain
    }

    /// The transfer endpoint of this device's memory.
    pub fn endpoint(&self) -> TransferEndpoint {
        TransferEndpoint::new(self.engine_id().clone(), self.storage_class().clone())
    }

    /// The placement of this device's tensors.
    pub fn placement(&self) -> Placement {
        Placement {
            memory_kind: MemoryKind::Device,
            device: Some(self.device_id()),
            cpu_affinity: None,
        }
    }

    /// The device id inside [`Self::placement`].
    pub fn device_id(&self) -> DeviceId {
        DeviceId {
            kind: DeviceKind::Other(SIM_DEVICE_KIND.to_owned()),
            ordinal: self.identity.ordinal,
        }
    }

    /// Live-allocation accounting of this device. The device keeps it in
    /// every [`Accounting`] mode; in [`Accounting::CountsOnly`] an adapter
    /// shows only [`Self::memory_in_use`], as a real device would.
    pub fn ledger(&self) -> &Arc<AllocationLedger> {
        &self.identity.ledger
    }

    /// How this device accounts for its memory, chosen at construction.
    pub fn accounting(&self) -> Accounting {
        self.identity.accounting
    }

    /// `(live allocations, bytes they hold)` on this device now: the
    /// counters every device exposes, in every [`Accounting`] mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::SimDevice;
    ///
    /// let device = SimDevice::counting_only(0).unwrap();
    /// let tensor = device.tensor(vec![4], vec![1_i64, 2, 3, 4]).unwrap();
    /// assert_eq!(device.memory_in_use(), (1, 32));
    /// drop(tensor);
    /// assert_eq!(device.memory_in_use(), (0, 0));
    /// ```
    pub fn memory_in_use(&self) -> (usize, usize) {
        self.identity.ledger.in_use()
    }

    /// Whether a placement is this device's placement.
    pub fn accepts_placement(&self, placement: &Placement) -> bool {
        placement.memory_kind == MemoryKind::Device && placement.device == Some(self.device_id())
    }

    /// Whether a tensor lives in this device's memory: device placement,
    /// simulated backend family and this device's allocation domain.
    pub fn owns(&self, read: &TensorRead<'_>) -> bool {
        self.accepts_placement(read.placement()) && self.resident(read)
    }

    /// Whether a tensor's storage belongs to this device (family and
    /// domain), whatever its placement says.
    pub fn resident(&self, read: &TensorRead<'_>) -> bool {
        read.backend_family() == Some(SIM_FAMILY)
            && read.allocation_domain() == Some(self.allocation_domain())
    }

    /// Install a fault plan; its counters start now.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::{DeviceError, FaultPlan, SimDevice};
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// device.install_faults(FaultPlan::new().out_of_memory_at(2));
    /// assert!(device.allocate(vec![1_u8 as i32]).is_ok());
    /// assert!(matches!(device.allocate(vec![2_i32]), Err(DeviceError::OutOfMemory { allocation: 2, .. })));
    /// assert!(device.allocate(vec![3_i32]).is_ok());
    /// ```
    pub fn install_faults(&self, plan: FaultPlan) {
        *lock(&self.identity.core.state) = FaultState {
            plan,
            ..FaultState::default()
        };
    }

    /// The installed fault plan.
    pub fn faults(&self) -> FaultPlan {
        lock(&self.identity.core.state).plan.clone()
    }

    /// Choose what the device's layout kernels return ([`Kernels`]).
    pub fn set_kernels(&self, kernels: Kernels) {
        let index = match kernels {
            Kernels::Aliasing => 0,
            Kernels::Copying => 1,
            Kernels::Queued => 2,
            Kernels::Lazy => 3,
        };
        self.identity.kernels.store(index, Ordering::SeqCst);
    }

    /// What the device's layout kernels return.
    pub fn kernels(&self) -> Kernels {
        match self.identity.kernels.load(Ordering::SeqCst) {
            1 => Kernels::Copying,
            2 => Kernels::Queued,
            3 => Kernels::Lazy,
            _ => Kernels::Aliasing,
        }
    }

    /// Choose when queued copies complete.
    pub fn set_completion_mode(&self, mode: CompletionMode) {
        *lock(&self.identity.core.mode) = mode;
        lock(&self.identity.core.last_due).clear();
        *lock(&self.identity.core.stalled_until) = None;
    }

    /// Hold back every copy queued from now on (on any stream) until
    /// `pause` has passed on the device's clock, as a busy device would:
    /// in [`CompletionMode::Latency`] only, where copies land on their own
    /// (`true`); in [`CompletionMode::Held`] nothing lands on its own, and
    /// the device answers `false`. Waiting on a held-back copy skips the
    /// clock ahead, as any wait does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tenferro_mock_devices::{CompletionMode, SimDevice};
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// assert!(!device.stall(Duration::from_millis(10)));
    /// device.set_completion_mode(CompletionMode::Latency {
    ///     base: Duration::ZERO,
    ///     jitter: Duration::ZERO,
    ///     seed: 1,
    /// });
    /// assert!(device.stall(Duration::from_secs(3600)));
    /// let (_tensor, token) = device.stream(0).enqueue_copy(vec![1], vec![1.5_f64]).unwrap();
    /// assert!(!token.is_complete());
    /// token.wait().unwrap();
    /// ```
    pub fn stall(&self, pause: Duration) -> bool {
        let core = &self.identity.core;
        if core.mode() == CompletionMode::Held {
            return false;
        }
        let until = core.clock.now() + pause;
        let mut stalled = lock(&core.stalled_until);
        *stalled = Some(stalled.map_or(until, |earlier| earlier.max(until)));
        true
    }

    /// Complete every copy in flight that can complete (a copy that never
    /// completes stays pending).
    pub fn release_all(&self) {
        for op in self.identity.core.in_flight() {
            op.poll_forced();
        }
    }

    /// Copies queued on this device and not yet completed.
    pub fn copies_in_flight(&self) -> usize {
        self.identity
            .core
            .in_flight()
            .iter()
            .filter(|op| !op.is_finished())
            .count()
    }

    /// Whether `other` is this device (a clone of it), not merely one with
    /// the same name.
    pub(crate) fn same_device(&self, other: &SimDevice) -> bool {
        Arc::ptr_eq(&self.identity, &other.identity)
    }

    pub(crate) fn core(&self) -> &Arc<DeviceCore> {
        &self.identity.core
    }
}
