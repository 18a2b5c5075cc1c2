//! Runtime registration of a simulated device's engine: its ingress
//! contract, which accepts exactly the device's own tensors, and
//! metadata-only preparation for the operations `SimEngine` runs.

use std::sync::Arc;

use tenferro_runtime::{
    CoreCapabilityBundle, EngineRegistration, EngineRegistrationMetadata,
    ExecutableEngineRegistrationConfig, ExecutionContextIdentity, InputIngressContract,
    InputPlacementContract, InputSignatureContract, ResidentOutputContract, RuntimeConfigError,
    RuntimeInputContract, assemble_executable_engine_registration,
};
use tenferro_tensor::TensorRead;

use tenferro_transfer_harness::EngineRole;

use crate::{SIM_FAMILY, SimDevice, SimEngine};

impl SimDevice {
    /// The engine of this device.
    pub fn engine(&self) -> SimEngine {
        SimEngine::new(self.clone())
    }

    /// A runtime registration of this device's engine in `role`.
    ///
    /// # Errors
    ///
    /// Returns the runtime's [`RuntimeConfigError`] if it rejects the
    /// registration.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::{EngineRole, SimDevice};
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// let registration = device.registration(EngineRole::Destination).unwrap();
    /// assert_eq!(registration.engine_id(), device.engine_id());
    /// ```
    pub fn registration(&self, role: EngineRole) -> Result<EngineRegistration, RuntimeConfigError> {
        let capabilities = match role {
            EngineRole::Source => CoreCapabilityBundle::default(),
            // Preparation by metadata: the runtime then dispatches each
            // operation to the `SimEngine` passed to `Runtime::run`.
            EngineRole::Destination => tenferro_transfer_harness::reshape_only(),
        };
        let metadata = EngineRegistrationMetadata::new(
            self.engine_id().clone(),
            self.provider_device_identity().clone(),
            self.hardware_class().clone(),
            Arc::from(vec![self.storage_class().clone()]),
            self.storage_class().clone(),
            capabilities,
        );
        assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
            metadata,
            ExecutionContextIdentity::of::<SimEngine>(),
            self.ingress(),
        ))
    }

    /// The ingress contract: placement on this device for placement
    /// questions, simulated family in this device's domain for residency.
    fn ingress(&self) -> InputIngressContract {
        let storage = self.storage_class().clone();
        let placement_device = self.clone();
        let placement_storage = storage.clone();
        let signature_device = self.clone();
        let signature_storage = storage.clone();
        let input_device = self.clone();
        let input_storage = storage.clone();
        let resident_device = self.clone();
        InputIngressContract::new(
            InputPlacementContract::new(move |placement, candidate| {
                candidate == &placement_storage && placement_device.accepts_placement(placement)
            }),
            InputSignatureContract::new(move |placement, family, domain, candidate| {
                candidate == &signature_storage
                    && signature_device.accepts_placement(placement)
                    && family == Some(SIM_FAMILY)
                    && domain == Some(signature_device.allocation_domain())
            }),
            RuntimeInputContract::new(move |input: &TensorRead<'_>, candidate| {
                candidate == &input_storage && input_device.owns(input)
            }),
            ResidentOutputContract::new(move |input: &TensorRead<'_>, candidate| {
                candidate == &storage && resident_device.resident(input)
            }),
        )
    }
}
