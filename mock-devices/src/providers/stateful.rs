//! Correct providers that keep state between calls, as real ones do: a
//! caching allocator that keeps destination blocks and hands one out again
//! once no tensor holds it ([`CachingAllocator`]), and a cache of whole
//! inputs that answers an input equal to an earlier one in every element
//! ([`ContentCache`]). The suite must pass them on every rule: memory kept
//! on purpose and reused is no leak, and a cache keyed by the full content
//! returns the right values.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{AllocationDomainId, BackendStorage, StorageBuffer, Tensor, TypedTensor};

use crate::{Element, SimDevice, SimStorage, StorageCompletion, with_element};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The blocks of one size a [`CachingAllocator`] keeps.
type Key = (TypeId, usize, AllocationDomainId);

/// A correct provider around `inner` whose destination allocations (in a
/// simulated device's memory) are cached: it keeps up to `blocks` of them
/// per element type and count, and hands one out again, with the new
/// values, only once no tensor holds it, as PyTorch's CUDA caching
/// allocator and `cudaMallocAsync` pools do. The blocks it keeps stay in
/// use on the device between calls; repeated calls reuse them.
///
/// It writes a block it hands out again from the host at once: correct
/// where the device's kernels have read their inputs by the time the
/// runtime drops them (every [`Kernels`](crate::Kernels) but
/// [`Kernels::Lazy`](crate::Kernels::Lazy)). Where a kernel queued over
/// the dropped output reads it only when it runs, the write lands under
/// it, and the suite's deferred read catches that (`output-stable`);
/// [`CachingAllocator::settling`] lets the device finish that work first,
/// after the block is taken, as a correct allocator on such a device does.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_mock_devices::providers::CachingAllocator;
/// use tenferro_mock_devices::{SimDevice, SimUpload};
///
/// let device = SimDevice::new(0).unwrap();
/// let caching = CachingAllocator::new(Arc::new(SimUpload::new(device)), 4);
/// assert_eq!(caching.name(), "caching-allocator");
/// ```
pub struct CachingAllocator {
    inner: Arc<dyn TransferProvider>,
    blocks: usize,
    cached: Mutex<HashMap<Key, Vec<Box<dyn Any + Send + Sync>>>>,
    settles: Option<SimDevice>,
}

impl fmt::Debug for CachingAllocator {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CachingAllocator")
            .field("blocks", &self.blocks)
            .field("sizes", &lock(&self.cached).len())
            .finish_non_exhaustive()
    }
}

impl CachingAllocator {
    /// `inner` with up to `blocks` destination blocks kept per size.
    pub fn new(inner: Arc<dyn TransferProvider>, blocks: usize) -> Self {
        Self {
            inner,
            blocks: blocks.max(1),
            cached: Mutex::new(HashMap::new()),
            settles: None,
        }
    }

    /// The same, letting `device` finish every copy and kernel it has
    /// queued (`SimDevice::release_all`) after it takes a block to reuse
    /// and before it writes it: once a block is back in the cache, every
    /// kernel that reads it was queued already, so none reads the new
    /// values, whichever thread queued it.
    #[must_use]
    pub fn settling(self, device: SimDevice) -> Self {
        Self {
            settles: Some(device),
            ..self
        }
    }

    /// `caching-allocator` (several blocks per size) or `recycling-pool`
    /// (one).
    pub fn name(&self) -> &'static str {
        if self.blocks > 1 {
            "caching-allocator"
        } else {
            "recycling-pool"
        }
    }

    /// The output in a cached block: a free one of its size, refilled; or
    /// the fresh output, whose block is kept while there is room.
    fn cache<T: Element>(&self, output: Tensor) -> tenferro_tensor::Result<Tensor> {
        const OP: &str = "CachingAllocator::transfer_blocking";
        let Some(fresh) = crate::sim_storage_of::<T>(&output) else {
            return Ok(output);
        };
        if fresh.completion() != StorageCompletion::Complete {
            return Ok(output);
        }
        let key = (
            TypeId::of::<T>(),
            BackendStorage::len(fresh),
            fresh.domain(),
        );
        let mut cached = lock(&self.cached);
        let blocks = cached.entry(key).or_default();
        let free = blocks
            .iter()
            .filter_map(|block| block.downcast_ref::<SimStorage<T>>())
            .find(|block| block.handles() == 1 && block.family() == fresh.family())
            .map(SimStorage::alias);
        let Some(block) = free else {
            if blocks.len() < self.blocks {
                blocks.push(Box::new(fresh.alias()));
            }
            return Ok(output);
        };
        drop(cached);
        if let Some(device) = &self.settles {
            device.release_all();
        }
        let values = fresh
            .map_read()
            .map_err(|error| tenferro_tensor::Error::host_access(OP, error))?
            .to_vec();
        block
            .overwrite(&values)
            .map_err(|error| tenferro_tensor::Error::host_access(OP, error))?;
        let shape = output.shape().to_vec();
        let placement = output.placement().clone();
        drop(output);
        TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(block)),
            placement,
        )
        .map(Tensor::from_typed)
    }
}

impl TransferProvider for CachingAllocator {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        Ok(with_element!(output.dtype(), T => self.cache::<T>(output)?,
            external => output))
    }
}

/// An input a [`ContentCache`] remembers: element type, shape and the
/// bits of every element.
type Remembered = (TypeId, Vec<usize>, Vec<u8>);

/// How many inputs a [`ContentCache`] remembers.
const REMEMBERED: usize = 16;

/// A correct provider around `inner` that remembers its last inputs whole
/// (element type, shape and every element's bits) and, for an input equal
/// to one of them, fills the output from the remembered values.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_mock_devices::providers::ContentCache;
/// use tenferro_mock_devices::{SimDevice, SimUpload};
///
/// let device = SimDevice::new(0).unwrap();
/// let cache = ContentCache::new(Arc::new(SimUpload::new(device)));
/// assert!(format!("{cache:?}").contains("ContentCache"));
/// ```
pub struct ContentCache {
    inner: Arc<dyn TransferProvider>,
    remembered: Mutex<VecDeque<Remembered>>,
}

impl fmt::Debug for ContentCache {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ContentCache")
            .field("remembered", &lock(&self.remembered).len())
            .finish_non_exhaustive()
    }
}

impl ContentCache {
    /// `inner` with a cache of whole inputs.
    pub fn new(inner: Arc<dyn TransferProvider>) -> Self {
        Self {
            inner,
            remembered: Mutex::new(VecDeque::new()),
        }
    }

    fn answer<T: Element>(&self, mut output: Tensor) -> tenferro_tensor::Result<Tensor> {
        let values = super::broken::values_of::<T>(&output)?;
        let mut bytes = Vec::new();
        T::extend_bytes(&values, &mut bytes);
        let shape = output.shape().to_vec();
        let mut remembered = lock(&self.remembered);
        let hit = remembered
            .iter()
            .find(|(kind, known, image)| {
                *kind == TypeId::of::<T>() && *known == shape && *image == bytes
            })
            .map(|(_, _, image)| T::from_bytes(image));
        match hit {
            Some(values) => {
                drop(remembered);
                super::broken::write_values(&mut output, &values)?;
            }
            None => {
                if remembered.len() == REMEMBERED {
                    remembered.pop_front();
                }
                remembered.push_back((TypeId::of::<T>(), shape, bytes));
            }
        }
        Ok(output)
    }
}

impl TransferProvider for ContentCache {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        Ok(
            with_element!(output.dtype(), T => self.answer::<T>(output)?,
            external => output),
        )
    }
}
