//! The host adapter: a real tenferro-cpu engine, with plain host memory or
//! a host memory domain of its own ([`HostMemoryDomain`]: managed memory in
//! a private allocation domain, a place distinct from other host engines).

use std::any::Any;
use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_runtime::{
    CoreCapabilityBundle, EngineId, EngineRegistration, EngineRegistrationMetadata,
    ExecutableEngineRegistrationConfig, ExecutionContextIdentity, ExecutionEngine,
    ProviderDeviceIdentity, ProviderId, RuntimeConfigError, StorageClass,
    assemble_executable_engine_registration,
};
use tenferro_tensor::{Tensor, TensorRead, TypedTensorView};

use crate::device::stage::carve;
use crate::values::case::Filler;
use crate::{
    AllocationLedger, Case, CompletionState, DeviceDescription, DeviceEndpoint, Endpoint,
    EngineRole, HarnessError, Layout, PlacementRule, Route, StorageRule, compact_strides,
    declared_ingress, with_element,
};

/// Host memory in an allocation domain of its own, on which a host
/// endpoint's tenferro-cpu engine runs ([`HostEndpoint::managed`]): the
/// domain allocates its tensors (placed as `MemoryKind::Managed`), names
/// their backend family, accounts them, and stages a case's input in them.
/// The simulated devices' crate has one (`tenferro_mock_devices::HostDomain`).
pub trait HostMemoryDomain:
    Any + tenferro_tensor::SharedTensorAllocationDomain + std::fmt::Debug + Send + Sync
{
    /// The backend family of the domain's storage.
    fn family(&self) -> &'static str;

    /// The ledger of the domain's allocations, if it keeps one.
    fn ledger(&self) -> Option<Arc<AllocationLedger>>;

    /// Build `case`'s input in the domain's memory (owned, or a strided
    /// view of a backing in it) and hand it to `use_input` once.
    ///
    /// # Errors
    ///
    /// When tenferro rejects the tensor or view.
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError>;
}

/// Storage class of every tenferro-cpu engine.
pub const CPU_STORAGE_CLASS: &str = "tenferro-cpu.host.v1";
/// Provider id of the harness's host endpoints.
pub const HOST_PROVIDER_ID: &str = "tenferro-transfer-harness.host";

/// A host endpoint: a real tenferro-cpu engine, optionally owning a
/// [`HostMemoryDomain`] so that it is a distinct place from other host
/// engines.
///
/// As a source it hands the provider what tenferro-cpu hands one: plain
/// host vectors, storage-group roots (as its kernels return them; owned
/// cases of rank 2 and above) and strided views (or, with a domain,
/// managed tensors of that domain and views of them).
#[derive(Clone, Debug)]
pub struct HostEndpoint {
    name: String,
    engine_id: EngineId,
    storage_class: StorageClass,
    domain: Option<Arc<dyn HostMemoryDomain>>,
}

impl HostEndpoint {
    /// A plain host endpoint (tenferro-cpu, no allocation domain).
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Config`] if `name` is not a valid identifier
    /// component.
    pub fn plain(name: &str) -> Result<Self, HarnessError> {
        Self::with(name, None)
    }

    /// A host endpoint whose engine owns `domain`.
    ///
    /// # Errors
    ///
    /// As [`HostEndpoint::plain`].
    pub fn managed(name: &str, domain: Arc<dyn HostMemoryDomain>) -> Result<Self, HarnessError> {
        Self::with(name, Some(domain))
    }

    fn with(name: &str, domain: Option<Arc<dyn HostMemoryDomain>>) -> Result<Self, HarnessError> {
        let engine_id =
            EngineId::new(format!("tenferro-transfer-harness.{name}.v1")).map_err(|error| {
                HarnessError::config(format!("host endpoint `{name}`"), error.into())
            })?;
        let storage_class = StorageClass::new(CPU_STORAGE_CLASS)
            .map_err(|error| HarnessError::config("host storage class", error.into()))?;
        Ok(Self {
            name: name.to_owned(),
            engine_id,
            storage_class,
            domain,
        })
    }

    /// The host engine's domain, if it has one.
    pub fn domain(&self) -> Option<&Arc<dyn HostMemoryDomain>> {
        self.domain.as_ref()
    }

    /// The endpoint's name in reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn cpu_engine(&self) -> CpuEngine {
        CpuEngine::serial().with_runtime_engine_id(self.engine_id.clone())
    }
}

impl Endpoint {
    /// A plain host endpoint (tenferro-cpu, no allocation domain).
    ///
    /// # Errors
    ///
    /// As [`HostEndpoint::plain`].
    pub fn host(name: &str) -> Result<Self, HarnessError> {
        Ok(Self::new(HostEndpoint::plain(name)?))
    }
}

impl Route {
    /// An upload: from a plain host endpoint named `host` to `device` (any
    /// adapter), the route most device providers serve first.
    ///
    /// # Errors
    ///
    /// As [`Route::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{HostEndpoint, Route};
    ///
    /// let route = Route::host_to(HostEndpoint::plain("cpu1").unwrap()).unwrap();
    /// assert_eq!(route.label(), "host->cpu1");
    /// ```
    pub fn host_to(device: impl DeviceEndpoint) -> Result<Self, HarnessError> {
        Self::new(Endpoint::host("host")?, Endpoint::new(device))
    }

