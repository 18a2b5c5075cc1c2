//! Devices as plug-ins: the [`DeviceEndpoint`] trait through which a device
//! tells the harness everything it needs, and what it answers. One side of
//! a route, which holds any such adapter, is [`Endpoint`](crate::Endpoint)
//! (`side.rs`).
//!
//! Nothing outside an adapter's own module names a concrete device: the
//! host (tenferro-cpu) is the harness's one adapter of this trait; the
//! simulated devices and the GPU adapters live in crates of their own
//! above it, written the way a vendor writes theirs.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tenferro_runtime::{EngineRegistration, ExecutionEngine};
use tenferro_tensor::{Tensor, TensorRead, TensorView};

use crate::{
    AllocationLedger, Case, CompletionState, DeviceDescription, HarnessError, MemoryInUse,
};

/// What an engine does in a rig: the source only holds the input, so the
/// work must move away; the destination consumes the transfer.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub enum EngineRole {
    /// The route's source: no operations (its registration has no
    /// capabilities), so the program's op cannot run there.
    Source,
    /// The route's destination: it runs the identity reshape that consumes
    /// the transfer, and refuses the raw input (its runtime-input
    /// contract), so the input must move through the provider.
    Destination,
}

/// Whether a device can run here.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Availability {
    /// The device is here: its routes run.
    Available,
    /// The device is not here: every case of its routes is a skip with
    /// this reason (a failure where the user requires the device).
    Unavailable {
        /// Why not, e.g. "no driver: the device library could not be loaded".
        reason: String,
    },
}

/// What reading a returned tensor's bytes back through its device gave.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum ReadBack {
    /// The little-endian image of every element of the buffer, in order.
    Bytes(Vec<u8>),
    /// The device cannot read this output back: `values` is not checked on
    /// the case (a skip with the reason, never a violation).
    NotReadable {
        /// Why not.
        reason: String,
    },
    /// Reading it back failed: the output is broken (`values` fails).
    Failed {
        /// What failed.
        reason: String,
    },
}

/// A device as the harness sees it: one adapter per kind of device.
///
/// Implement it for your own device to run the suite's routes to, from or
/// between your device's memory, on your own tenferro engine. Three
/// methods are required: what the device is ([`describe`](DeviceEndpoint::describe)),
/// how its engine registers ([`registration`](DeviceEndpoint::registration):
/// [`DeviceDescription::registration`] writes it, or
/// [`DeviceDescription::registration_from`] adapts your device's own) and a
/// fresh engine
/// ([`engine`](DeviceEndpoint::engine)). The others have defaults that make
/// the rules they serve an honest skip (with the reason) rather than a
/// pass:
///
/// | method | default | without it |
/// |---|---|---|
/// | [`stage`](DeviceEndpoint::stage) | refuses | the device cannot be a route's source |
/// | [`stages_views`](DeviceEndpoint::stages_views) | `true` | (say `false` when `stage` cannot carve views: generated cases then draw none) |
/// | [`read_back`](DeviceEndpoint::read_back) | `None`: the harness uses `map_read` | unmappable memory: `values`, `output-stable` and `input-intact` not checked there |
/// | [`completion`](DeviceEndpoint::completion) | unknown | `completion` not checked |
/// | [`allocation_ledger`](DeviceEndpoint::allocation_ledger) | none | `no-leak` from the ledger not checked |
/// | [`memory_in_use`](DeviceEndpoint::memory_in_use) | none | `no-leak` from counts not checked (level V2) |
/// | [`settle`](DeviceEndpoint::settle) | nothing to wait for | |
/// | [`stall_queues`](DeviceEndpoint::stall_queues) | cannot stall | races on queued work open only as wide as the suite's own pace makes them |
/// | [`availability`](DeviceEndpoint::availability) | available | |
/// | [`launches_in_own_domain`](DeviceEndpoint::launches_in_own_domain) | `false` | the launch domain is not checked |
///
/// A route's factory reaches the adapter again with
/// [`Endpoint::downcast`](crate::Endpoint::downcast) (any `'static` type
/// downcasts: nothing to write).
///
/// # Examples
///
/// A minimal adapter: a second plain tenferro-cpu engine, as a destination
/// only (no staging, no completion probe, no ledger).
///
/// ```
/// use std::sync::Arc;
/// use tenferro_cpu::CpuEngine;
/// use tenferro_runtime::{EngineId, EngineRegistration, ExecutionEngine, StorageClass};
/// use tenferro_transfer_harness::{
///     Case, DeviceDescription, DeviceEndpoint, EngineRole, Endpoint, HarnessError, HostProvider,
///     Oracle, PlacementRule, Rig, Route, StorageRule,
/// };
///
/// #[derive(Debug)]
/// struct PlainCpu { id: EngineId }
///
/// impl DeviceEndpoint for PlainCpu {
///     fn describe(&self) -> DeviceDescription {
///         let class = StorageClass::new("tenferro-cpu.host.v1").expect("a valid class");
///         DeviceDescription::new("my-cpu", "my-cpu", self.id.clone(), class, PlacementRule::Host, StorageRule::PlainHost)
///     }
///     fn registration(&self, _role: EngineRole) -> Result<EngineRegistration, HarnessError> {
///         let engine = CpuEngine::serial().with_runtime_engine_id(self.id.clone());
///         tenferro_cpu::runtime_engine_registration_with_id(&engine, self.id.clone())
///             .map_err(|e| HarnessError::adapter("registering my-cpu", e))
///     }
///     fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
///         Ok(Box::new(CpuEngine::serial().with_runtime_engine_id(self.id.clone())))
///     }
/// }
///
/// let destination = Endpoint::new(PlainCpu { id: EngineId::new("my-vendor.cpu.v1").unwrap() });
/// let route = Route::new(Endpoint::host("host-src").unwrap(), destination).unwrap();
/// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
/// let case = Case::from_values(vec![2], vec![1.5_f64, -0.0]).unwrap();
/// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
/// ```
pub trait DeviceEndpoint: Any + fmt::Debug + Send + Sync {
    /// What the device is: its name and kind, its engine id and storage
    /// class, and what a correct output on it looks like. Asked once when
    /// the endpoint is made (name, kind and identities), and again for the
    /// rules each time a case is judged (a device whose allocation domain
    /// changes, as a reopened GPU runtime's does, answers the current one).
    fn describe(&self) -> DeviceDescription;

