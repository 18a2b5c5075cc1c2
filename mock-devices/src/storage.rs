//! `SimStorage`: the memory of a simulated device.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
    HostWriteGuard,
};

/// Counts the live allocations of one simulated device, so that a leak is a
/// number a test can read rather than a guess.
#[derive(Debug, Default)]
pub struct AllocationLedger {
    live: AtomicUsize,
    live_bytes: AtomicUsize,
    total: AtomicUsize,
}

impl AllocationLedger {
    /// Allocations made and not yet dropped.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Bytes held by live allocations.
    pub fn live_bytes(&self) -> usize {
        self.live_bytes.load(Ordering::SeqCst)
    }

    /// Allocations ever made.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    fn open(&self, bytes: usize) {
        self.live.fetch_add(1, Ordering::SeqCst);
        self.live_bytes.fetch_add(bytes, Ordering::SeqCst);
        self.total.fetch_add(1, Ordering::SeqCst);
    }

    fn close(&self, bytes: usize) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        self.live_bytes.fetch_sub(bytes, Ordering::SeqCst);
    }
}

static NEXT_ALLOCATION: AtomicU64 = AtomicU64::new(1);

/// Backend storage of a simulated device: host memory standing in for device
/// memory, readable through `map_read` so the harness can check values.
///
/// Its backend family and allocation domain are fields, not constants, so a
/// deliberately broken provider can forge them.
pub struct SimStorage<T> {
    data: Vec<T>,
    family: &'static str,
    domain: AllocationDomainId,
    allocation: AllocationId,
    ledger: Arc<AllocationLedger>,
}

impl<T> SimStorage<T> {
    /// Wrap `data` as one allocation in `domain`, counted by `ledger`.
    pub fn new(
        data: Vec<T>,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
    ) -> Self {
        ledger.open(std::mem::size_of_val(data.as_slice()));
        Self {
            data,
            family,
            domain,
            allocation: AllocationId::from_backend_id(
                NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed),
            ),
            ledger,
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

    /// The ledger counting this allocation.
    pub fn ledger(&self) -> &Arc<AllocationLedger> {
        &self.ledger
    }

    /// New storage of another element type with this storage's family,
    /// domain and ledger.
    pub fn sibling<U>(&self, data: Vec<U>) -> SimStorage<U> {
        SimStorage::new(data, self.family, self.domain, Arc::clone(&self.ledger))
    }

    /// The stored elements.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The stored elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T> Drop for SimStorage<T> {
    fn drop(&mut self) {
        self.ledger
            .close(std::mem::size_of_val(self.data.as_slice()));
    }
}

impl<T> fmt::Debug for SimStorage<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SimStorage")
            .field("len", &self.data.len())
            .field("family", &self.family)
            .field("domain", &self.domain)
            .field("allocation", &self.allocation)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + Sync + 'static> BackendStorage<T> for SimStorage<T> {
    fn backend_family(&self) -> &'static str {
        self.family
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        Some(self.domain)
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        Some(self.allocation)
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        Ok(HostReadGuard::new(&self.data))
    }

    fn map_write(&mut self) -> Result<HostWriteGuard<'_, T>, HostAccessError> {
        let len = self.data.len();
        let data = &mut self.data;
        Ok(HostWriteGuard::new(len, move |source: &[T]| {
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
