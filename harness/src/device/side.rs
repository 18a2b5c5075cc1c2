//! [`Endpoint`]: one side of a route, which holds any device's
//! [`DeviceEndpoint`] adapter and answers for it.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tenferro_runtime::{
    EngineId, EngineRegistration, ExecutionEngine, StorageClass, TransferEndpoint,
};
use tenferro_tensor::{Tensor, TensorRead};

use crate::device::absent::AbsentDevice;
use crate::device::memory::{Activity, Stay};
use crate::{
    AllocationLedger, Availability, CompletionState, DeviceDescription, DeviceEndpoint, EngineRole,
    HarnessError, MemoryInUse, PlacementRule, ReadBack, StorageRule, panic_message,
};

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

    /// Hold back the work queued on the device from now on for `pause`
    /// ([`DeviceEndpoint::stall_queues`]): whether the device stalled. An
    /// adapter whose stall panics is taken as one that cannot stall (the
    /// panic's message goes to the panic hook, as any panic's does): a
    /// stall is an aid to the suite's checks, not a rule, and its panic
    /// must not be charged to the provider whose call it surrounds.
    pub fn stall_queues(&self, pause: std::time::Duration) -> bool {
        catch_unwind(AssertUnwindSafe(|| self.adapter.stall_queues(pause))).unwrap_or(false)
    }

    /// An input's whole backing storage as the adapter reads it through
    /// the device ([`DeviceEndpoint::read_back`] for a tensor,
    /// [`DeviceEndpoint::read_back_view`] for a view); `None` where it
    /// leaves the reading to the harness. A read that panics is the
    /// adapter's fault, not the provider's: the input is not readable on
    /// this case, and its checks are skipped, naming the panic.
    pub(crate) fn read_back_input(&self, input: &TensorRead<'_>) -> Option<ReadBack> {
        let (method, read) = match input {
            TensorRead::Tensor(tensor) => (
                "read_back",
                catch_unwind(AssertUnwindSafe(|| self.adapter.read_back(tensor))),
            ),
            TensorRead::View(view) => (
                "read_back_view",
                catch_unwind(AssertUnwindSafe(|| self.adapter.read_back_view(view))),
            ),
        };
        read.unwrap_or_else(|payload| {
            Some(ReadBack::NotReadable {
                reason: format!(
                    "the adapter of endpoint {} panicked in {method} reading the input: {}",
                    self.name(),
                    panic_message(payload.as_ref())
                ),
            })
        })
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