    /// The runtime registration of this device's engine in `role`
    /// ([`DeviceDescription::registration`] builds it from the description;
    /// [`DeviceDescription::registration_from`] from the registration your
    /// device already has).
    ///
    /// As a [`EngineRole::Source`] the engine must have no capabilities, so
    /// that the program's op cannot run on it; as a
    /// [`EngineRole::Destination`] it must run an identity reshape and
    /// refuse the raw input (its runtime-input contract), so the input must
    /// move through the provider. [`declared_ingress`](crate::declared_ingress) builds an ingress
    /// contract from the description's rules.
    ///
    /// # Errors
    ///
    /// When the runtime rejects it.
    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError>;

    /// A fresh engine for one rig, in `role`.
    ///
    /// # Errors
    ///
    /// When the device's engine cannot be opened.
    fn engine(&self, role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError>;

    /// Build `case`'s input the way this device's engine hands a tensor to
    /// a provider (owned, and as a strided view when the case is one), and
    /// call `use_input` with it once. [`stage_via_host`] does the work for a
    /// device that can take a plain host tensor into its memory. A device
    /// that stages otherwise reads the values with
    /// [`Case::typed_values`](crate::Case::typed_values),
    /// [`Case::backing_values`](crate::Case::backing_values) or
    /// [`Case::value_chunks`](crate::Case::value_chunks): a large case
    /// holds no values, and [`Case::values`](crate::Case::values) would
    /// make and keep a whole image of them for the case's life.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Unavailable`] (a skip) for a case the device cannot
    /// stage; the default refuses every case: such a device can only be a
    /// destination.
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        let _ = (case, use_input);
        Err(HarnessError::Unavailable {
            reason: format!(
                "{} does not stage inputs (its adapter has no `stage`), so it can only be a destination",
                self.describe().name
            ),
        })
    }

    /// Whether [`stage`](DeviceEndpoint::stage) builds strided views; the
    /// generated cases draw views only where it does.
    fn stages_views(&self) -> bool {
        true
    }

