//! Deliberately broken providers for the rules of conformance level V2,
//! what a transfer does besides its output. Each returns the right output,
//! so that exactly one rule can see its bug; the crate's tests
//! (`tests/side_effects.rs`) show the suite catching each by that rule and
//! no other. Do not use them: they exist to be caught.
//!
//! - [`ClearingDownload`] zeroes the device memory it downloaded from
//!   (`input-intact`).
//! - [`LiveReuseUpload`] hands a destination allocation out again while a
//!   caller still holds it (`output-stable`).
//! - [`EveryFifthLeakUpload`] keeps one destination allocation in five
//!   alive forever (`no-leak`, seen by the device's counts alone).
//! - [`DriverThreadUpload`] allocates on a driver thread of its own and
//!   never frees one of those allocations (`no-leak`, seen by the ledger,
//!   which attributes it to the case that ran alone).
//!
//! And two whose output's metadata is wrong, for the device's runtime
//! registration rather than for a rule of V2: tenferro's validation asks
//! the registration (its ingress contracts) what the suite's oracle asks
//! the adapter (its placement and storage rules), and `runtime-agreement`
//! fails where the two disagree. Only a wrong output can show a
//! registration that accepts too much (`tests/registration.rs`).
//!
//! - [`ForeignPlacementUpload`] returns the device's memory under the
//!   placement of another device (`placement`).
//! - [`ForeignDomainUpload`] returns another device's memory under this
//!   device's placement (`residency`).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{
    DType, DeviceId, Error, Placement, StorageBuffer, Tensor, TensorRead, TypedTensor,
};

use crate::provider::{download, upload_input};
use crate::scalar::{DeviceScalar, read_compact, unsupported_dtype, with_scalar};
use crate::storage::WeakVendorStorage;
use crate::{VendorDevice, VendorUpload};

/// [`EveryFifthLeakUpload`] keeps one destination allocation in this many.
pub const LEAK_PERIOD: u64 = 5;

/// Elements of the command buffer [`DriverThreadUpload`]'s driver thread
/// allocates for each transfer (`i64`s: 64 bytes).
pub const COMMAND_BUFFER_ELEMENTS: usize = 8;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A [`crate::VendorDownload`] that, once its copy is done, clears the
/// device memory it copied from (every element of the input's allocation
/// becomes zero) to recycle it. The input was only lent to the transfer:
/// its owner finds it destroyed. Broken on purpose (`input-intact`).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::ClearingDownload;
/// use example_vendor_device::VendorDevice;
///
/// let download = ClearingDownload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(download.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct ClearingDownload {
    device: VendorDevice,
}

impl ClearingDownload {
    /// Download from `device`, clearing the input afterwards.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The source device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

impl TransferProvider for ClearingDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = download(
            &self.device,
            &request,
            "ClearingDownload::transfer_blocking",
        )?;
        // The bug: the input is borrowed, not the provider's to recycle.
        let input = request.input();
        with_scalar!(input.dtype(), T => {
            self.device.with_storage::<T, _>(input, |storage| storage.fill(T::ZERO));
        }, other => {});
        Ok(output)
    }
}

/// A pool slot: the last destination allocation of one calling thread,
/// dtype and length, held weakly.
type PoolKey = (ThreadId, DType, usize);

/// An upload with a pool of device memory: it remembers its last
/// destination allocation per calling thread (a stream per thread, as
/// caching allocators pool per stream), dtype and length through a weak
/// handle, and reuses it for the next upload of that size while the handle
/// still upgrades, which is exactly while a caller still holds the output
/// it was returned in. That output's values change under its holder.
/// Broken on purpose (`output-stable`).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::LiveReuseUpload;
/// use example_vendor_device::VendorDevice;
///
/// let upload = LiveReuseUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct LiveReuseUpload {
    device: VendorDevice,
    pool: Mutex<HashMap<PoolKey, Box<dyn Any + Send + Sync>>>,
}

impl LiveReuseUpload {
    /// Upload into `device` through the pool.
    pub fn new(device: VendorDevice) -> Self {
        Self {
            device,
            pool: Mutex::new(HashMap::new()),
        }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }

