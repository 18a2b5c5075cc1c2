//! What an adapter needs to register its engine in a rig, made writable:
//! [`DeviceDescription::registration`] builds the source and the
//! destination registration from the device's description, its identities
//! and the engine's own capabilities, with an ingress contract assembled
//! from the description's rules ([`declared_ingress`]); [`reshape_only`]
//! is the capability a destination needs when its engine runs the identity
//! reshape the rig's program consists of.

use std::sync::Arc;

use tenferro_runtime::{
    CoreCapabilityBundle, CorePrepareContext, ElementwisePrepareRequest, ElementwiseRuntime,
    EngineRegistration, EngineRegistrationMetadata, ExecutableEngineRegistrationConfig,
    ExecutionContextIdentity, ExecutionEngine, HardwareClassId, InputIngressContract,
    InputPlacementContract, InputSignatureContract, LayoutPrepareRequest, LayoutRuntime,
    PrepareCapability, PrepareError, PreparedOperation, PreparedOperationBinding,
    PreparedOperationPlan, ProviderDeviceIdentity, ResidentOutputContract, RuntimeConfigError,
    RuntimeInputContract, SpecializationProjection, StorageClass,
    assemble_executable_engine_registration,
};
use tenferro_tensor::TensorRead;

use crate::{DeviceDescription, EngineRole, HarnessError, PlacementRule, StorageRule};

impl DeviceDescription {
    /// The runtime registration of the engine `E` of this device in `role`:
    ///
    /// - as the [`EngineRole::Source`], no capabilities (nothing runs
    ///   there, so the program's op must move away) and an ingress that
    ///   accepts the staged input;
    /// - as the [`EngineRole::Destination`], `capabilities` (the engine's
    ///   own; [`reshape_only`] where it runs the identity reshape by
    ///   metadata) and an ingress that refuses the raw input, so the input
    ///   must move through the provider under test.
    ///
    /// Placement, signature, runtime input and residency are all judged by
    /// this description's [`PlacementRule`](crate::PlacementRule) and
    /// [`StorageRule`](crate::StorageRule) ([`declared_ingress`]).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Config`] when tenferro refuses the registration.
    ///
    /// # Examples
    ///
    /// The registration of a second tenferro-cpu engine as a destination,
    /// written as a vendor writes its own:
    ///
    /// ```
    /// use tenferro_cpu::CpuEngine;
    /// use tenferro_runtime::{EngineId, ProviderDeviceIdentity, ProviderId, StorageClass};
    /// use tenferro_transfer_harness::{DeviceDescription, EngineRole, PlacementRule, StorageRule};
    ///
    /// let description = DeviceDescription::new(
    ///     "my-cpu",
    ///     "my-cpu",
    ///     EngineId::new("my-vendor.cpu.v1").unwrap(),
    ///     StorageClass::new("tenferro-cpu.host.v1").unwrap(),
    ///     PlacementRule::Host,
    ///     StorageRule::PlainHost,
    /// );
    /// let identity = ProviderDeviceIdentity::new(ProviderId::new("my-vendor.cpu").unwrap(), "cpu0").unwrap();
    /// let engine = CpuEngine::serial().with_runtime_engine_id(description.engine_id.clone());
    /// let capabilities = tenferro_cpu::runtime_engine_registration_with_id(&engine, description.engine_id.clone())
    ///     .unwrap()
    ///     .capabilities()
    ///     .clone();
    /// let registration = description
    ///     .registration::<CpuEngine>(
    ///         EngineRole::Destination,
    ///         identity,
    ///         tenferro_cpu::runtime_hardware_class().unwrap(),
    ///         capabilities,
    ///     )
    ///     .unwrap();
    /// assert_eq!(registration.engine_id(), &description.engine_id);
    /// ```
    pub fn registration<E: ExecutionEngine + 'static>(
        &self,
        role: EngineRole,
        identity: ProviderDeviceIdentity,
        hardware_class: HardwareClassId,
        capabilities: CoreCapabilityBundle,
    ) -> Result<EngineRegistration, HarnessError> {
        let (capabilities, accept_raw_input) = match role {
            EngineRole::Source => (CoreCapabilityBundle::default(), true),
            EngineRole::Destination => (capabilities, false),
        };
        let metadata = EngineRegistrationMetadata::new(
            self.engine_id.clone(),
            identity,
            hardware_class,
            Arc::from(vec![self.storage_class.clone()]),
            self.storage_class.clone(),
            capabilities,
        );
        assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
            metadata,
            ExecutionContextIdentity::of::<E>(),
            declared_ingress(
                self.storage_class.clone(),
                self.placement.clone(),
                self.storage.clone(),
                accept_raw_input,
            ),
        ))
        .map_err(|source| HarnessError::config(format!("registration of `{}`", self.name), source))
    }

    /// The registration of this device's engine in `role`, made from the
    /// registration the device already has for production (`own`, with its
    /// identities, capabilities and ingress):
    ///
    /// - as the [`EngineRole::Destination`], `own` unchanged, so the suite
    ///   runs through the device's own ingress (it must refuse the raw
    ///   host input, so that the input moves through the provider; where
    ///   yours accepts it, use [`registration`](DeviceDescription::registration));
    /// - as the [`EngineRole::Source`], `own`'s identities with no
    ///   capabilities (nothing runs there, so the program's op must move
    ///   away) and an ingress that accepts the staged input
    ///   ([`declared_ingress`] of this description's rules).
    ///
    /// # Errors
    ///
    /// [`HarnessError::InvalidRoute`] when `own` is of another engine than
    /// this description names; [`HarnessError::Config`] when tenferro
    /// refuses the source registration.
    ///
    /// # Examples
    ///
    /// A second tenferro-cpu engine whose stock registration is its own:
    ///
    /// ```
    /// use tenferro_cpu::CpuEngine;
    /// use tenferro_runtime::{EngineId, StorageClass};
    /// use tenferro_transfer_harness::{DeviceDescription, EngineRole, PlacementRule, StorageRule};
    ///
    /// let id = EngineId::new("my-vendor.cpu.v1").unwrap();
    /// let class = StorageClass::new("tenferro-cpu.host.v1").unwrap();
    /// let description =
    ///     DeviceDescription::new("my-cpu", "my-cpu", id.clone(), class, PlacementRule::Host, StorageRule::PlainHost);
    /// let engine = CpuEngine::serial().with_runtime_engine_id(id.clone());
    /// let own = tenferro_cpu::runtime_engine_registration_with_id(&engine, id).unwrap();
    /// let source = description.registration_from(EngineRole::Source, own).unwrap();
    /// assert_eq!(source.engine_id(), &description.engine_id);
    /// assert!(source.capabilities().layout().is_none());
    /// ```
    pub fn registration_from(
        &self,
        role: EngineRole,
        own: EngineRegistration,
    ) -> Result<EngineRegistration, HarnessError> {
        if own.engine_id() != &self.engine_id {
            return Err(HarnessError::InvalidRoute {
                reason: format!(
                    "the registration given for `{}` is of engine `{}`, and its description says `{}`",
                    self.name,
                    own.engine_id().as_str(),
                    self.engine_id.as_str()
                ),
            });
        }
        match role {
            EngineRole::Destination => Ok(own),
            EngineRole::Source => reregister(
                &own,
                CoreCapabilityBundle::default(),
                own.context_identity(),
                self.placement.clone(),
                self.storage.clone(),
            )
            .map_err(|source| {
                HarnessError::config(format!("source registration of `{}`", self.name), source)
            }),
        }
    }
}

