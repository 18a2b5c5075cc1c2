//! `SimDevice`: a simulated accelerator with its own identities and memory.

use std::sync::Arc;

use tenferro_runtime::{
    EngineId, HardwareClassId, ProviderDeviceIdentity, ProviderId, RuntimeConfigError,
    StorageClass, TransferEndpoint,
};
use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, MemoryKind, Placement, StorageBuffer, Tensor,
    TensorRead, TypedTensor,
};

use crate::{AllocationLedger, Element, MockError, SimStorage};

/// Backend family of every simulated device's storage.
pub const SIM_FAMILY: &str = "tenferro-mock.sim";
/// Provider id shared by the simulated devices.
pub const SIM_PROVIDER_ID: &str = "tenferro-mock.sim";
/// Hardware class shared by the simulated devices.
pub const SIM_HARDWARE_CLASS: &str = "tenferro-mock.sim.v1";
/// Device kind of a simulated device's placement.
pub const SIM_DEVICE_KIND: &str = "tenferro-mock-sim";

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

    /// Live-allocation accounting of this device.
    pub fn ledger(&self) -> &Arc<AllocationLedger> {
        &self.identity.ledger
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

    /// A compact column-major tensor in this device's memory.
    ///
    /// # Errors
    ///
    /// Returns a validation error when `data.len()` differs from the shape's
    /// element count.
    pub fn tensor<T: Element>(
        &self,
        shape: Vec<usize>,
        data: Vec<T>,
    ) -> tenferro_tensor::Result<Tensor> {
        self.tensor_with(shape, self.storage(data), self.placement())
    }

    /// Storage in this device's memory, counted by its ledger.
    pub fn storage<T: Element>(&self, data: Vec<T>) -> SimStorage<T> {
        SimStorage::new(
            data,
            SIM_FAMILY,
            self.allocation_domain(),
            Arc::clone(self.ledger()),
        )
    }

    /// A tensor over explicit storage and placement; broken providers use it
    /// to forge metadata.
    ///
    /// # Errors
    ///
    /// Returns a validation error when the storage length differs from the
    /// shape's element count.
    pub fn tensor_with<T: Element>(
        &self,
        shape: Vec<usize>,
        storage: SimStorage<T>,
        placement: Placement,
    ) -> tenferro_tensor::Result<Tensor> {
        TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(storage)),
            placement,
        )
        .map(Tensor::from_typed)
    }
}