    /// A download: from `device` (any adapter, which must
    /// [`stage`](DeviceEndpoint::stage) inputs) to a plain host endpoint
    /// named `host`.
    ///
    /// # Errors
    ///
    /// As [`Route::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{HostEndpoint, Route};
    ///
    /// let route = Route::to_host(HostEndpoint::plain("cpu1").unwrap()).unwrap();
    /// assert_eq!(route.label(), "cpu1->host");
    /// ```
    pub fn to_host(device: impl DeviceEndpoint) -> Result<Self, HarnessError> {
        Self::new(Endpoint::new(device), Endpoint::host("host")?)
    }
}

impl DeviceEndpoint for HostEndpoint {
    fn describe(&self) -> DeviceDescription {
        let (placement, storage) = match &self.domain {
            None => (PlacementRule::Host, StorageRule::PlainHost),
            Some(domain) => (
                PlacementRule::Managed,
                StorageRule::domain(domain.family(), domain.id()),
            ),
        };
        DeviceDescription::new(
            self.name.clone(),
            "host",
            self.engine_id.clone(),
            self.storage_class.clone(),
            placement,
            storage,
        )
    }

    /// A plain host destination uses tenferro-cpu's own registration, so
    /// its ingress is the real CPU's; every other host registration is
    /// assembled here with a distinct provider-device identity, because two
    /// stock CPU registrations collide.
    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let context = format!("registration of `{}`", self.name);
        let config = |source: RuntimeConfigError| HarnessError::config(context.clone(), source);
        let engine = self.cpu_engine();
        let stock = || {
            tenferro_cpu::runtime_engine_registration_with_id(&engine, self.engine_id.clone())
                .map_err(config)
        };
        if role == EngineRole::Destination && self.domain.is_none() {
            return stock();
        }
        let capabilities = match role {
            EngineRole::Source => CoreCapabilityBundle::default(),
            _ => stock()?.capabilities().clone(),
        };
        let storage = self.storage_class.clone();
        let identity = ProviderDeviceIdentity::new(
            ProviderId::new(HOST_PROVIDER_ID).map_err(|error| config(error.into()))?,
            self.name.clone(),
        )
        .map_err(|error| config(error.into()))?;
        let metadata = EngineRegistrationMetadata::new(
            self.engine_id.clone(),
            identity,
            tenferro_cpu::runtime_hardware_class().map_err(config)?,
            Arc::from(vec![storage.clone()]),
            storage.clone(),
            capabilities,
        );
        assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
            metadata,
            ExecutionContextIdentity::of::<CpuEngine>(),
            {
                let description = self.describe();
                declared_ingress(storage, description.placement, description.storage, true)
            },
        ))
        .map_err(config)
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        let engine = self.cpu_engine();
        Ok(Box::new(match &self.domain {
            Some(domain) => {
                let domain: Arc<dyn tenferro_tensor::SharedTensorAllocationDomain> =
                    Arc::clone(domain) as _;
                engine.with_allocation_domain(domain)
            }
            None => engine,
        }))
    }

    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        if let Some(domain) = &self.domain {
            return domain.stage(case, use_input);
        }
        with_element!(case.dtype(), T => stage_host::<T>(case, use_input),
            external => Err(HarnessError::InvalidCase { reason: format!("dtype {:?} is not a preset dtype", case.dtype()) }))
    }

    fn completion(&self, tensor: &Tensor) -> CompletionState {
        let _ = tensor;
        CompletionState::Unknown {
            reason: "plain host memory has no completion state to observe".to_owned(),
        }
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        self.domain.as_ref().and_then(|domain| domain.ledger())
    }
}

fn stage_host<T: crate::Element + Filler>(
    case: &Case,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    let stage = |source: tenferro_tensor::Error| HarnessError::Stage { source };
    match case.layout() {
        // tenferro-cpu hands over plain host vectors and, from its kernels,
        // tensors whose storage is the root of a storage group: owned cases
        // of rank 2 and above are staged as the latter (tenferro's own
        // promotion of a host tensor), the others as plain vectors.
        Layout::Owned if case.shape().len() >= 2 => {
            let typed = tenferro_tensor::TypedTensor::<T>::from_vec_col_major(
                case.shape().to_vec(),
                case.typed_values::<T>(),
            )
            .map_err(stage)?;
            let root = typed
                .into_host()
                .map_err(|error| stage(error.into_parts().1))?
                .promote()
                .map_err(stage)?
                .into_dynamic();
            let tensor = Tensor::from_typed(root);
            use_input(TensorRead::from_tensor(&tensor));
            Ok(())
        }
        Layout::Owned => {
            let tensor =
                Tensor::from_vec_col_major(case.shape().to_vec(), case.typed_values::<T>())
                    .map_err(stage)?;
            use_input(TensorRead::from_tensor(&tensor));
            Ok(())
        }
        Layout::View(spec) => {
            let backing = case.backing_values::<T>();
            let strides = compact_strides(&spec.backing_shape);
            let base = TypedTensorView::from_slice(&spec.backing_shape, &strides, 0, &backing)
                .map_err(stage)?;
            use_input(carve(base, spec).map_err(stage)?);
            Ok(())
        }
    }
}

impl Route {
    /// A plain tenferro-cpu engine `host-plain` to another plain tenferro-cpu
    /// engine `host`: the provider receives what tenferro-cpu hands over
    /// (plain host tensors and strided views of them) and must deliver
    /// plain host memory.
    ///
    /// # Errors
    ///
    /// As [`Route::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let case = Case::from_values(vec![3], vec![1_i64, i64::MIN, -7]).unwrap();
    /// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
    /// ```
    pub fn host_to_host() -> Result<Self, HarnessError> {
        Self::new(Endpoint::host("host-plain")?, Endpoint::host("host")?)
    }
}
