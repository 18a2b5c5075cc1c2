//! `Route`: where a transfer starts and where it must land.

use std::fmt;
use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_mock_devices::{EngineRole, SIM_FAMILY, SimDevice};
use tenferro_runtime::{
    CoreCapabilityBundle, EngineId, EngineRegistration, EngineRegistrationMetadata,
    ExecutableEngineRegistrationConfig, ExecutionContextIdentity, ExecutionEngine,
    InputIngressContract, InputPlacementContract, InputSignatureContract, ProviderDeviceIdentity,
    ProviderId, ResidentOutputContract, RuntimeConfigError, RuntimeInputContract, StorageClass,
    TransferEndpoint, assemble_executable_engine_registration,
};
use tenferro_tensor::{AllocationDomainId, DeviceId, MemoryKind, Placement, TensorRead};

use crate::{HOST_DOMAIN_FAMILY, HarnessError, HostDomain};

/// Storage class of every tenferro-cpu engine.
pub const CPU_STORAGE_CLASS: &str = "tenferro-cpu.host.v1";
/// Provider id of the harness's host endpoints.
pub const HOST_PROVIDER_ID: &str = "tenferro-transfer-harness.host";

/// A host endpoint: a real tenferro-cpu engine, optionally owning a
/// [`HostDomain`] so that it is a distinct place from other host engines.
#[derive(Clone, Debug)]
pub struct HostEndpoint {
    name: String,
    engine_id: EngineId,
    domain: Option<Arc<HostDomain>>,
}

impl HostEndpoint {
    /// The host engine's domain, if it has one.
    pub fn domain(&self) -> Option<&Arc<HostDomain>> {
        self.domain.as_ref()
    }

    /// The endpoint's name in reports.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One side of a route.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Endpoint {
    /// Host memory on a tenferro-cpu engine.
    Host(HostEndpoint),
    /// A simulated device.
    Sim(SimDevice),
    /// A real CUDA device through tenferro-gpu (feature `cuda`).
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaEndpoint),
}

/// Which memory a correct transfer's output must sit in, stated
/// declaratively so the oracle can judge it independently of the runtime.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum PlacementRule {
    /// Pinned or unpinned host memory.
    Host,
    /// Managed memory (a host engine's own allocation domain).
    Managed,
    /// Device memory of this device.
    Device(DeviceId),
}

/// Which storage a correct transfer's output must use.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum StorageRule {
    /// Plain host storage: no backend family, no allocation domain.
    PlainHost,
    /// Backend storage of this family in this allocation domain.
    Domain {
        /// Required backend family.
        family: &'static str,
        /// Required allocation domain.
        domain: AllocationDomainId,
    },
}

impl PlacementRule {
    /// Whether `placement` satisfies the rule.
    pub fn accepts(&self, placement: &Placement) -> bool {
        match self {
            Self::Host => matches!(
                placement.memory_kind,
                MemoryKind::PinnedHost | MemoryKind::UnpinnedHost
            ),
            Self::Managed => placement.memory_kind == MemoryKind::Managed,
            Self::Device(device) => {
                placement.memory_kind == MemoryKind::Device
                    && placement.device.as_ref() == Some(device)
            }
        }
    }
}

impl StorageRule {
    /// Whether a backend family and allocation domain satisfy the rule.
    pub fn accepts(&self, family: Option<&str>, domain: Option<AllocationDomainId>) -> bool {
        match self {
            Self::PlainHost => family.is_none(),
            Self::Domain {
                family: want,
                domain: want_domain,
            } => family == Some(want) && domain == Some(*want_domain),
        }
    }
}

impl fmt::Display for PlacementRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Host => formatter.write_str("host memory (pinned or unpinned)"),
            Self::Managed => formatter.write_str("managed memory"),
            Self::Device(device) => write!(
                formatter,
                "device memory on {:?} #{}",
                device.kind, device.ordinal
            ),
        }
    }
}

impl fmt::Display for StorageRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PlainHost => formatter.write_str("plain host storage (no backend family)"),
            Self::Domain { family, domain } => {
                write!(formatter, "backend family {family:?} in {domain:?}")
            }
        }
    }
}