    /// The little-endian byte image of a tensor in this device's memory,
    /// read through the device (a download), for memory `map_read` cannot
    /// reach, as a GPU's. The harness reads every tensor on the device
    /// this way when it answers `Some`: the provider's output (`values`),
    /// the runtime's outputs and those a caller holds (`output-stable`),
    /// and an owned input staged here (`input-intact`; a view input is
    /// read through [`read_back_view`](DeviceEndpoint::read_back_view)). The image is the
    /// tensor's whole storage buffer, every one of its
    /// `BackendStorage::len` elements in storage order, not only the
    /// elements a view of it reaches (the harness carves views itself, and
    /// compares a view's gaps too); storage that other tensors share is
    /// read whole the same way. It may wait for work the device has queued
    /// (a read through the device drains its queues): the suite asks
    /// [`completion`](DeviceEndpoint::completion) first, before any read
    /// of an output. `None` (the default):
    /// the harness reads the buffer itself (plain host data, or
    /// `map_read`; an unmappable storage leaves those rules unchecked
    /// there, with the reason). A provider's output in the wrong place
    /// (another device's memory) reaches this adapter too: answer
    /// `ReadBack::NotReadable` with the reason where your device cannot
    /// read it (`placement` and `residency` judge where it is). A panic
    /// here while an input is read is taken as the adapter's: that input's
    /// checks are skipped on the case, naming the panic. A panic while the
    /// provider's output is read as it returns counts against that
    /// output's storage, as a failed read (`values`); one while the
    /// runtime's outputs are read after the run is not told apart from the
    /// run's own panics (`no-panic`).
    fn read_back(&self, tensor: &Tensor) -> Option<ReadBack> {
        let _ = tensor;
        None
    }

    /// The little-endian byte image of the whole storage a strided view
    /// input reaches into, on this device, for memory `map_read` cannot
    /// reach: what [`read_back`](DeviceEndpoint::read_back) is for a
    /// tensor, for a [`TensorRead::View`] the runtime hands a provider
    /// (a view has no `Tensor` to pass to `read_back`). The harness reads
    /// a view input's backing this way for `input-intact` (before the
    /// call, beside it, after it returns and after the output dropped):
    /// every one of the storage's `BackendStorage::len` elements in
    /// storage order, the view's gaps and the elements before its offset
    /// included. Reach the storage with `T::typed_view(view.clone())` and
    /// `backend_buffer()`, then `as_any()` to your storage type. `None`
    /// (the default): the harness maps the view's storage itself; memory
    /// that cannot be mapped leaves `input-intact` unchecked on view
    /// inputs, with the reason (owned inputs are still read through
    /// `read_back`).
    fn read_back_view(&self, view: &TensorView<'_>) -> Option<ReadBack> {
        let _ = view;
        None
    }

    /// Whether the copy into `tensor`, just returned by the provider, has
    /// completed. Asked first, before anything else can complete it.
    ///
    /// Answer for the memory, not for one call: `Pending` while any write
    /// into `tensor`'s storage is still in flight, whoever queued it. A
    /// provider that hands out a block another call is still writing into
    /// returned memory that is not yet what it will be, and `completion`
    /// fails there (often beside `values` or `output-stable`, where the
    /// write has landed by the time they read). An empty output is judged
    /// the same way: a write of no bytes still queued is still pending.
    fn completion(&self, tensor: &Tensor) -> CompletionState {
        let _ = tensor;
        CompletionState::Unknown {
            reason: format!(
                "the adapter of {} has no completion probe, so completion cannot be observed",
                self.describe().name
            ),
        }
    }