/// `stock`'s identity (engine id, provider device, hardware and storage
/// classes) with other `capabilities`, and an ingress declared by the
/// placement and storage rules: how the harness confines an engine to some
/// operations (none, for a source). An adapter whose device's own
/// registration must run fewer operations in a rig than in production
/// calls it; most use [`DeviceDescription::registration_from`], which
/// calls it for a source.
///
/// # Errors
///
/// tenferro's [`RuntimeConfigError`] when it refuses the registration.
///
/// # Examples
///
/// ```
/// use tenferro_cpu::CpuEngine;
/// use tenferro_runtime::{CoreCapabilityBundle, EngineId, ExecutionContextIdentity};
/// use tenferro_transfer_harness::{PlacementRule, StorageRule, reregister};
///
/// let id = EngineId::new("my-vendor.cpu.v1").unwrap();
/// let engine = CpuEngine::serial().with_runtime_engine_id(id.clone());
/// let stock = tenferro_cpu::runtime_engine_registration_with_id(&engine, id).unwrap();
/// let none = reregister(
///     &stock,
///     CoreCapabilityBundle::default(),
///     ExecutionContextIdentity::of::<CpuEngine>(),
///     PlacementRule::Host,
///     StorageRule::PlainHost,
/// )
/// .unwrap();
/// assert!(none.capabilities().layout().is_none());
/// ```
pub fn reregister(
    stock: &EngineRegistration,
    capabilities: CoreCapabilityBundle,
    context: ExecutionContextIdentity,
    placement: PlacementRule,
    storage: StorageRule,
) -> Result<EngineRegistration, RuntimeConfigError> {
    let class = stock.default_storage_class().clone();
    let metadata = EngineRegistrationMetadata::new(
        stock.engine_id().clone(),
        stock.provider_device_identity().clone(),
        stock.hardware_class().clone(),
        Arc::from(stock.storage_classes().to_vec()),
        class.clone(),
        capabilities,
    );
    assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
        metadata,
        context,
        crate::declared_ingress(class, placement, storage, true),
    ))
}

