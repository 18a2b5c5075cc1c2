//! `SimStorage`: the memory of a simulated device, which a pending copy
//! poisons and locks until the copy completes, and the `SimDevice` methods
//! that allocate it. A storage keeps the device it belongs to, so that a
//! provider holding only a tensor can queue on that device again (the
//! broken provider that drops its copy's token does).
//!
//! An allocation may have several handles ([`SimStorage::alias`]): its
//! ledger entry is shared by them and closes when the last one drops.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
    HostWriteGuard, Placement, StorageBuffer, Tensor, TypedTensor,
};

use crate::copy_state::{Memory, StorageCompletion};
use crate::device::SIM_FAMILY;
use crate::{AllocationLedger, DeviceError, Element, SimDevice};

static NEXT_ALLOCATION: AtomicU64 = AtomicU64::new(1);

/// One allocation's entry in its ledger, shared by every handle to the
/// allocation: it is opened when the allocation is made and closed when
/// the last handle drops.
#[derive(Debug)]
struct Registration {
    id: u64,
    ledger: Arc<AllocationLedger>,
}

impl Registration {
    /// Open allocation `id` of `bytes` in `domain`, on the calling thread.
    fn open(
        id: u64,
        domain: AllocationDomainId,
        bytes: usize,
        ledger: Arc<AllocationLedger>,
    ) -> Arc<Self> {
        ledger.open(id, domain, bytes);
        Arc::new(Self { id, ledger })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.ledger.close(self.id);
    }
}

/// Backend storage of a simulated device: host memory standing in for device
/// memory, readable through `map_read` once every copy into it completed.
///
/// Its backend family and allocation domain are fields, not constants, so a
/// deliberately broken provider can forge them. Every allocation is listed
/// in its ledger, once, until its last handle ([`Self::alias`]) drops.
pub struct SimStorage<T> {
    memory: Arc<Memory<T>>,
    len: usize,
    family: &'static str,
    domain: AllocationDomainId,
    allocation: AllocationId,
    registration: Arc<Registration>,
    device: Option<SimDevice>,
}

/// A handle to an allocation that does not keep it alive: it gives a
/// [`SimStorage`] back only while some other handle still holds the
/// allocation (a pool that remembers its last allocation does this).
pub(crate) struct WeakSimStorage<T> {
    memory: Weak<Memory<T>>,
    len: usize,
    family: &'static str,
    domain: AllocationDomainId,
    allocation: AllocationId,
    registration: Weak<Registration>,
    device: Option<SimDevice>,
}

impl<T> WeakSimStorage<T> {
    /// Whether some handle still holds the allocation.
    pub(crate) fn is_alive(&self) -> bool {
        self.registration.strong_count() > 0
    }

