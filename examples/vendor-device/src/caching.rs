//! A correct upload that keeps state between calls, as real providers do:
//! a caching allocator for its destination blocks.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{DType, Tensor, TensorRead};

use crate::VendorDevice;
use crate::provider::upload_input;
use crate::scalar::{DeviceScalar, read_compact, unsupported_dtype, with_scalar};
use crate::storage::VendorStorage;

/// The most blocks of one size [`CachingUpload`] keeps.
pub const CACHED_BLOCKS: usize = 4;

/// The blocks kept for each dtype and element count, each a
/// `VendorStorage` of that dtype.
type Blocks = HashMap<(DType, usize), Vec<Box<dyn Any + Send + Sync>>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A correct host-to-device upload whose destination blocks are cached, as
/// PyTorch's CUDA caching allocator and `cudaMallocAsync` pools do: it
/// keeps up to [`CACHED_BLOCKS`] blocks per dtype and element count, and
/// copies into a kept block only once no tensor holds it any more (else
/// into a fresh one, kept while there is room). The blocks it keeps stay
/// in use on the device between calls, and the device's counter counts
/// them: memory kept and reused, not a leak.
///
/// # Examples
///
/// ```
/// use example_vendor_device::{CachingUpload, VendorDevice};
///
/// let upload = CachingUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
pub struct CachingUpload {
    device: VendorDevice,
    blocks: Mutex<Blocks>,
}

impl std::fmt::Debug for CachingUpload {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CachingUpload")
            .field("device", &self.device)
            .field("sizes", &lock(&self.blocks).len())
            .finish()
    }
}

impl CachingUpload {
    /// Upload into `device` through a cache of destination blocks.
    pub fn new(device: VendorDevice) -> Self {
        Self {
            device,
            blocks: Mutex::new(HashMap::new()),
        }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }

    fn upload<T: DeviceScalar>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        let staging = read_compact::<T>(input)?;
        let mut blocks = lock(&self.blocks);
        let kept = blocks.entry((T::dtype(), staging.len())).or_default();
        // A block is free when the cache's own handle is its only one.
        let free = kept
            .iter()
            .filter_map(|block| block.downcast_ref::<VendorStorage<T>>())
            .find(|block| block.handles() == 1)
            .map(VendorStorage::alias);
        let block = match free {
            Some(block) => block,
            None => {
                let fresh = self.device.storage(vec![T::POISON; staging.len()]);
                if kept.len() < CACHED_BLOCKS {
                    kept.push(Box::new(fresh.alias()));
                }
                fresh
            }
        };
        drop(blocks);
        self.device.copy_into(&block, staging).wait();
        Ok(self.device.wrap(input.shape().to_vec(), block)?)
    }
}

impl TransferProvider for CachingUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "CachingUpload::transfer_blocking";
        let input = upload_input(&self.device, &request, OP)?;
        with_scalar!(input.dtype(), T => self.upload::<T>(input),
            other => Err(unsupported_dtype(OP, input.dtype()).into()))
    }
}