    /// The ledger of this endpoint's allocations, for `no-leak`: every
    /// allocation of the device's memory opens an entry when made and
    /// closes it when freed. `None` (the default): not accounted by a
    /// ledger (see [`memory_in_use`](DeviceEndpoint::memory_in_use)).
    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        None
    }

    /// The memory in use on the device now, as the device counts it (live
    /// allocations, bytes, or both): what real devices expose, and all
    /// `no-leak` needs from level V2 on. The suite samples it before a case
    /// and after the case's tensors were dropped and the device settled
    /// ([`settle`](DeviceEndpoint::settle)); a growth that persists is a
    /// leak. `None` (the default): not counted.
    ///
    /// Whatever a device counts must see what a transfer puts there: while
    /// a case's input (on a source) or output (on a destination) is alive,
    /// the count must have risen. Where it never does, the accounting is
    /// broken and `no-leak` is a skip with that reason, never a pass.
    fn memory_in_use(&self) -> Option<MemoryInUse> {
        None
    }

    /// Wait until memory work the device does in the background (frees it
    /// defers, a copy worker's buffers) is done, so that
    /// [`memory_in_use`](DeviceEndpoint::memory_in_use) is settled. The
    /// default does nothing: a device that frees as tensors drop.
    fn settle(&self) {}

    /// Hold back the work queued on this device from now on for `pause`
    /// ([`QUEUE_STALL`]), as a busy device would, and return at once:
    /// `true` when the stall is queued, `false` (the default) when the
    /// device cannot stall.
    ///
    /// The suite stalls a source just before it stages an input it hands
    /// over unread ([`Rig::hand_inputs_unread`](crate::Rig::hand_inputs_unread))
    /// and the destination just before the call that moves it, a route's
    /// devices at the start of some rounds of its concurrent calls, and
    /// the destination as each call returns in a run whose outputs it reads
    /// only after the next ([`Rig::defer_output_reads`](crate::Rig::defer_output_reads),
    /// for [`DEFERRED_READ_STALL`]). A provider that waits for the queued work it depends on (the
    /// writes into its input, another queue's read of its scratch memory)
    /// gets the right bytes a little later; one that does not reads memory
    /// not yet written, or reuses memory not yet read, and breaks `values`.
    /// Without a stall those races stay as narrow as the device is fast,
    /// usually narrower than the suite's own time between staging an input
    /// and calling the provider, so they are rarely met.
    ///
    /// Stall the queues the suite's work goes to: those `stage` writes
    /// through and your engine's kernels run on (a worker-thread queue:
    /// queue a job that sleeps `pause`; CUDA: a host function that sleeps,
    /// `cuLaunchHostFunc`, on each such stream). Work queued before the
    /// call is not held back; nothing may be lost or reordered within a
    /// queue. Never wait for the pause here: the suite calls this outside
    /// a call's deadline (a stall that panics is caught and taken as no
    /// stall; one that blocks holds the suite).
    fn stall_queues(&self, pause: Duration) -> bool {
        let _ = pause;
        false
    }

    /// Whether the device can run here. An unavailable device makes every
    /// case of its routes a skip with the reason; [`REQUIRE_DEVICES_ENV`](crate::REQUIRE_DEVICES_ENV)
    /// turns that into a failure.
    fn availability(&self) -> Availability {
        Availability::Available
    }

    /// Whether a transfer into this endpoint must launch inside its own
    /// event domain, observed through the harness's trace (simulated
    /// devices record their launches). `false` (the default): not checked.
    fn launches_in_own_domain(&self) -> bool {
        false
    }
}

/// How long the suite stalls a device's queues at once
/// ([`DeviceEndpoint::stall_queues`]): far longer than a fast device takes
/// to land a small write, so a provider that does not wait for queued work
/// meets it unfinished.
pub const QUEUE_STALL: Duration = Duration::from_millis(10);

/// How long the suite stalls a destination's queues as a call returns in a
/// run whose outputs it reads only after the next run
/// ([`Rig::defer_output_reads`](crate::Rig::defer_output_reads)): long
/// enough to last past the next run's call, a large case staged and moved
/// between them.
pub const DEFERRED_READ_STALL: Duration = Duration::from_millis(100);

/// Stage `case` on a device that takes plain host tensors into its memory:
/// `upload` receives a plain host tensor (the case's values, or for a view
/// the values of its backing tensor) and returns the device's tensor; a
/// view is then carved from it by tenferro, as the case says.
///
/// # Errors
///
/// `upload`'s error, or [`HarnessError::Stage`] when tenferro rejects the
/// tensor or view.
///
/// # Examples
///
/// A device whose memory is host memory: the upload is the identity, and a
/// view case arrives as a strided view of its backing tensor.
///
/// ```
/// use tenferro_transfer_harness::{Case, Layout, ViewAxis, ViewSpec, stage_via_host};
/// use tenferro_tensor::{DType, TensorRead};
///
/// let spec = ViewSpec {
///     backing_shape: vec![5],
///     axes: vec![ViewAxis { first: 4, step: -2, len: 2 }],
///     permutation: vec![],
/// };
/// let case = Case::patterned(DType::F64, vec![2], Layout::View(spec)).unwrap();
/// let mut seen = None;
/// stage_via_host(&case, Ok, &mut |input: TensorRead<'_>| {
///     seen = Some((input.shape().to_vec(), matches!(input, TensorRead::View(_))));
/// })
/// .unwrap();
/// assert_eq!(seen, Some((vec![2], true)));
/// ```
pub fn stage_via_host(
    case: &Case,
    upload: impl FnOnce(Tensor) -> Result<Tensor, HarnessError>,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    crate::device::stage::stage_via_host(case, upload, use_input)
}