    /// Another handle to the allocation, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<SimStorage<T>> {
        Some(SimStorage {
            registration: self.registration.upgrade()?,
            memory: self.memory.upgrade()?,
            len: self.len,
            family: self.family,
            domain: self.domain,
            allocation: self.allocation,
            device: self.device.clone(),
        })
    }
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

    fn over(
        memory: Arc<Memory<T>>,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
        device: Option<SimDevice>,
    ) -> Self {
        let len = memory.len();
        Self::over_len(memory, len, family, domain, ledger, device)
    }

    /// Storage of `len` elements over `memory`, which may hold nothing yet:
    /// the memory a queued copy fills when it lands.
    fn over_len(
        memory: Arc<Memory<T>>,
        len: usize,
        family: &'static str,
        domain: AllocationDomainId,
        ledger: Arc<AllocationLedger>,
        device: Option<SimDevice>,
    ) -> Self {
        let id = NEXT_ALLOCATION.fetch_add(1, Ordering::Relaxed);
        let registration = Registration::open(id, domain, len * std::mem::size_of::<T>(), ledger);
        Self {
            memory,
            len,
            family,
            domain,
            allocation: AllocationId::from_backend_id(id),
            registration,
            device,
        }
    }

    /// A second handle to this same allocation: the same memory, ledger
    /// entry, [`AllocationId`], family, domain and device. Writes through
    /// one handle are seen through every other, and the ledger lists the
    /// allocation once and closes it only when the last handle drops.
    ///
    /// This is what a device's metadata-only reshape returns (a new tensor
    /// over the same memory), and what a refcounted allocation hands out.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::SimDevice;
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// let storage = device.storage(vec![1_i32, 2, 3]);
    /// let alias = storage.alias();
    /// assert_eq!(alias.id(), storage.id());
    /// assert_eq!(device.ledger().live(), 1);
    /// drop(storage);
    /// // The alias still holds the allocation.
    /// assert_eq!(device.ledger().live(), 1);
    /// drop(alias);
    /// assert_eq!(device.ledger().live(), 0);
    /// ```
    pub fn alias(&self) -> SimStorage<T> {
        Self {
            memory: Arc::clone(&self.memory),
            len: self.len,
            family: self.family,
            domain: self.domain,
            allocation: self.allocation,
            registration: Arc::clone(&self.registration),
            device: self.device.clone(),
        }
    }

    /// Its shared cells, for a copy queued into it.
    pub(crate) fn memory(&self) -> &Arc<Memory<T>> {
        &self.memory
    }

    /// A handle that does not keep the allocation alive.
    pub(crate) fn downgrade(&self) -> WeakSimStorage<T> {
        WeakSimStorage {
            memory: Arc::downgrade(&self.memory),
            len: self.len,
            family: self.family,
            domain: self.domain,
            allocation: self.allocation,
            registration: Arc::downgrade(&self.registration),
            device: self.device.clone(),
        }
    }

    /// How many handles hold the allocation ([`Self::alias`]): one where
    /// only this handle does, as in a caching allocator's block that no
    /// tensor holds any more.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.registration)
    }

    /// Whether `other` is a handle to the same allocation as this one.
    pub fn same_allocation(&self, other: &SimStorage<T>) -> bool {
        Arc::ptr_eq(&self.registration, &other.registration)
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
        &self.registration.ledger
    }

    /// The ledger's id of this allocation (shared by its aliases).
    pub fn id(&self) -> u64 {
        self.registration.id
    }

    /// The simulated device whose memory this is, if it is a device's.
    pub fn device(&self) -> Option<&SimDevice> {
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
            Arc::clone(self.ledger()),
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

    /// Overwrite every element of the allocation, whatever a reader holds:
    /// each becomes the device's poison, or zero where it already held the
    /// poison, so every element changes. The fault that writes into its
    /// input does this; nothing correct does.
    pub(crate) fn scribble(&self)
    where
        T: Element,
    {
        let mut data = self.memory.write();
        let mut image = Vec::new();
        T::extend_bytes(&data, &mut image);
        let mut poison = Vec::new();
        T::extend_bytes(&[T::POISON], &mut poison);
        for element in image.chunks_exact_mut(T::WIDTH) {
            if element == poison.as_slice() {
                element.fill(0);
            } else {
                element.copy_from_slice(&poison);
            }
        }
        *data = T::from_bytes(&image);
    }

    /// Replace the allocation's elements with `values`, whatever a reader
    /// holds (every handle sees them). The pool that hands out a live
    /// allocation again does this.
    ///
    /// # Errors
    ///
    /// [`HostAccessError::LengthMismatch`] when `values` does not fill the
    /// allocation; the allocation is unchanged then.
    pub(crate) fn overwrite(&self, values: &[T]) -> Result<(), HostAccessError>
    where
        T: Clone,
    {
        let mut data = self.memory.write();
        if values.len() != data.len() {
            return Err(HostAccessError::LengthMismatch {
                expected: data.len(),
                actual: values.len(),
            });
        }
        data.clone_from_slice(values);
        Ok(())
    }
}

/// A device's memory: the storage it allocates, inside or outside its
/// fault plan, and tensors over it.
impl SimDevice {
    /// A compact column-major tensor in this device's memory, outside the
    /// fault plan: the harness stages inputs and the engine writes its
    /// results this way. Providers allocate through [`Self::allocate`] or a
    /// [`SimStream`](crate::SimStream), which obey the plan.
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

    /// Storage in this device's memory, listed in its ledger, outside the
    /// fault plan (see [`Self::tensor`]).
    pub fn storage<T: Element>(&self, data: Vec<T>) -> SimStorage<T> {
        SimStorage::over(
            Memory::new(data),
            SIM_FAMILY,
            self.allocation_domain(),
            Arc::clone(self.ledger()),
            Some(self.clone()),
        )
    }

    /// Allocate device memory holding `data`, as the fault plan allows.
    ///
    /// # Errors
    ///
    /// [`DeviceError::OutOfMemory`] or [`DeviceError::DeviceLost`] when the
    /// plan says so.
    pub fn allocate<T: Element>(&self, data: Vec<T>) -> Result<SimStorage<T>, DeviceError> {
        self.core()
            .begin_allocation(self.name(), std::mem::size_of_val(data.as_slice()))?;
        Ok(self.storage(data))
    }

    /// Allocate device memory for `len` elements, as the fault plan allows,
    /// without filling it: a queued copy fills it when it lands (poison
    /// where the copy does not reach), and until then nobody can read it.
    pub(crate) fn allocate_for_copy<T: Element>(
        &self,
        len: usize,
    ) -> Result<(SimStorage<T>, Arc<Memory<T>>), DeviceError> {
        self.core()
            .begin_allocation(self.name(), len * std::mem::size_of::<T>())?;
        let memory = Memory::new(Vec::new());
        let storage = SimStorage::over_len(
            Arc::clone(&memory),
            len,
            SIM_FAMILY,
            self.allocation_domain(),
            Arc::clone(self.ledger()),
            Some(self.clone()),
        );
        Ok((storage, memory))
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
            StorageCompletion::Complete => Ok(HostReadGuard::new(self.memory.read())),
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
            let mut data = memory.write();
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
