//! Host memory with its own allocation domain: a place distinct from other
//! host engines on the same machine, whose allocations are accounted. The
//! harness's host adapter runs a tenferro-cpu engine on it
//! ([`tenferro_transfer_harness::HostMemoryDomain`]), which is how the
//! managed host route (`Route::managed_to_host`) checks `no-leak` on host
//! memory.

use std::sync::Arc;

use tenferro_tensor::{
    AllocationDomainId, DType, Error, Placement, SharedTensorAllocationDomain, StorageBuffer,
    Tensor, TypedTensor,
};
use tenferro_tensor::{MemoryKind, TensorRead};
use tenferro_transfer_harness::{
    AllocationLedger, Case, Element, HarnessError, HostMemoryDomain, stage_via_host, with_element,
};

use crate::SimStorage;

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
/// use tenferro_mock_devices::HostDomain;
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

impl HostMemoryDomain for HostDomain {
    fn family(&self) -> &'static str {
        HOST_DOMAIN_FAMILY
    }

    fn ledger(&self) -> Option<Arc<AllocationLedger>> {
        Some(Arc::clone(&self.ledger))
    }

    /// The case's values copied into this domain (a view is then carved
    /// from its backing, as tenferro carves one).
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        stage_via_host(
            case,
            |host| {
                let read = TensorRead::from_tensor(&host);
                with_element!(read.dtype(), T => {
                    let values = tenferro_transfer_harness::read_compact::<T>(&read)
                        .map_err(|source| HarnessError::Stage { source })?;
                    self.tensor(read.shape().to_vec(), values)
                        .map_err(|source| HarnessError::Stage { source })
                }, external => Err(HarnessError::InvalidCase {
                    reason: format!("dtype {:?} is not a preset dtype", read.dtype()),
                }))
            },
            use_input,
        )
    }
}