    fn upload<T: DeviceScalar>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        let staging = read_compact::<T>(input)?;
        let key = (std::thread::current().id(), T::dtype(), staging.len());
        let mut pool = lock(&self.pool);
        // The bug: a weak handle that still upgrades means the memory is
        // still in use, not that it is free.
        let live = pool
            .get(&key)
            .and_then(|slot| slot.downcast_ref::<WeakVendorStorage<T>>())
            .and_then(WeakVendorStorage::upgrade);
        let storage = match live {
            Some(storage) => storage,
            None => {
                let fresh = self.device.storage(vec![T::POISON; staging.len()]);
                pool.insert(key, Box::new(fresh.downgrade()));
                fresh
            }
        };
        drop(pool);
        self.device.copy_into(&storage, staging).wait();
        Ok(self.device.wrap(input.shape().to_vec(), storage)?)
    }
}

impl TransferProvider for LiveReuseUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "LiveReuseUpload::transfer_blocking";
        let input = upload_input(&self.device, &request, OP)?;
        with_scalar!(input.dtype(), T => self.upload::<T>(input),
            other => Err(unsupported_dtype(OP, input.dtype()).into()))
    }
}

/// A correct [`VendorUpload`] that keeps every fifth destination
/// allocation alive forever (a second handle to it, never dropped).
/// Broken on purpose (`no-leak`: the device's count of memory in use grows
/// by one allocation every fifth transfer).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::EveryFifthLeakUpload;
/// use example_vendor_device::VendorDevice;
///
/// let upload = EveryFifthLeakUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct EveryFifthLeakUpload {
    upload: VendorUpload,
    outputs: AtomicU64,
    kept: Mutex<Vec<Box<dyn Any + Send + Sync>>>,
}

impl EveryFifthLeakUpload {
    /// Upload into `device`, leaking every fifth output's allocation.
    pub fn new(device: VendorDevice) -> Self {
        Self {
            upload: VendorUpload::new(device),
            outputs: AtomicU64::new(0),
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        self.upload.device()
    }
}

impl TransferProvider for EveryFifthLeakUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.upload.transfer_blocking(request)?;
        let count = self.outputs.fetch_add(1, Ordering::SeqCst) + 1;
        if count.is_multiple_of(LEAK_PERIOD) {
            // The bug: a handle nobody will ever drop.
            let kept = with_scalar!(output.dtype(), T => self
                .device()
                .storage_of::<T>(&output)
                .map(|storage| Box::new(storage.alias()) as Box<dyn Any + Send + Sync>),
                other => None);
            lock(&self.kept).extend(kept);
        }
        Ok(output)
    }
}

/// An upload whose device work runs on a driver thread it spawns for each
/// transfer: the driver allocates a command buffer
/// ([`COMMAND_BUFFER_ELEMENTS`] `i64`s) and the destination memory, and
/// queues the copy; the caller waits for it. The output is right, but the
/// command buffer is never freed. Broken on purpose (`no-leak`: the
/// allocation was made on another thread than the transfer's, and belongs
/// to the transfer because nothing else ran on the device meanwhile).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::DriverThreadUpload;
/// use example_vendor_device::VendorDevice;
///
/// let upload = DriverThreadUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct DriverThreadUpload {
    device: VendorDevice,
    kept: Mutex<Vec<Tensor>>,
}

impl DriverThreadUpload {
    /// Upload into `device` through a driver thread.
    pub fn new(device: VendorDevice) -> Self {
        Self {
            device,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }

    fn upload<T: DeviceScalar>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "DriverThreadUpload::upload";
        let staging = read_compact::<T>(input)?;
        let shape = input.shape().to_vec();
        let device = &self.device;
        let driven = std::thread::scope(|scope| {
            let driver = std::thread::Builder::new()
                .name(format!("{}-driver", device.name()))
                .spawn_scoped(scope, move || {
                    let commands = device.tensor(
                        vec![COMMAND_BUFFER_ELEMENTS],
                        vec![0_i64; COMMAND_BUFFER_ELEMENTS],
                    )?;
                    let (output, ticket) = device.upload_async(shape, staging)?;
                    Ok::<_, Error>((commands, output, ticket))
                })
                .map_err(|error| {
                    Error::runtime_state(OP, format!("the driver thread could not start: {error}"))
                })?;
            driver
                .join()
                .map_err(|_| Error::runtime_state(OP, "the driver thread panicked"))?
        });
        let (commands, output, ticket) = driven?;
        ticket.wait();
        // The bug: the driver's command buffer is never released.
        lock(&self.kept).push(commands);
        Ok(output)
    }
}