impl Endpoint {
    /// A plain host endpoint (tenferro-cpu, no allocation domain).
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Config`] if `name` is not a valid identifier
    /// component.
    pub fn host(name: &str) -> Result<Self, HarnessError> {
        Self::host_endpoint(name, None)
    }

    /// A host endpoint whose engine owns a fresh [`HostDomain`].
    ///
    /// # Errors
    ///
    /// As [`Endpoint::host`].
    pub fn host_with_domain(name: &str) -> Result<Self, HarnessError> {
        Self::host_endpoint(name, Some(Arc::new(HostDomain::new())))
    }

    fn host_endpoint(name: &str, domain: Option<Arc<HostDomain>>) -> Result<Self, HarnessError> {
        let engine_id =
            EngineId::new(format!("tenferro-transfer-harness.{name}.v1")).map_err(|error| {
                HarnessError::config(format!("host endpoint `{name}`"), error.into())
            })?;
        Ok(Self::Host(HostEndpoint {
            name: name.to_owned(),
            engine_id,
            domain,
        }))
    }

    /// The endpoint's name in reports.
    pub fn name(&self) -> &str {
        match self {
            Self::Host(host) => &host.name,
            Self::Sim(device) => device.name(),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.name(),
        }
    }

    /// The engine id.
    pub fn engine_id(&self) -> &EngineId {
        match self {
            Self::Host(host) => &host.engine_id,
            Self::Sim(device) => device.engine_id(),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.engine_id(),
        }
    }

    /// The storage class transfers use on this endpoint.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Config`] if tenferro rejects the class name.
    pub fn storage_class(&self) -> Result<StorageClass, HarnessError> {
        match self {
            Self::Host(_) => StorageClass::new(CPU_STORAGE_CLASS)
                .map_err(|error| HarnessError::config("host storage class", error.into())),
            Self::Sim(device) => Ok(device.storage_class().clone()),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => Ok(device.storage_class().clone()),
        }
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
        match self {
            Self::Host(HostEndpoint { domain: None, .. }) => PlacementRule::Host,
            Self::Host(HostEndpoint {
                domain: Some(_), ..
            }) => PlacementRule::Managed,
            Self::Sim(device) => PlacementRule::Device(device.device_id()),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.placement_rule(),
        }
    }

    /// The storage a tensor on this endpoint must use.
    pub fn storage_rule(&self) -> StorageRule {
        match self {
            Self::Host(HostEndpoint { domain: None, .. }) => StorageRule::PlainHost,
            Self::Host(HostEndpoint {
                domain: Some(domain),
                ..
            }) => StorageRule::Domain {
                family: HOST_DOMAIN_FAMILY,
                domain: tenferro_tensor::SharedTensorAllocationDomain::id(domain.as_ref()),
            },
            Self::Sim(device) => StorageRule::Domain {
                family: SIM_FAMILY,
                domain: device.allocation_domain(),
            },
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.storage_rule(),
        }
    }

    /// A fresh engine for this endpoint (for CUDA: the engine the last
    /// [`Endpoint::registration`] registered).
    ///
    /// # Errors
    ///
    /// A CUDA engine that cannot be opened.
    pub fn engine(&self) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(match self {
            Self::Host(host) => {
                let engine = CpuEngine::serial().with_runtime_engine_id(host.engine_id.clone());
                Box::new(match &host.domain {
                    Some(domain) => engine.with_allocation_domain(Arc::clone(domain) as Arc<_>),
                    None => engine,
                })
            }
            Self::Sim(device) => Box::new(device.engine()),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => Box::new(device.take_engine()?),
        })
    }

    /// Whether this endpoint is a real CUDA device.
    pub fn is_cuda(&self) -> bool {
        #[cfg(feature = "cuda")]
        {
            matches!(self, Self::Cuda(_))
        }
        #[cfg(not(feature = "cuda"))]
        {
            false
        }
    }

    /// The runtime registration of this endpoint's engine in `role`.
    ///
    /// A host destination without a domain uses tenferro-cpu's own
    /// registration, so its ingress is the real CPU's; every other host
    /// registration is assembled here with a distinct provider-device
    /// identity, because two stock CPU registrations collide.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Config`] if the runtime rejects it.
    pub fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let context = format!("registration of `{}`", self.name());
        let config = |source: RuntimeConfigError| HarnessError::config(context.clone(), source);
        match self {
            Self::Sim(device) => device.registration(role).map_err(config),
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.registration(role),
            Self::Host(host) => {
                let engine = CpuEngine::serial().with_runtime_engine_id(host.engine_id.clone());
                if role == EngineRole::Destination && host.domain.is_none() {
                    return tenferro_cpu::runtime_engine_registration_with_id(
                        &engine,
                        host.engine_id.clone(),
                    )
                    .map_err(config);
                }
                let capabilities = match role {
                    EngineRole::Source => CoreCapabilityBundle::default(),
                    _ => tenferro_cpu::runtime_engine_registration_with_id(
                        &engine,
                        host.engine_id.clone(),
                    )
                    .map_err(config)?
                    .capabilities()
                    .clone(),
                };
                let storage = self.storage_class()?;
                let identity = ProviderDeviceIdentity::new(
                    ProviderId::new(HOST_PROVIDER_ID).map_err(|error| config(error.into()))?,
                    host.name.clone(),
                )
                .map_err(|error| config(error.into()))?;
                let metadata = EngineRegistrationMetadata::new(
                    host.engine_id.clone(),
                    identity,
                    tenferro_cpu::runtime_hardware_class().map_err(config)?,
                    Arc::from(vec![storage.clone()]),
                    storage.clone(),
                    capabilities,
                );
                assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
                    metadata,
                    ExecutionContextIdentity::of::<CpuEngine>(),
                    declared_ingress(storage, self.placement_rule(), self.storage_rule()),
                ))
                .map_err(config)
            }
        }
    }
}

