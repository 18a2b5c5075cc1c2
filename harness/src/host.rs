//! Host memory with its own allocation domain, and the real host-to-host
//! provider that copies into it.

use std::sync::Arc;

use tenferro_mock_devices::{AllocationLedger, Element, SimStorage, read_compact, with_element};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{
    AllocationDomainId, DType, Error, MemoryKind, Placement, SharedTensorAllocationDomain,
    StorageBuffer, Tensor, TypedTensor,
};

/// Backend family of [`HostDomain`] storage.
pub const HOST_DOMAIN_FAMILY: &str = "tenferro-transfer-harness.host";

/// Host memory that belongs to one allocation domain, so that two
/// tenferro-cpu engines on one machine are still two places. Its tensors are
/// placed as `MemoryKind::Managed`, which is how tenferro-cpu accepts and
/// runs on memory of an engine's own domain.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::HostDomain;
/// use tenferro_tensor::{DType, SharedTensorAllocationDomain, TensorRead};
///
/// let domain = HostDomain::new();
/// let tensor = domain.allocate(DType::I32, &[3]).unwrap();
/// assert_eq!(TensorRead::from_tensor(&tensor).allocation_domain(), Some(domain.id()));
/// assert_eq!(domain.ledger().live(), 1);
/// ```
#[derive(Debug)]
pub struct HostDomain {
    id: AllocationDomainId,
    ledger: Arc<AllocationLedger>,
}

impl Default for HostDomain {
    fn default() -> Self {
        Self::new()
    }
}

impl HostDomain {
    /// A fresh domain.
    pub fn new() -> Self {
        Self {
            id: AllocationDomainId::fresh(),
            ledger: Arc::new(AllocationLedger::default()),
        }
    }

    /// The placement of this domain's tensors: `Managed`, the memory kind
    /// under which tenferro-cpu runs on an engine's own allocation domain.
    pub fn placement() -> Placement {
        Placement {
            memory_kind: MemoryKind::Managed,
            device: None,
            cpu_affinity: None,
        }
    }

    /// Live-allocation accounting of this domain.
    pub fn ledger(&self) -> &Arc<AllocationLedger> {
        &self.ledger
    }

    /// A compact tensor holding `data` in this domain.
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
        let storage = SimStorage::new(data, HOST_DOMAIN_FAMILY, self.id, Arc::clone(&self.ledger));
        TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(storage)),
            Self::placement(),
        )
        .map(Tensor::from_typed)
    }
}

impl SharedTensorAllocationDomain for HostDomain {
    fn id(&self) -> AllocationDomainId {
        self.id
    }

    fn allocate(&self, dtype: DType, shape: &[usize]) -> tenferro_tensor::Result<Tensor> {
        let count = tenferro_tensor::validate::checked_shape_product(
            "HostDomain::allocate",
            "shape",
            shape,
        )?;
        with_element!(dtype, T => {
            let zero = T::from_bytes(&[0_u8; 16][..T::WIDTH]).pop().ok_or_else(|| {
                Error::runtime_state("HostDomain::allocate", "zero element image")
            })?;
            self.tensor(shape.to_vec(), vec![zero; count])
        }, external => Err(Error::unsupported("HostDomain::allocate", format!("dtype {dtype:?} is not a preset dtype"))))
    }
}

/// The real host-to-host provider: copies any host-mappable tensor or
/// strided view (plain host, or a [`HostDomain`]'s) into plain host memory,
/// which is what a tenferro-cpu engine runs on.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_harness::{Case, Endpoint, HostProvider, Oracle, Rig, Route};
///
/// let route = Route::host_to_host().unwrap();
/// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
/// let case = Case::from_values(vec![2, 2], vec![1_i64, i64::MIN, i64::MAX, -1]).unwrap();
/// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
/// ```
#[derive(Debug, Default)]
pub struct HostProvider;

impl HostProvider {
    /// The provider.
    pub fn new() -> Self {
        Self
    }
}

impl TransferProvider for HostProvider {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "HostProvider::transfer_blocking";
        let input = request.input();
        if input.placement().memory_kind == MemoryKind::Device {
            return Err(Error::runtime_state(OP, "input is device memory, not host memory").into());
        }
        with_element!(input.dtype(), T => {
            Ok(Tensor::from_vec_col_major(input.shape().to_vec(), read_compact::<T>(input)?)?)
        }, external => Err(Error::unsupported(OP, format!("dtype {:?} is not a preset dtype", input.dtype())).into()))
    }
}
