//! The simulated-device adapter: [`SimDevice`] as a route endpoint, the
//! first plug-in of the [`DeviceEndpoint`] trait.

use std::sync::Arc;
use std::time::Duration;

use tenferro_runtime::{EngineRegistration, ExecutionEngine};
use tenferro_tensor::{Tensor, TensorRead};
use tenferro_transfer_harness::{
    AllocationLedger, Case, CompletionState, DeviceDescription, DeviceEndpoint, EngineRole,
    HarnessError, MemoryInUse, PlacementRule, StorageRule, read_compact, stage_via_host,
    with_element,
};

use crate::{Accounting, SIM_FAMILY, SimDevice, StorageCompletion, sim_storage_of};

impl DeviceEndpoint for SimDevice {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            SimDevice::name(self),
            "sim",
            SimDevice::engine_id(self).clone(),
            SimDevice::storage_class(self).clone(),
            PlacementRule::Device(self.device_id()),
            StorageRule::domain(SIM_FAMILY, self.allocation_domain()),
        )
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        SimDevice::registration(self, role).map_err(|source| {
            HarnessError::adapter(format!("registration of `{}`", self.name()), source)
        })
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(SimDevice::engine(self)))
    }

    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        stage_via_host(case, |host| upload_values(self, &host), use_input)
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

    /// Stalls in [`CompletionMode::Latency`](crate::CompletionMode::Latency) only.
    fn stall_queues(&self, pause: Duration) -> bool {
        self.stall(pause)
    }
}

/// A host tensor's values copied into `device`'s memory: how a case's input
/// (or a view's backing) is staged on a simulated device.
pub(crate) fn upload_values(device: &SimDevice, host: &Tensor) -> Result<Tensor, HarnessError> {
    let read = TensorRead::from_tensor(host);
    with_element!(read.dtype(), T => {
        let values = read_compact::<T>(&read).map_err(|source| HarnessError::Stage { source })?;
        device
            .tensor(read.shape().to_vec(), values)
            .map_err(|source| HarnessError::Stage { source })
    }, external => Err(HarnessError::InvalidCase {
        reason: format!("dtype {:?} is not a preset dtype", read.dtype()),
    }))
}
