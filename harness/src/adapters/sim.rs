//! The simulated-device adapter: [`SimDevice`] as a route endpoint, the
//! first plug-in of the [`DeviceEndpoint`] trait.

use std::any::Any;
use std::sync::Arc;

use tenferro_mock_devices::{
    Accounting, AllocationLedger, EngineRole, SIM_FAMILY, SimDevice, StorageCompletion,
    sim_storage_of, with_element,
};
use tenferro_runtime::{EngineId, EngineRegistration, ExecutionEngine, StorageClass};
use tenferro_tensor::{Tensor, TensorRead};

use crate::case::Filler;
use crate::stage::carve_tensor;
use crate::{
    Case, CompletionState, DeviceEndpoint, Endpoint, HarnessError, Layout, MemoryInUse,
    PlacementRule, Route, StorageRule,
};

impl DeviceEndpoint for SimDevice {
    fn name(&self) -> &str {
        SimDevice::name(self)
    }

    fn kind(&self) -> &str {
        "sim"
    }

    fn engine_id(&self) -> &EngineId {
        SimDevice::engine_id(self)
    }

    fn storage_class(&self) -> Result<StorageClass, HarnessError> {
        Ok(SimDevice::storage_class(self).clone())
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        SimDevice::registration(self, role).map_err(|source| {
            HarnessError::config(format!("registration of `{}`", self.name()), source)
        })
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(SimDevice::engine(self)))
    }

    fn placement_rule(&self) -> PlacementRule {
        PlacementRule::Device(self.device_id())
    }

    fn storage_rule(&self) -> StorageRule {
        StorageRule::Domain {
            family: SIM_FAMILY,
            domain: self.allocation_domain(),
        }
    }

    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        with_element!(case.dtype(), T => stage_sim::<T>(self, case, use_input),
            external => Err(HarnessError::InvalidCase { reason: format!("dtype {:?} is not a preset dtype", case.dtype()) }))
    }

    /// Simulated memory knows whether the copy into it has landed.
    fn completion(&self, tensor: &Tensor) -> CompletionState {
        let storage = with_element!(tensor.dtype(), T => sim_storage_of::<T>(tensor).map(|storage| storage.completion()),
            external => None);
        match storage {
            Some(StorageCompletion::Complete) => CompletionState::Complete,
            Some(StorageCompletion::Pending { device, copy }) => CompletionState::Pending {
                detail: format!("copy #{copy} on {device} had not completed"),
            },
            Some(StorageCompletion::Failed(error)) => CompletionState::Failed {
                detail: error.to_string(),
            },
            Some(_) => CompletionState::Unknown {
                reason: "the simulated storage reports a state this harness does not know".into(),
            },
            None => CompletionState::Unknown {
                reason: "the output is not simulated memory, so its completion cannot be observed"
                    .to_owned(),
            },
        }
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        // A device that only counts, as real devices do, shows no ledger.
        match self.accounting() {
            Accounting::CountsOnly => None,
            _ => Some(Arc::clone(self.ledger())),
        }
    }

    fn memory_in_use(&self) -> Option<MemoryInUse> {
        let (allocations, bytes) = SimDevice::memory_in_use(self);
        let count = |value: usize| u64::try_from(value).unwrap_or(u64::MAX);
        Some(MemoryInUse::allocations(count(allocations)).with_bytes(count(bytes)))
    }

    fn launches_in_own_domain(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn stage_sim<T: tenferro_mock_devices::Element + Filler>(
    device: &SimDevice,
    case: &Case,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    let stage = |source: tenferro_tensor::Error| HarnessError::Stage { source };
    match case.layout() {
        Layout::Owned => {
            let tensor = device
                .tensor(case.shape().to_vec(), case.typed_values::<T>())
                .map_err(stage)?;
            use_input(TensorRead::from_tensor(&tensor));
            Ok(())
        }
        Layout::View(spec) => {
            let tensor = device
                .tensor(spec.backing_shape.clone(), case.backing_values::<T>())
                .map_err(stage)?;
            carve_tensor::<T>(&tensor, spec, use_input)
        }
    }
}

impl Endpoint {
    /// An endpoint on a simulated device.
    pub fn sim(device: SimDevice) -> Self {
        Self::new(device)
    }
}

impl Route {
    /// Host (tenferro-cpu) to a fresh simulated device `sim0`.
    ///
    /// # Errors
    ///
    /// As [`Route::new`], or a device setup failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::SimDevice;
    /// use tenferro_transfer_harness::Route;
    ///
    /// let route = Route::host_to_sim().unwrap();
    /// assert_eq!(route.label(), "host->sim0");
    /// assert!(route.destination().downcast::<SimDevice>().is_some());
    /// ```
    pub fn host_to_sim() -> Result<Self, HarnessError> {
        Self::new(Endpoint::host("host")?, Endpoint::sim(SimDevice::new(0)?))
    }

    /// A fresh simulated device `sim0` to host (tenferro-cpu).
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_sim`].
    pub fn sim_to_host() -> Result<Self, HarnessError> {
        Self::new(Endpoint::sim(SimDevice::new(0)?), Endpoint::host("host")?)
    }

    /// Simulated device `sim0` to simulated device `sim1`.
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_sim`].
    pub fn sim_to_sim() -> Result<Self, HarnessError> {
        Self::new(
            Endpoint::sim(SimDevice::new(0)?),
            Endpoint::sim(SimDevice::new(1)?),
        )
    }
}
