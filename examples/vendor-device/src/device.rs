//! `VendorDevice`: the device, its identities, its memory and its copy
//! engine.

use std::fmt;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tenferro_runtime::{
    EngineId, HardwareClassId, ProviderDeviceIdentity, ProviderId, RuntimeConfigError, StorageClass,
};
use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, MemoryKind, Placement, StorageBuffer, Tensor,
    TensorRead, TypedTensor,
};

use crate::copy_engine::{CopyEngine, CopyTicket};
use crate::scalar::{DeviceScalar, read_compact, unsupported_dtype, with_scalar};
use crate::storage::{Accounting, AllocationObserver, CopyState, VENDOR_FAMILY, VendorStorage};
use crate::{VendorEngine, VendorError};

/// Device kind in the placement of the device's tensors.
pub const VENDOR_DEVICE_KIND: &str = "vendor-npu";
/// Provider id of the vendor's devices.
pub const VENDOR_PROVIDER_ID: &str = "example-vendor.npu";
/// Hardware class of the vendor's devices.
pub const VENDOR_HARDWARE_CLASS: &str = "example-vendor.npu.v1";
/// How long a copy nobody waits for sits in the queue before it starts.
pub const DEFAULT_BATCH_WINDOW: Duration = Duration::from_millis(200);

struct Inner {
    name: String,
    ordinal: usize,
    engine_id: EngineId,
    storage_class: StorageClass,
    provider_device: ProviderDeviceIdentity,
    hardware_class: HardwareClassId,
    domain: AllocationDomainId,
    accounting: Arc<Accounting>,
    copies: CopyEngine,
    /// Whether the engine's layout kernels write fresh memory.
    copying_kernels: std::sync::atomic::AtomicBool,
    /// Whether the host cannot map the device's memory.
    opaque_memory: Arc<std::sync::atomic::AtomicBool>,
}

/// One device of the vendor: memory in an allocation domain of its own, an
/// asynchronous copy engine (a worker thread), and a tenferro engine
/// ([`VendorEngine`]). Cheap to clone: clones are the same device.
///
/// # Examples
///
/// ```
/// use example_vendor_device::{CopyState, VendorDevice};
///
/// let device = VendorDevice::open(0).unwrap();
/// let (tensor, ticket) = device.upload_async(vec![2], vec![1.5_f64, -0.0]).unwrap();
/// ticket.wait();
/// assert_eq!(device.copy_state(&tensor), Some(CopyState::Landed));
/// assert_eq!((device.live_allocations(), device.bytes_in_use()), (1, 16));
/// drop(tensor);
/// assert_eq!((device.live_allocations(), device.bytes_in_use()), (0, 0));
/// ```
#[derive(Clone)]
pub struct VendorDevice {
    inner: Arc<Inner>,
}

impl fmt::Debug for VendorDevice {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("VendorDevice")
            .field("name", &self.inner.name)
            .field("domain", &self.inner.domain)
            .field("live_allocations", &self.live_allocations())
            .finish_non_exhaustive()
    }
}

impl VendorDevice {
    /// Open device `npu<ordinal>` with the default batching window.
    ///
    /// # Errors
    ///
    /// [`VendorError::Identity`] if tenferro rejects an identifier,
    /// [`VendorError::Spawn`] if the copy engine's thread cannot start.
    pub fn open(ordinal: usize) -> Result<Self, VendorError> {
        Self::with_batch_window(ordinal, DEFAULT_BATCH_WINDOW)
    }

