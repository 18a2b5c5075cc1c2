//! Devices as plug-ins: the [`DeviceEndpoint`] trait through which a device
//! tells the harness everything it needs, and [`Endpoint`], one side of a
//! route, which holds any such adapter.
//!
//! Nothing outside an adapter's own module names a concrete device: the
//! host (tenferro-cpu) is the harness's one adapter of this trait; the
//! simulated devices and the GPU adapters live in crates of their own
//! above it, written the way a vendor writes theirs.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use tenferro_runtime::{
    EngineId, EngineRegistration, ExecutionEngine, StorageClass, TransferEndpoint,
};
use tenferro_tensor::{Tensor, TensorRead};

use crate::device::absent::AbsentDevice;
use crate::device::memory::{Activity, Stay};
use crate::{
    AllocationLedger, Case, CompletionState, DeviceDescription, HarnessError, MemoryInUse,
    PlacementRule, StorageRule,
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
/// | [`availability`](DeviceEndpoint::availability) | available | |
/// | [`launches_in_own_domain`](DeviceEndpoint::launches_in_own_domain) | `false` | the launch domain is not checked |
///
/// A route's factory reaches the adapter again with
/// [`Endpoint::downcast`] (any `'static` type downcasts: nothing to write).
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
    /// and an input staged here (`input-intact`). `None` (the default):
    /// the harness reads the buffer itself (plain host data, or
    /// `map_read`; an unmappable storage leaves those rules unchecked
    /// there, with the reason).
    fn read_back(&self, tensor: &Tensor) -> Option<ReadBack> {
        let _ = tensor;
        None
    }

    /// Whether the copy into `tensor`, just returned by the provider, has
    /// completed. Asked first, before anything else can complete it.
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

/// One side of a route: any device, through its [`DeviceEndpoint`]
/// adapter. Cheap to clone (the adapter is shared).
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{Endpoint, HostEndpoint};
///
/// let endpoint = Endpoint::new(HostEndpoint::plain("host").unwrap());
/// assert_eq!(endpoint.name(), "host");
/// assert!(endpoint.downcast::<HostEndpoint>().is_some());
/// ```
#[derive(Clone)]
pub struct Endpoint {
    adapter: Arc<dyn DeviceEndpoint>,
    /// What the adapter described when the endpoint was made: its name,
    /// kind and identities are fixed from then on.
    identity: Arc<DeviceDescription>,
    /// The cases running on the device now, shared by every clone: a case
    /// that ran alone owns every allocation made meanwhile.
    activity: Arc<Activity>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.adapter, formatter)
    }
}

impl Endpoint {
    /// An endpoint on the device `adapter` describes.
    pub fn new(adapter: impl DeviceEndpoint) -> Self {
        Self::from_arc(Arc::new(adapter))
    }

    /// An endpoint on a shared adapter.
    pub fn from_arc(adapter: Arc<dyn DeviceEndpoint>) -> Self {
        Self {
            identity: Arc::new(adapter.describe()),
            adapter,
            activity: Arc::default(),
        }
    }

    /// A case starts on this device; the stay says, at its end, whether
    /// another case ran on it meanwhile.
    pub(crate) fn enter(&self) -> Stay {
        self.activity.enter()
    }

    /// The memory in use on the device, as it counts it
    /// ([`DeviceEndpoint::memory_in_use`]).
    pub fn memory_in_use(&self) -> Option<MemoryInUse> {
        self.adapter.memory_in_use()
    }

    /// Let the device settle ([`DeviceEndpoint::settle`]).
    pub fn settle(&self) {
        self.adapter.settle();
    }

    /// The adapter.
    pub fn adapter(&self) -> &Arc<dyn DeviceEndpoint> {
        &self.adapter
    }

    /// The adapter as its concrete type, when it is a `T` (how a provider
    /// factory reaches its own device: `route.destination().downcast::<MyDevice>()`).
    pub fn downcast<T: DeviceEndpoint>(&self) -> Option<&T> {
        let adapter: &dyn Any = self.adapter.as_ref();
        adapter.downcast_ref::<T>()
    }

    /// The adapter as its concrete type `T`, or an error that names the
    /// endpoint and `T`: a provider factory's `?` in one step.
    ///
    /// # Errors
    ///
    /// [`HarnessError::InvalidRoute`] when the adapter is not a `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{Endpoint, HostEndpoint};
    ///
    /// let endpoint = Endpoint::host("cpu0").unwrap();
    /// assert_eq!(endpoint.try_downcast::<HostEndpoint>().unwrap().name(), "cpu0");
    /// ```
    pub fn try_downcast<T: DeviceEndpoint>(&self) -> Result<&T, HarnessError> {
        self.downcast::<T>()
            .ok_or_else(|| HarnessError::InvalidRoute {
                reason: format!(
                    "endpoint `{}` is not a `{}`",
                    self.name(),
                    std::any::type_name::<T>()
                ),
            })
    }

    /// The endpoint's name in reports.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// The kind of device ([`DeviceDescription::kind`]), as
    /// `TRANSFER_CONFORMANCE_REQUIRE_DEVICES` names it.
    pub fn kind(&self) -> &str {
        &self.identity.kind
    }

    /// The engine id.
    pub fn engine_id(&self) -> &EngineId {
        &self.identity.engine_id
    }

    /// The storage class transfers use on this endpoint
    /// ([`DeviceDescription::storage_class`]).
    ///
    /// # Errors
    ///
    /// None today: the description holds a checked class; the `Result`
    /// keeps room for endpoints that resolve it later.
    pub fn storage_class(&self) -> Result<StorageClass, HarnessError> {
        Ok(self.identity.storage_class.clone())
    }

