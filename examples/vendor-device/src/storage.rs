//! The device's memory: one [`VendorStorage`] handle per tensor over an
//! allocation in the device's own backend family and allocation domain,
//! holding poison and refusing host reads while a copy into it is in
//! flight. Several handles may share one allocation (the engine's
//! metadata-only reshape makes one); the allocation is freed, and leaves
//! the device's accounting, when the last handle and the last copy into it
//! are gone.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

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
/// it is freed, on the thread that makes or frees it. Allocations are made
/// on the thread that asks for them; an allocation is freed where its last
/// handle drops, or on the copy engine's thread when a copy into it was
/// still queued then.
pub trait AllocationObserver: Send + Sync + 'static {
    /// Allocation `id` of `bytes` bytes was made.
    fn allocated(&self, id: u64, bytes: usize);
    /// Allocation `id` was freed.
    fn freed(&self, id: u64);
}

/// The memory accounting of one device: what it has in use, counted as
/// real devices count it, and an optional observer of each allocation.
#[derive(Default)]
pub(crate) struct Accounting {
    live: AtomicU64,
    bytes: AtomicU64,
    /// Allocations whose tensors are all dropped, freed once the copy
    /// still writing into them is done.
    deferred: AtomicU64,
    observer: RwLock<Option<Arc<dyn AllocationObserver>>>,
}

impl Accounting {
    pub(crate) fn live(&self) -> u64 {
        self.live.load(Ordering::SeqCst)
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }

    pub(crate) fn deferred(&self) -> u64 {
        self.deferred.load(Ordering::SeqCst)
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

    fn allocated(&self, id: u64, bytes: usize) {
        self.live.fetch_add(1, Ordering::SeqCst);
        self.bytes.fetch_add(bytes as u64, Ordering::SeqCst);
        if let Some(observer) = self.observer() {
            observer.allocated(id, bytes);
        }
    }

    fn freed(&self, id: u64, bytes: usize) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        self.bytes.fetch_sub(bytes as u64, Ordering::SeqCst);
        if let Some(observer) = self.observer() {
            observer.freed(id);
        }
    }
}

/// One allocation of device memory, shared by the tensors over it (one
/// [`Handle`]) and by a copy still writing into it; freed when the last of
/// them drops.
pub(crate) struct Allocation<T> {
    pub(crate) data: RwLock<Vec<T>>,
    state: Mutex<CopyState>,
    id: u64,
    bytes: usize,
    /// Its tensors were all dropped while a copy still held it.
    deferred: AtomicBool,
    accounting: Arc<Accounting>,
    /// Whether the host may map it; the device's own kernels always read
    /// it (the device's switch, [`crate::VendorDevice::set_opaque_memory`]).
    opaque: Arc<AtomicBool>,
}

impl<T> Allocation<T> {
    pub(crate) fn state(&self) -> CopyState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_state(&self, state: CopyState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }
}

impl<T> Drop for Allocation<T> {
    fn drop(&mut self) {
        if self.deferred.load(Ordering::SeqCst) {
            self.accounting.deferred.fetch_sub(1, Ordering::SeqCst);
        }
        self.accounting.freed(self.id, self.bytes);
    }
}