    /// Open device `npu<ordinal>` whose copy engine starts a copy nobody
    /// waits for after `window`.
    ///
    /// # Errors
    ///
    /// As [`VendorDevice::open`].
    pub fn with_batch_window(ordinal: usize, window: Duration) -> Result<Self, VendorError> {
        let name = format!("npu{ordinal}");
        let identity = |source: RuntimeConfigError| VendorError::Identity {
            device: name.clone(),
            source: Box::new(source),
        };
        let engine_id = EngineId::new(format!("example-vendor.{name}.v1"))
            .map_err(|error| identity(error.into()))?;
        let storage_class = StorageClass::new(format!("example-vendor.{name}.memory.v1"))
            .map_err(|error| identity(error.into()))?;
        let provider =
            ProviderId::new(VENDOR_PROVIDER_ID).map_err(|error| identity(error.into()))?;
        let provider_device = ProviderDeviceIdentity::new(provider, name.clone())
            .map_err(|error| identity(error.into()))?;
        let hardware_class =
            HardwareClassId::new(VENDOR_HARDWARE_CLASS).map_err(|error| identity(error.into()))?;
        let copies =
            CopyEngine::start(format!("{name}-copy-engine"), window).map_err(|source| {
                VendorError::Spawn {
                    device: name.clone(),
                    source,
                }
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                name,
                ordinal,
                engine_id,
                storage_class,
                provider_device,
                hardware_class,
                domain: AllocationDomainId::fresh(),
                accounting: Arc::new(Accounting::default()),
                copies,
                copying_kernels: std::sync::atomic::AtomicBool::new(false),
                opaque_memory: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            }),
        })
    }

    /// Make the engine's layout kernels (reshape, compaction) write fresh
    /// device memory instead of sharing their input's allocation, as
    /// devices whose layout ops launch a copy do: a result then holds
    /// nothing of its input.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    /// use tenferro_tensor::{TensorRead, TensorStructural};
    ///
    /// let device = VendorDevice::open(0).unwrap();
    /// device.set_copying_kernels(true);
    /// let x = device.tensor(vec![2, 2], vec![1_i32, 2, 3, 4]).unwrap();
    /// let y = device.engine().reshape_read(TensorRead::from_tensor(&x), &[4]).unwrap();
    /// assert_eq!(device.live_allocations(), 2);
    /// drop(x);
    /// assert_eq!(device.live_allocations(), 1);
    /// # drop(y);
    /// ```
    pub fn set_copying_kernels(&self, copying: bool) {
        self.inner
            .copying_kernels
            .store(copying, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the engine's layout kernels write fresh memory.
    pub fn copying_kernels(&self) -> bool {
        self.inner
            .copying_kernels
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Make the device's memory opaque to the host, as most GPUs' device
    /// memory is: `map_read` of its tensors is refused
    /// (`HostAccessError::Unsupported`), and only the device reads them
    /// (its kernels, [`VendorDevice::download`]). An adapter then reads its
    /// tensors back by downloading them.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    /// use tenferro_tensor::{HostAccessError, StorageBuffer, TensorRead};
    ///
    /// let device = VendorDevice::open(0).unwrap();
    /// device.set_opaque_memory(true);
    /// let x = device.tensor(vec![2], vec![1.5_f64, -0.0]).unwrap();
    /// let StorageBuffer::Backend(storage) = x.as_typed::<f64>().unwrap().buffer() else {
    ///     unreachable!("device memory");
    /// };
    /// assert!(matches!(storage.map_read(), Err(HostAccessError::Unsupported { .. })));
    /// let host = device.download(&TensorRead::from_tensor(&x)).unwrap();
    /// assert_eq!(host.as_typed::<f64>().unwrap().as_slice().unwrap(), &[1.5, -0.0]);
    /// ```
    pub fn set_opaque_memory(&self, opaque: bool) {
        self.inner
            .opaque_memory
            .store(opaque, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the host cannot map the device's memory.
    pub fn opaque_memory(&self) -> bool {
        self.inner
            .opaque_memory
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The device's name, e.g. `npu0`.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The id of the device's engine.
    pub fn engine_id(&self) -> &EngineId {
        &self.inner.engine_id
    }

    /// The device's one storage class.
    pub fn storage_class(&self) -> &StorageClass {
        &self.inner.storage_class
    }

    /// The provider-device identity of the device's engine.
    pub fn provider_device_identity(&self) -> &ProviderDeviceIdentity {
        &self.inner.provider_device
    }

    /// The hardware class of the vendor's devices.
    pub fn hardware_class(&self) -> &HardwareClassId {
        &self.inner.hardware_class
    }

    /// The allocation domain of the device's memory.
    pub fn allocation_domain(&self) -> AllocationDomainId {
        self.inner.domain
    }

    /// How long a copy nobody waits for sits in the queue.
    pub fn batch_window(&self) -> Duration {
        self.inner.copies.window()
    }

    /// The device inside the placement of its tensors.
    pub fn device_id(&self) -> DeviceId {
        DeviceId {
            kind: DeviceKind::Other(VENDOR_DEVICE_KIND.to_owned()),
            ordinal: self.inner.ordinal,
        }
    }

    /// The placement of the device's tensors.
    pub fn placement(&self) -> Placement {
        Placement {
            memory_kind: MemoryKind::Device,
            device: Some(self.device_id()),
            cpu_affinity: None,
        }
    }

    /// Whether `placement` is this device's.
    pub fn accepts_placement(&self, placement: &Placement) -> bool {
        placement.memory_kind == MemoryKind::Device && placement.device == Some(self.device_id())
    }

    /// Whether a tensor's storage is this device's memory (family and
    /// domain), whatever its placement says.
    pub fn resident(&self, read: &TensorRead<'_>) -> bool {
        read.backend_family() == Some(VENDOR_FAMILY)
            && read.allocation_domain() == Some(self.inner.domain)
    }

    /// Whether a tensor lives on this device: its placement and its storage.
    pub fn owns(&self, read: &TensorRead<'_>) -> bool {
        self.accepts_placement(read.placement()) && self.resident(read)
    }

    /// A fresh engine of this device.
    pub fn engine(&self) -> VendorEngine {
        VendorEngine::new(self.clone())
    }

    /// Allocations of this device's memory made and not yet freed, as the
    /// device counts them (several tensors over one allocation count once).
    pub fn live_allocations(&self) -> u64 {
        self.inner.accounting.live()
    }

    /// Bytes of this device's memory in live allocations.
    pub fn bytes_in_use(&self) -> u64 {
        self.inner.accounting.bytes()
    }

    /// Block until the memory of every tensor dropped so far is freed.
    /// The device frees an allocation when its last tensor drops, unless a
    /// copy into it is still queued: then once that copy is done, on the
    /// copy engine. Returns at once when no free is deferred; otherwise
    /// waits for the copies queued so far.
    pub fn synchronize(&self) {
        if self.inner.accounting.deferred() > 0 {
            self.inner.copies.synchronize();
        }
    }

    /// Tell `observer` of every allocation made and freed from now on.
    pub fn set_allocation_observer(&self, observer: Arc<dyn AllocationObserver>) {
        self.inner.accounting.observe(observer);
    }

    /// A compact column-major tensor of `shape` holding `data`, written by
    /// the device at once (what its kernels produce).
    ///
    /// # Errors
    ///
    /// A validation error when `data.len()` differs from the element count.
    pub fn tensor<T: DeviceScalar>(
        &self,
        shape: Vec<usize>,
        data: Vec<T>,
    ) -> tenferro_tensor::Result<Tensor> {
        self.wrap(shape, self.storage(data))
    }

    /// Allocate `staging.len()` elements of device memory on the calling
    /// thread, and queue the copy of `staging` into it on the copy engine.
    /// Returns at once: until the copy lands the memory holds poison and
    /// refuses host reads; wait on the ticket to block until it has.
    ///
    /// # Errors
    ///
    /// A validation error when `staging.len()` differs from the element
    /// count of `shape` (nothing is queued then).
    pub fn upload_async<T: DeviceScalar>(
        &self,
        shape: Vec<usize>,
        staging: Vec<T>,
    ) -> tenferro_tensor::Result<(Tensor, CopyTicket)> {
        let count: usize = shape.iter().product();
        if staging.len() != count {
            return Err(tenferro_tensor::Error::invalid_argument(
                "VendorDevice::upload_async",
                "staging",
                format!("{} elements for a shape of {count}", staging.len()),
            ));
        }
        let storage = self.storage(vec![T::POISON; count]);
        let ticket = self.copy_into(&storage, staging);
        Ok((self.wrap(shape, storage)?, ticket))
    }

    /// Queue the copy of `staging` (as many elements as the allocation
    /// holds) into `storage`'s allocation: it holds poison and refuses host
    /// reads until the copy lands.
    pub(crate) fn copy_into<T: DeviceScalar>(
        &self,
        storage: &VendorStorage<T>,
        staging: Vec<T>,
    ) -> CopyTicket {
        let allocation = Arc::clone(storage.allocation());
        self.inner.copies.enqueue(move |copy| {
            allocation.set_state(CopyState::InFlight { copy });
            Box::new(move || {
                allocation
                    .data
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .copy_from_slice(&staging);
                allocation.set_state(CopyState::Landed);
            })
        })
    }

    /// Upload a host tensor or view (any strides, offset or axis order)
    /// into fresh compact device memory, and wait for the copy to land.
    ///
    /// # Errors
    ///
    /// An unsupported-dtype error for a dtype the device does not carry,
    /// or the error of reading the input.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    /// use tenferro_tensor::{Tensor, TensorRead};
    ///
    /// let device = VendorDevice::open(0).unwrap();
    /// let host = Tensor::from_vec_col_major(vec![2], vec![1_i32, -1]).unwrap();
    /// let on_device = device.upload(&TensorRead::from_tensor(&host)).unwrap();
    /// assert!(device.owns(&TensorRead::from_tensor(&on_device)));
    /// ```
    pub fn upload(&self, input: &TensorRead<'_>) -> tenferro_tensor::Result<Tensor> {
        const OP: &str = "VendorDevice::upload";
        with_scalar!(input.dtype(), T => {
            let (tensor, ticket) = self.upload_async(input.shape().to_vec(), read_compact::<T>(input)?)?;
            ticket.wait();
            Ok(tensor)
        }, other => Err(unsupported_dtype(OP, input.dtype())))
    }

    /// A host tensor holding the values of `input`, a tensor or view in
    /// this device's memory, once the copies into that memory have landed.
    ///
    /// # Errors
    ///
    /// A runtime-state error when `input` is not in this device's memory,
    /// an unsupported-dtype error for a dtype the device does not carry.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    /// use tenferro_tensor::TensorRead;
    ///
    /// let device = VendorDevice::open(0).unwrap();
    /// let (tensor, _ticket) = device.upload_async(vec![2], vec![0.5_f32, -0.0]).unwrap();
    /// let host = device.download(&TensorRead::from_tensor(&tensor)).unwrap();
    /// assert_eq!(host.as_typed::<f32>().unwrap().as_view().host_storage().unwrap(), &[0.5, -0.0]);
    /// ```
    pub fn download(&self, input: &TensorRead<'_>) -> tenferro_tensor::Result<Tensor> {
        const OP: &str = "VendorDevice::download";
        if !self.owns(input) {
            return Err(tenferro_tensor::Error::runtime_state(
                OP,
                "input is not in this device's memory",
            ));
        }
        self.settle(input);
        with_scalar!(input.dtype(), T => {
            Tensor::from_vec_col_major(input.shape().to_vec(), read_compact::<T>(input)?)
        }, other => Err(unsupported_dtype(OP, input.dtype())))
    }

    /// Whether the copy into `tensor`'s memory has landed; `None` when the
    /// tensor is not in this device's memory.
    pub fn copy_state(&self, tensor: &Tensor) -> Option<CopyState> {
        with_scalar!(tensor.dtype(), T => self.storage_of::<T>(tensor).map(VendorStorage::state), other => None)
    }

    /// Block until no copy into `read`'s memory is in flight: device work
    /// is ordered after the copies queued before it.
    pub(crate) fn settle(&self, read: &TensorRead<'_>) {
        let state = with_scalar!(read.dtype(), T => self.with_storage::<T, _>(read, VendorStorage::state),
            other => None);
        if let Some(CopyState::InFlight { copy }) = state {
            self.inner.copies.wait(copy);
        }
    }

    /// `f` of the storage under `read` (a tensor or a view), when it is
    /// this device's memory holding `T`.
    pub(crate) fn with_storage<T: DeviceScalar, R>(
        &self,
        read: &TensorRead<'_>,
        f: impl FnOnce(&VendorStorage<T>) -> R,
    ) -> Option<R> {
        let view = T::typed_view(read.clone().tensor_view())?;
        let storage = view
            .backend_buffer()?
            .as_any()
            .downcast_ref::<VendorStorage<T>>()
            .filter(|storage| storage.domain() == self.inner.domain)?;
        Some(f(storage))
    }

    /// A tensor of `shape` over `input`'s allocation, without a copy (as a
    /// device engine reshapes), when `input` is an owned tensor in this
    /// device's memory whose copies have landed; `None` otherwise: a view,
    /// or memory a copy is still writing, is copied by the caller.
    pub(crate) fn alias_landed<T: DeviceScalar>(
        &self,
        input: &TensorRead<'_>,
        shape: &[usize],
    ) -> Option<tenferro_tensor::Result<Tensor>> {
        let TensorRead::Tensor(tensor) = input else {
            return None;
        };
        let storage = self
            .storage_of::<T>(tensor)
            .filter(|storage| storage.state() == CopyState::Landed)?;
        Some(self.wrap(shape.to_vec(), storage.alias()))
    }

    pub(crate) fn storage_of<'t, T: DeviceScalar>(
        &self,
        tensor: &'t Tensor,
    ) -> Option<&'t VendorStorage<T>> {
        match tensor.as_typed::<T>()?.buffer() {
            StorageBuffer::Backend(storage) => storage
                .as_any()
                .downcast_ref::<VendorStorage<T>>()
                .filter(|storage| storage.domain() == self.inner.domain),
            _ => None,
        }
    }

    pub(crate) fn storage<T: DeviceScalar>(&self, data: Vec<T>) -> VendorStorage<T> {
        VendorStorage::new(
            data,
            self.inner.domain,
            Arc::clone(&self.inner.accounting),
            Arc::clone(&self.inner.opaque_memory),
        )
    }

    pub(crate) fn wrap<T: DeviceScalar>(
        &self,
        shape: Vec<usize>,
        storage: VendorStorage<T>,
    ) -> tenferro_tensor::Result<Tensor> {
        TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(storage)),
            self.placement(),
        )
        .map(Tensor::from_typed)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_copy_nobody_waits_for_lands_by_itself_after_the_window() {
        let device = VendorDevice::with_batch_window(0, Duration::from_millis(20)).unwrap();
        let (tensor, ticket) = device.upload_async(vec![2], vec![1_i64, 2]).unwrap();
        assert_eq!(
            device.copy_state(&tensor),
            Some(CopyState::InFlight {
                copy: ticket.number()
            })
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while device.copy_state(&tensor) != Some(CopyState::Landed) {
            assert!(Instant::now() < deadline, "the copy never landed");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(ticket.has_landed());
        let read = TensorRead::from_tensor(&tensor);
        assert_eq!(crate::read_compact::<i64>(&read).unwrap(), vec![1, 2]);
    }

    #[test]
    fn dropping_the_device_lands_what_is_queued() {
        let device = VendorDevice::open(0).unwrap();
        let (tensor, ticket) = device.upload_async(vec![1], vec![7.5_f32]).unwrap();
        let other = VendorDevice::open(1).unwrap();
        assert_eq!(other.copy_state(&tensor), None, "another device's memory");
        drop(device);
        assert!(ticket.has_landed());
        drop(tensor);
    }

    #[test]
    fn a_staging_buffer_of_the_wrong_length_queues_nothing() {
        let device = VendorDevice::open(0).unwrap();
        assert!(device.upload_async(vec![3], vec![1_i32]).is_err());
        assert_eq!(device.live_allocations(), 0);
    }
}