    /// The transfer endpoint.
    ///
    /// # Errors
    ///
    /// As [`Endpoint::storage_class`].
    pub fn transfer_endpoint(&self) -> Result<TransferEndpoint, HarnessError> {
        Ok(TransferEndpoint::new(
            self.engine_id().clone(),
            self.storage_class()?,
        ))
    }

    /// The placement a tensor on this endpoint must have.
    pub fn placement_rule(&self) -> PlacementRule {
        self.adapter.describe().placement
    }

    /// The storage a tensor on this endpoint must use.
    pub fn storage_rule(&self) -> StorageRule {
        self.adapter.describe().storage
    }

    /// A fresh engine for this endpoint in `role`.
    ///
    /// # Errors
    ///
    /// As [`DeviceEndpoint::engine`].
    pub fn engine(&self, role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        self.adapter.engine(role)
    }

    /// The runtime registration of this endpoint's engine in `role`.
    ///
    /// # Errors
    ///
    /// As [`DeviceEndpoint::registration`].
    pub fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        self.adapter.registration(role)
    }

    /// Whether the copy into `tensor` has completed, as the device says.
    pub fn completion_state(&self, tensor: &Tensor) -> CompletionState {
        self.adapter.completion(tensor)
    }

    /// The allocation ledger of this endpoint's memory, when it keeps one.
    pub fn ledger(&self) -> Option<Arc<AllocationLedger>> {
        self.adapter.allocation_ledger()
    }

    /// Whether [`DeviceEndpoint::stage`] builds strided views.
    pub fn stages_views(&self) -> bool {
        self.adapter.stages_views()
    }

    /// Whether the device can run here.
    pub fn availability(&self) -> Availability {
        self.adapter.availability()
    }

    /// `Ok` when the device is available; otherwise
    /// [`HarnessError::Unavailable`] (a skip) or, where the settings
    /// require this endpoint's kind ([`REQUIRE_DEVICES_ENV`](crate::REQUIRE_DEVICES_ENV) naming it or
    /// `all`; its alias [`REQUIRE_KIND_ENV`](crate::REQUIRE_KIND_ENV) set to `1`),
    /// [`HarnessError::DeviceRequired`] (a failure).
    ///
    /// # Errors
    ///
    /// As above, and [`HarnessError::Settings`] for a setting the suite
    /// does not know.
    pub fn gate(&self) -> Result<(), HarnessError> {
        match self.availability() {
            Availability::Available => Ok(()),
            Availability::Unavailable { reason } => {
                let reason = format!("{}: {reason}", self.name());
                match crate::Settings::current()?.requiring(self.kind()) {
                    Some(setting) => Err(HarnessError::DeviceRequired {
                        kind: self.kind().to_owned(),
                        setting,
                        reason,
                    }),
                    None => Err(HarnessError::Unavailable { reason }),
                }
            }
        }
    }

    /// An endpoint on the device `open` opens, or, where opening fails, an
    /// absent one ([`Endpoint::absent`]) whose reason is the error and its
    /// causes: the lazy-open pattern of a route factory, so that a device
    /// that is not here makes its routes skips (failures where the settings
    /// require devices of `kind`), never routes that could not be built.
    ///
    /// # Errors
    ///
    /// As [`Endpoint::absent`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{Endpoint, HarnessError, HostEndpoint, Route};
    ///
    /// fn open_npu() -> Result<HostEndpoint, std::io::Error> {
    ///     Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no /dev/npu0"))
    /// }
    /// let device = Endpoint::open_or_absent("npu0", "vendor-npu", open_npu).unwrap();
    /// let route = Route::new(Endpoint::host("host").unwrap(), device).unwrap();
    /// match route.gate() {
    ///     Err(HarnessError::Unavailable { reason }) => assert_eq!(reason, "npu0: no /dev/npu0"),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn open_or_absent<D: DeviceEndpoint, E: std::error::Error + 'static>(
        name: &str,
        kind: &str,
        open: impl FnOnce() -> Result<D, E>,
    ) -> Result<Self, HarnessError> {
        match open() {
            Ok(device) => Ok(Self::new(device)),
            Err(error) => Self::absent(name, kind, &crate::describe_error(&error)),
        }
    }

    /// An endpoint for a device that is not here: every case of its routes
    /// is a skip with `reason`, or a failure where the settings require
    /// devices of `kind` ([`Endpoint::gate`]). What a route's factory
    /// returns when opening its device fails, so that an absent device is
    /// a skip, not a route that could not be built.
    ///
    /// # Errors
    ///
    /// Never for a `name` and `kind` of any text; the `Result` keeps room
    /// for tenferro's identifier checks.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{Endpoint, HarnessError, Route};
    ///
    /// // Opening the vendor's device failed: its route is skipped, with why.
    /// let device = Endpoint::absent("npu0", "vendor-npu", "no /dev/npu0").unwrap();
    /// let route = Route::new(Endpoint::host("host").unwrap(), device).unwrap();
    /// match route.gate() {
    ///     Err(HarnessError::Unavailable { reason }) => assert_eq!(reason, "npu0: no /dev/npu0"),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn absent(name: &str, kind: &str, reason: &str) -> Result<Self, HarnessError> {
        Ok(Self::new(AbsentDevice {
            name: name.to_owned(),
            kind: kind.to_owned(),
            reason: reason.to_owned(),
            id: EngineId::new("tenferro-transfer-harness.absent.v1").map_err(|source| {
                HarnessError::config("an absent device's engine id", source.into())
            })?,
            class: StorageClass::new("tenferro-transfer-harness.absent.v1").map_err(|source| {
                HarnessError::config("an absent device's storage class", source.into())
            })?,
        }))
    }
}
