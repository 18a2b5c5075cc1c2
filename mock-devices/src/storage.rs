//! `SimStorage`: the memory of a simulated device, which a pending copy
//! poisons and locks until the copy completes.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
    HostWriteGuard,
};

use crate::stream::CopyOp;
use crate::{AllocationLedger, DeviceError};

static NEXT_ALLOCATION: AtomicU64 = AtomicU64::new(1);

/// Whether the last copy into a storage has completed.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum StorageCompletion {
    /// Every copy into it has completed: it is readable.
    Complete,
    /// A copy into it is still in flight: it holds poison and refuses reads.
    Pending {
        /// The device doing the copy.
        device: String,
        /// The copy's number on that device.
        copy: u64,
    },
    /// The copy into it failed: it holds a partial image and refuses reads.
    Failed(DeviceError),
}

pub(crate) enum Status {
    Ready,
    Pending(Weak<CopyOp>),
    Failed(DeviceError),
}

/// The shared cells of one allocation: a copy in flight writes them later.
pub(crate) struct Memory<T> {
    pub(crate) data: RwLock<Vec<T>>,
    pub(crate) status: Mutex<Status>,
}

impl<T> Memory<T> {
    pub(crate) fn new(data: Vec<T>) -> Arc<Self> {
        Arc::new(Self {
            data: RwLock::new(data),
            status: Mutex::new(Status::Ready),
        })
    }

    pub(crate) fn set_status(&self, status: Status) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// The completion state, first letting a due copy complete (a copy in
    /// latency mode completes when it is observed after its due time).
    pub(crate) fn completion(&self) -> StorageCompletion {
        let pending = match &*self.status.lock().unwrap_or_else(PoisonError::into_inner) {
            Status::Ready => return StorageCompletion::Complete,
            Status::Failed(error) => return StorageCompletion::Failed(error.clone()),
            Status::Pending(op) => op.clone(),
        };
        match pending.upgrade() {
            Some(op) => {
                op.poll();
                match &*self.status.lock().unwrap_or_else(PoisonError::into_inner) {
                    Status::Ready => StorageCompletion::Complete,
                    Status::Failed(error) => StorageCompletion::Failed(error.clone()),
                    Status::Pending(_) => StorageCompletion::Pending {
                        device: op.device().to_owned(),
                        copy: op.number(),
                    },
                }
            }
            // Nobody can complete the copy any more: it will never land.
            None => StorageCompletion::Pending {
                device: "unknown".to_owned(),
                copy: 0,
            },
        }
    }
}

/// Backend storage of a simulated device: host memory standing in for device
/// memory, readable through `map_read` once every copy into it completed.
///
/// Its backend family and allocation domain are fields, not constants, so a
/// deliberately broken provider can forge them. Every allocation is listed
/// in its ledger until it drops.
pub struct SimStorage<T> {
    memory: Arc<Memory<T>>,
    len: usize,
    family: &'static str,
    domain: AllocationDomainId,
    allocation: AllocationId,
    id: u64,
    ledger: Arc<AllocationLedger>,
    device: Option<crate::SimDevice>,
}

impl<T> SimStorage<T> {
    /// Wrap `data` as one allocation in `domain`, listed in `ledger`.
    pub fn new(
        data: Vec<T>,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
    ) -> Self {
        Self::over(Memory::new(data), family, domain, ledger, None)
    }

    pub(crate) fn over(
        memory: Arc<Memory<T>>,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
        device: Option<crate::SimDevice>,
    ) -> Self {
        let len = memory
            .data
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        Self::over_len(memory, len, family, domain, ledger, device)
    }

    /// Storage of `len` elements over `memory`, which may hold nothing yet:
    /// the memory a queued copy fills when it lands.
    pub(crate) fn over_len(
        memory: Arc<Memory<T>>,
        len: usize,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
        device: Option<crate::SimDevice>,
    ) -> Self {
        let id = NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed);
        ledger.open(id, domain, len * std::mem::size_of::<T>());
        Self {
            memory,
            len,
            family,
            domain,
            allocation: AllocationId::from_backend_id(id),
            id,
            ledger,
            device,
        }
    }

    /// The backend family this storage reports.
    pub fn family(&self) -> &'static str {
        self.family
    }

    /// The allocation domain this storage reports.
    pub fn domain(&self) -> AllocationDomainId {
        self.domain
    }

    /// The ledger listing this allocation.
    pub fn ledger(&self) -> &Arc<AllocationLedger> {
        &self.ledger
    }

    /// The ledger's id of this allocation.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The simulated device whose memory this is, if it is a device's.
    pub fn device(&self) -> Option<&crate::SimDevice> {
        self.device.as_ref()
    }

    /// New storage holding `data`, with this storage's ledger and device and
    /// the given family and domain (broken providers forge them this way).
    pub fn rehome<U>(
        &self,
        data: Vec<U>,
        family: &'static str,
        domain: AllocationDomainId,
    ) -> SimStorage<U> {
        SimStorage::over(
            Memory::new(data),
            family,
            domain,
            Arc::clone(&self.ledger),
            self.device.clone(),
        )
    }

    /// New storage of another element type with this storage's family,
    /// domain, ledger and device.
    pub fn sibling<U>(&self, data: Vec<U>) -> SimStorage<U> {
        self.rehome(data, self.family, self.domain)
    }

    /// Whether every copy into this storage has completed.
    pub fn completion(&self) -> StorageCompletion {
        self.memory.completion()
    }
}

impl<T> Drop for SimStorage<T> {
    fn drop(&mut self) {
        self.ledger.close(self.id);
    }
}

impl<T> fmt::Debug for SimStorage<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SimStorage")
            .field("len", &self.len)
            .field("family", &self.family)
            .field("domain", &self.domain)
            .field("allocation", &self.allocation)
            .finish_non_exhaustive()
    }
}

fn refusal(completion: StorageCompletion) -> HostAccessError {
    match completion {
        StorageCompletion::Failed(error) => HostAccessError::BackendFailure {
            message: format!("the copy into this allocation failed: {error}"),
        },
        // Reading memory that a copy is still writing is the bug the
        // `completion` rule exists for; the device refuses it loudly.
        _ => HostAccessError::GpuAccessInProgress,
    }
}

impl<T: Clone + Send + Sync + 'static> BackendStorage<T> for SimStorage<T> {
    fn backend_family(&self) -> &'static str {
        self.family
    }

    fn len(&self) -> usize {
        self.len
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        Some(self.domain)
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        Some(self.allocation)
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        match self.memory.completion() {
            StorageCompletion::Complete => Ok(HostReadGuard::new(
                self.memory
                    .data
                    .read()
                    .unwrap_or_else(PoisonError::into_inner),
            )),
            other => Err(refusal(other)),
        }
    }

    fn map_write(&mut self) -> Result<HostWriteGuard<'_, T>, HostAccessError> {
        let completion = self.memory.completion();
        if completion != StorageCompletion::Complete {
            return Err(refusal(completion));
        }
        let len = self.len;
        let memory = &self.memory;
        Ok(HostWriteGuard::new(len, move |source: &[T]| {
            let mut data = memory.data.write().unwrap_or_else(PoisonError::into_inner);
            if source.len() != data.len() {
                return Err(HostAccessError::LengthMismatch {
                    expected: data.len(),
                    actual: source.len(),
                });
            }
            data.clone_from_slice(source);
            Ok(())
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
