//! The device's memory: one [`VendorStorage`] per allocation, in the
//! device's own backend family and allocation domain, holding poison and
//! refusing host reads while a copy into it is in flight.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
};

/// Backend family of the device's storage.
pub const VENDOR_FAMILY: &str = "example-vendor.npu";

static NEXT_ALLOCATION: AtomicU64 = AtomicU64::new(1);

/// Whether the copy into an allocation has landed, as the device reports it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum CopyState {
    /// No copy into it is in flight: its memory holds final values.
    Landed,
    /// Copy number `copy` into it is still queued or running: its memory
    /// holds poison, and `map_read` refuses.
    InFlight {
        /// The copy's number on its device.
        copy: u64,
    },
}

/// Told of every allocation of a device's memory when it is made and when
/// it is freed, on the thread that makes or frees it (allocations are made
/// on the caller's thread, never on the copy engine's).
pub trait AllocationObserver: Send + Sync + 'static {
    /// Allocation `id` of `bytes` bytes was made.
    fn allocated(&self, id: u64, bytes: usize);
    /// Allocation `id` was freed.
    fn freed(&self, id: u64);
}

/// Live-allocation accounting of one device.
#[derive(Default)]
pub(crate) struct Accounting {
    live: AtomicUsize,
    observer: RwLock<Option<Arc<dyn AllocationObserver>>>,
}

impl Accounting {
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    pub(crate) fn observe(&self, observer: Arc<dyn AllocationObserver>) {
        *self
            .observer
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(observer);
    }

    fn observer(&self) -> Option<Arc<dyn AllocationObserver>> {
        self.observer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The cells of one allocation, shared with the copy that fills them.
pub(crate) struct Cells<T> {
    pub(crate) data: RwLock<Vec<T>>,
    pub(crate) state: Mutex<CopyState>,
}

impl<T> Cells<T> {
    pub(crate) fn state(&self) -> CopyState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_state(&self, state: CopyState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }
}

/// One allocation of device memory.
pub struct VendorStorage<T> {
    cells: Arc<Cells<T>>,
    len: usize,
    domain: AllocationDomainId,
    id: u64,
    accounting: Arc<Accounting>,
}

impl<T> VendorStorage<T> {
    /// Allocate `data` in `domain`, accounted in `accounting`.
    pub(crate) fn new(
        data: Vec<T>,
        domain: AllocationDomainId,
        accounting: Arc<Accounting>,
    ) -> Self {
        let len = data.len();
        let id = NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed);
        accounting.live.fetch_add(1, Ordering::SeqCst);
        if let Some(observer) = accounting.observer() {
            observer.allocated(id, len * std::mem::size_of::<T>());
        }
        Self {
            cells: Arc::new(Cells {
                data: RwLock::new(data),
                state: Mutex::new(CopyState::Landed),
            }),
            len,
            domain,
            id,
            accounting,
        }
    }

    pub(crate) fn cells(&self) -> &Arc<Cells<T>> {
        &self.cells
    }

    /// The device's id of this allocation.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The allocation domain this memory belongs to.
    pub fn domain(&self) -> AllocationDomainId {
        self.domain
    }

    /// Whether the copy into this allocation has landed.
    pub fn state(&self) -> CopyState {
        self.cells.state()
    }
}

impl<T> Drop for VendorStorage<T> {
    fn drop(&mut self) {
        self.accounting.live.fetch_sub(1, Ordering::SeqCst);
        if let Some(observer) = self.accounting.observer() {
            observer.freed(self.id);
        }
    }
}

impl<T> fmt::Debug for VendorStorage<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("VendorStorage")
            .field("id", &self.id)
            .field("len", &self.len)
            .field("domain", &self.domain)
            .field("state", &self.state())
            .finish()
    }
}

impl<T: Clone + Send + Sync + 'static> BackendStorage<T> for VendorStorage<T> {
    fn backend_family(&self) -> &'static str {
        VENDOR_FAMILY
    }

    fn len(&self) -> usize {
        self.len
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        Some(self.domain)
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        Some(AllocationId::from_backend_id(self.id))
    }

    /// Device memory is host-visible once every copy into it has landed;
    /// while one is in flight the read is refused, never served poison.
    fn map_read(&self) -> Result<tenferro_tensor::HostReadGuard<'_, T>, HostAccessError> {
        match self.cells.state() {
            CopyState::Landed => Ok(HostReadGuard::new(
                self.cells
                    .data
                    .read()
                    .unwrap_or_else(PoisonError::into_inner),
            )),
            CopyState::InFlight { .. } => Err(HostAccessError::GpuAccessInProgress),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