/// What the tensors over one allocation share. When the last of them
/// drops, the allocation is freed at once, or, while a copy still writes
/// into it, once that copy is done (a deferred free).
struct Handle<T> {
    allocation: Arc<Allocation<T>>,
}

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        // Only copies hold the allocation besides its handle.
        if Arc::strong_count(&self.allocation) > 1 {
            self.allocation.deferred.store(true, Ordering::SeqCst);
            self.allocation
                .accounting
                .deferred
                .fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A tensor's handle to one allocation of device memory.
pub struct VendorStorage<T> {
    handle: Arc<Handle<T>>,
    len: usize,
    domain: AllocationDomainId,
}

impl<T> VendorStorage<T> {
    /// Allocate `data` in `domain`, accounted in `accounting`; the host
    /// cannot map it while `opaque` is set.
    pub(crate) fn new(
        data: Vec<T>,
        domain: AllocationDomainId,
        accounting: Arc<Accounting>,
        opaque: Arc<AtomicBool>,
    ) -> Self {
        let len = data.len();
        let bytes = len * std::mem::size_of::<T>();
        let id = NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed);
        accounting.allocated(id, bytes);
        Self {
            handle: Arc::new(Handle {
                allocation: Arc::new(Allocation {
                    data: RwLock::new(data),
                    state: Mutex::new(CopyState::Landed),
                    id,
                    bytes,
                    deferred: AtomicBool::new(false),
                    accounting,
                    opaque,
                }),
            }),
            len,
            domain,
        }
    }

    pub(crate) fn allocation(&self) -> &Arc<Allocation<T>> {
        &self.handle.allocation
    }

    /// Another handle to the same allocation: what a metadata-only reshape
    /// hands out. The allocation stays in use while either handle lives.
    pub fn alias(&self) -> Self {
        Self {
            handle: Arc::clone(&self.handle),
            len: self.len,
            domain: self.domain,
        }
    }

    /// How many tensors' handles hold the allocation (this one included).
    pub(crate) fn handles(&self) -> usize {
        Arc::strong_count(&self.handle)
    }

    /// A handle that does not keep the allocation alive.
    pub(crate) fn downgrade(&self) -> WeakVendorStorage<T> {
        WeakVendorStorage {
            handle: Arc::downgrade(&self.handle),
            len: self.len,
            domain: self.domain,
        }
    }

    /// The device's id of this allocation (the same for every handle).
    pub fn id(&self) -> u64 {
        self.allocation().id
    }

    /// The allocation domain this memory belongs to.
    pub fn domain(&self) -> AllocationDomainId {
        self.domain
    }

    /// Whether the copy into this allocation has landed.
    pub fn state(&self) -> CopyState {
        self.allocation().state()
    }

    /// The allocation as the device's own kernels read it, once every copy
    /// into it has landed (opaque or not).
    ///
    /// # Errors
    ///
    /// [`HostAccessError::GpuAccessInProgress`] while a copy into it is in
    /// flight.
    pub fn read_on_device(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        match self.allocation().state() {
            CopyState::Landed => Ok(HostReadGuard::new(
                self.allocation()
                    .data
                    .read()
                    .unwrap_or_else(PoisonError::into_inner),
            )),
            CopyState::InFlight { .. } => Err(HostAccessError::GpuAccessInProgress),
        }
    }

    /// Overwrite every element of the allocation with `value`, whatever
    /// its other handles hold.
    pub(crate) fn fill(&self, value: T)
    where
        T: Clone,
    {
        self.allocation()
            .data
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .fill(value);
    }
}

/// A weak handle to an allocation's tensors ([`VendorStorage::downgrade`]):
/// it upgrades while one of them is alive.
pub(crate) struct WeakVendorStorage<T> {
    handle: Weak<Handle<T>>,
    len: usize,
    domain: AllocationDomainId,
}

impl<T> WeakVendorStorage<T> {
    /// A handle to the allocation, if someone still holds it.
    pub(crate) fn upgrade(&self) -> Option<VendorStorage<T>> {
        Some(VendorStorage {
            handle: self.handle.upgrade()?,
            len: self.len,
            domain: self.domain,
        })
    }
}

impl<T> fmt::Debug for VendorStorage<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("VendorStorage")
            .field("id", &self.id())
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
        Some(AllocationId::from_backend_id(self.id()))
    }

    /// Device memory is host-visible once every copy into it has landed;
    /// while one is in flight the read is refused, never served poison. On
    /// a device whose memory is opaque the host cannot map it at all, as
    /// with most GPUs' device memory.
    fn map_read(&self) -> Result<tenferro_tensor::HostReadGuard<'_, T>, HostAccessError> {
        if self.allocation().opaque.load(Ordering::SeqCst) {
            return Err(HostAccessError::Unsupported {
                backend: VENDOR_FAMILY,
            });
        }
        self.read_on_device()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