/// Ingress of a harness-assembled engine (host, or a CUDA source): the
/// endpoint's placement rule, and its storage rule for signature, runtime
/// input and residency.
pub(crate) fn declared_ingress(
    storage: StorageClass,
    placement: PlacementRule,
    rule: StorageRule,
) -> InputIngressContract {
    let (s1, s2, s3, s4) = (storage.clone(), storage.clone(), storage.clone(), storage);
    let (p1, p2, p3) = (placement.clone(), placement.clone(), placement);
    let (r1, r2, r3) = (rule.clone(), rule.clone(), rule);
    InputIngressContract::new(
        InputPlacementContract::new(move |placement, candidate| {
            candidate == &s1 && p1.accepts(placement)
        }),
        InputSignatureContract::new(move |placement, family, domain, candidate| {
            candidate == &s2 && p2.accepts(placement) && r1.accepts(family, domain)
        }),
        RuntimeInputContract::new(move |input: &TensorRead<'_>, candidate| {
            candidate == &s3
                && p3.accepts(input.placement())
                && r2.accepts(input.backend_family(), input.allocation_domain())
        }),
        ResidentOutputContract::new(move |input: &TensorRead<'_>, candidate| {
            candidate == &s4 && r3.accepts(input.backend_family(), input.allocation_domain())
        }),
    )
}

/// A transfer route: the source the input starts on, and the destination
/// the provider must deliver to.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::Route;
///
/// let route = Route::host_to_sim().unwrap();
/// assert_eq!(route.label(), "host->sim0");
/// ```
#[derive(Clone, Debug)]
pub struct Route {
    source: Endpoint,
    destination: Endpoint,
}

impl Route {
    /// A route between two endpoints, which must have distinct engine ids.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidRoute`] if both ends share an engine id.
    pub fn new(source: Endpoint, destination: Endpoint) -> Result<Self, HarnessError> {
        if source.engine_id() == destination.engine_id() {
            return Err(HarnessError::InvalidRoute {
                reason: format!(
                    "source and destination share engine id {}",
                    source.engine_id().as_str()
                ),
            });
        }
        Ok(Self {
            source,
            destination,
        })
    }

    /// Host (tenferro-cpu) to a fresh simulated device `sim0`.
    ///
    /// # Errors
    ///
    /// As [`Route::new`], or a device setup failure.
    pub fn host_to_sim() -> Result<Self, HarnessError> {
        Self::new(Endpoint::host("host")?, Endpoint::Sim(SimDevice::new(0)?))
    }

    /// A fresh simulated device `sim0` to host (tenferro-cpu).
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_sim`].
    pub fn sim_to_host() -> Result<Self, HarnessError> {
        Self::new(Endpoint::Sim(SimDevice::new(0)?), Endpoint::host("host")?)
    }

    /// Simulated device `sim0` to simulated device `sim1`.
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_sim`].
    pub fn sim_to_sim() -> Result<Self, HarnessError> {
        Self::new(
            Endpoint::Sim(SimDevice::new(0)?),
            Endpoint::Sim(SimDevice::new(1)?),
        )
    }

    /// Host engine `host-src`, which owns its own allocation domain, to the
    /// plain host engine `host`.
    ///
    /// tenferro-cpu runs only on plain host buffers, so the engine with the
    /// domain is the source (which never runs anything) and the provider must
    /// deliver plain host memory.
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_sim`].
    pub fn host_to_host() -> Result<Self, HarnessError> {
        Self::new(
            Endpoint::host_with_domain("host-src")?,
            Endpoint::host("host")?,
        )
    }

    /// The source endpoint.
    pub fn source(&self) -> &Endpoint {
        &self.source
    }

    /// The destination endpoint.
    pub fn destination(&self) -> &Endpoint {
        &self.destination
    }

    /// `source->destination`, e.g. `host->sim0`.
    pub fn label(&self) -> String {
        format!("{}->{}", self.source.name(), self.destination.name())
    }
}