impl TransferProvider for DriverThreadUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "DriverThreadUpload::transfer_blocking";
        let input = upload_input(&self.device, &request, OP)?;
        with_scalar!(input.dtype(), T => self.upload::<T>(input),
            other => Err(unsupported_dtype(OP, input.dtype()).into()))
    }
}

/// Upload `input` into `memory`'s memory and return it under `placement`.
fn upload_as<T: DeviceScalar>(
    memory: &VendorDevice,
    input: &TensorRead<'_>,
    placement: Placement,
) -> tenferro_runtime::Result<Tensor> {
    let staging = read_compact::<T>(input)?;
    let storage = memory.storage(vec![T::POISON; staging.len()]);
    memory.copy_into(&storage, staging).wait();
    Ok(TypedTensor::<T>::from_buffer_col_major(
        input.shape().to_vec(),
        StorageBuffer::Backend(Box::new(storage)),
        placement,
    )
    .map(Tensor::from_typed)?)
}

/// A correct upload into the device's memory whose output claims the
/// placement of another device of the vendor (the next ordinal): the
/// bytes are right and in the right memory, the placement is not.
/// Broken on purpose (`placement`).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::ForeignPlacementUpload;
/// use example_vendor_device::VendorDevice;
///
/// let upload = ForeignPlacementUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct ForeignPlacementUpload {
    device: VendorDevice,
}

impl ForeignPlacementUpload {
    /// Upload into `device`, under another device's placement.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

impl TransferProvider for ForeignPlacementUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "ForeignPlacementUpload::transfer_blocking";
        let input = upload_input(&self.device, &request, OP)?;
        // The bug: the placement names the next device.
        let placement = Placement {
            device: Some(DeviceId {
                ordinal: self.device.ordinal() + 1,
                ..self.device.device_id()
            }),
            ..self.device.placement()
        };
        with_scalar!(input.dtype(), T => upload_as::<T>(&self.device, input, placement),
            other => Err(unsupported_dtype(OP, input.dtype()).into()))
    }
}

/// An upload that lands in the memory of another device of the vendor (a
/// device of its own, opened beside the destination) and returns it under
/// the destination's placement: the bytes and the placement are right,
/// the allocation domain is not. Broken on purpose (`residency`).
///
/// # Examples
///
/// ```
/// use example_vendor_device::broken::ForeignDomainUpload;
/// use example_vendor_device::VendorDevice;
///
/// let upload = ForeignDomainUpload::new(VendorDevice::open(0).unwrap()).unwrap();
/// assert_ne!(upload.memory().allocation_domain(), upload.device().allocation_domain());
/// ```
#[derive(Debug)]
pub struct ForeignDomainUpload {
    device: VendorDevice,
    memory: VendorDevice,
}

impl ForeignDomainUpload {
    /// Upload for `device`, into the memory of another device it opens.
    ///
    /// # Errors
    ///
    /// As [`VendorDevice::open`], for the other device.
    pub fn new(device: VendorDevice) -> Result<Self, crate::VendorError> {
        let memory = VendorDevice::open(device.ordinal() + 1)?;
        Ok(Self { device, memory })
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }

    /// The device whose memory the outputs are in.
    pub fn memory(&self) -> &VendorDevice {
        &self.memory
    }
}

impl TransferProvider for ForeignDomainUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "ForeignDomainUpload::transfer_blocking";
        let input = upload_input(&self.device, &request, OP)?;
        // The bug: the memory is another device's.
        let placement = self.device.placement();
        with_scalar!(input.dtype(), T => upload_as::<T>(&self.memory, input, placement),
            other => Err(unsupported_dtype(OP, input.dtype()).into()))
    }
}