/// The capability a destination needs to consume a transfer in a rig: it
/// prepares the identity reshape (and elementwise operations) as metadata,
/// and the runtime then dispatches them to the engine passed to
/// `Runtime::run` (whose `reshape_read` does the work). For an engine that
/// has no capability bundle of its own to offer.
///
/// # Examples
///
/// ```
/// let capabilities = tenferro_transfer_harness::reshape_only();
/// # let _ = capabilities;
/// ```
pub fn reshape_only() -> CoreCapabilityBundle {
    let preparer = Arc::new(MetadataPreparer);
    let mut bundle = CoreCapabilityBundle::builder();
    bundle.elementwise(preparer.clone()).layout(preparer);
    bundle.build()
}

/// Prepares metadata-only plans.
#[derive(Debug)]
struct MetadataPreparer;

#[derive(Debug)]
struct MetadataOperation {
    binding: PreparedOperationBinding,
    specialization: SpecializationProjection,
}

impl PreparedOperation for MetadataOperation {
    fn binding(&self) -> &PreparedOperationBinding {
        &self.binding
    }

    fn specialization(&self) -> &SpecializationProjection {
        &self.specialization
    }

    fn retained_bytes(&self) -> usize {
        0
    }
}

fn metadata_plan(context: &CorePrepareContext<'_>) -> PrepareCapability {
    PrepareCapability::Prepared(PreparedOperationPlan::metadata(Arc::new(
        MetadataOperation {
            binding: context.binding().clone(),
            specialization: context.specialization().clone(),
        },
    )))
}

impl ElementwiseRuntime for MetadataPreparer {
    fn prepare(
        &self,
        request: ElementwisePrepareRequest<'_>,
    ) -> Result<PrepareCapability, PrepareError> {
        Ok(metadata_plan(request.context()))
    }
}

impl LayoutRuntime for MetadataPreparer {
    fn prepare(
        &self,
        request: LayoutPrepareRequest<'_>,
    ) -> Result<PrepareCapability, PrepareError> {
        Ok(metadata_plan(request.context()))
    }
}

/// Ingress of an engine assembled from an endpoint's rules: its placement
/// rule for placement, and its storage rule for signature, runtime input
/// and residency. A destination that must refuse the raw input (so the
/// input moves through the provider) passes `accept_raw_input = false`.
pub fn declared_ingress(
    storage: StorageClass,
    placement: PlacementRule,
    rule: StorageRule,
    accept_raw_input: bool,
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
            accept_raw_input
                && candidate == &s3
                && p3.accepts(input.placement())
                && r2.accepts(input.backend_family(), input.allocation_domain())
        }),
        ResidentOutputContract::new(move |input: &TensorRead<'_>, candidate| {
            candidate == &s4 && r3.accepts(input.backend_family(), input.allocation_domain())
        }),
    )
}

#[cfg(test)]
mod tests {
    use tenferro_cpu::CpuEngine;
    use tenferro_runtime::{EngineId, EngineRegistration, StorageClass};

    use crate::{DeviceDescription, EngineRole, HarnessError, PlacementRule, StorageRule};

    fn description(id: &str) -> DeviceDescription {
        DeviceDescription::new(
            "cpu9",
            "my-cpu",
            EngineId::new(id).expect("a valid id"),
            StorageClass::new("tenferro-cpu.host.v1").expect("a valid class"),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn stock(id: &str) -> EngineRegistration {
        let id = EngineId::new(id).expect("a valid id");
        let engine = CpuEngine::serial().with_runtime_engine_id(id.clone());
        tenferro_cpu::runtime_engine_registration_with_id(&engine, id).expect("cpu registers")
    }

    #[test]
    fn a_destination_keeps_its_own_registration_and_a_source_loses_its_capabilities() {
        let description = description("vendor.cpu9.v1");
        let own = stock("vendor.cpu9.v1");
        assert!(own.capabilities().layout().is_some());
        let destination = description
            .registration_from(EngineRole::Destination, own.clone())
            .expect("the destination registers");
        assert!(destination.capabilities().layout().is_some());
        assert!(destination.capabilities().elementwise().is_some());
        let source = description
            .registration_from(EngineRole::Source, own.clone())
            .expect("the source registers");
        assert!(source.capabilities().layout().is_none());
        assert!(source.capabilities().elementwise().is_none());
        assert_eq!(source.engine_id(), own.engine_id());
        assert_eq!(
            source.provider_device_identity(),
            own.provider_device_identity()
        );
        assert_eq!(source.hardware_class(), own.hardware_class());
        assert_eq!(source.context_identity(), own.context_identity());
    }

    #[test]
    fn a_registration_of_another_engine_is_refused_with_both_ids() {
        let error = description("vendor.cpu9.v1")
            .registration_from(EngineRole::Source, stock("vendor.other.v1"))
            .expect_err("another engine's registration");
        assert!(
            matches!(error, HarnessError::InvalidRoute { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("vendor.other.v1") && message.contains("vendor.cpu9.v1"),
            "{message}"
        );
    }
}
