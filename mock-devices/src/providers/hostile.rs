//! Hostile output storage: a correct simulated output whose storage
//! misbehaves after the provider returned it (a panic in `len`, `map_read`
//! or `Drop`, a length that changes between calls, a `map_read` shorter
//! than `len`). The storage is the provider's code, so each of these is the
//! provider's fault.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
    HostWriteGuard, Placement, StorageBuffer, Tensor, TypedTensor,
};

use crate::{Element, SimStorage};

/// How a [`HostileStorage`] misbehaves once armed.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Hostility {
    /// `map_read` panics.
    PanicInMapRead,
    /// `len` panics.
    PanicInLen,
    /// Dropping the storage panics (unless the thread is already
    /// unwinding, which would abort the process).
    PanicInDrop,
    /// The first `len` after arming is right, every later one is one more.
    UnstableLength,
    /// `map_read` hands out every element but the last.
    ShortMapRead,
}

/// Simulated storage that misbehaves in one way once armed (after tenferro
/// validated it at construction). `as_any` answers with the simulated
/// storage inside, so the destination engine and the completion probe
/// treat it as the device's own memory: only the hostility differs from a
/// correct output.
#[derive(Debug)]
struct HostileStorage<T> {
    inner: SimStorage<T>,
    hostility: Hostility,
    armed: Arc<AtomicBool>,
    len_calls: AtomicUsize,
}

impl<T> HostileStorage<T> {
    fn armed(&self) -> bool {
        self.armed.load(Ordering::SeqCst)
    }
}

impl<T> Drop for HostileStorage<T> {
    fn drop(&mut self) {
        if self.hostility == Hostility::PanicInDrop && self.armed() && !std::thread::panicking() {
            // `inner` is still dropped while this unwinds, so the
            // allocation is released: only the panic is wrong.
            panic!("injected panic in the Drop of a returned storage");
        }
    }
}

impl<T: Element> BackendStorage<T> for HostileStorage<T> {
    fn backend_family(&self) -> &'static str {
        self.inner.backend_family()
    }

    fn len(&self) -> usize {
        let len = self.inner.len();
        if !self.armed() {
            return len;
        }
        match self.hostility {
            Hostility::PanicInLen => panic!("injected panic in the len of a returned storage"),
            Hostility::UnstableLength => {
                if self.len_calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    len
                } else {
                    len + 1
                }
            }
            _ => len,
        }
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        self.inner.allocation_domain()
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        self.inner.allocation_id()
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        if !self.armed() {
            return self.inner.map_read();
        }
        match self.hostility {
            Hostility::PanicInMapRead => {
                panic!("injected panic in the map_read of a returned storage")
            }
            Hostility::ShortMapRead => {
                let values = self.inner.map_read()?;
                let short = values[..values.len().saturating_sub(1)].to_vec();
                Ok(HostReadGuard::new(short))
            }
            _ => self.inner.map_read(),
        }
    }

    fn map_write(&mut self) -> Result<HostWriteGuard<'_, T>, HostAccessError> {
        self.inner.map_write()
    }

    fn as_any(&self) -> &dyn Any {
        self.inner.as_any()
    }
}

/// `output` again, its values in a fresh allocation of the same simulated
/// device behind storage that misbehaves as `hostility` says; a plain host
/// output (no storage of the provider's to misbehave) is returned as it is.
pub(crate) fn hostile<T: Element>(
    output: Tensor,
    values: Vec<T>,
    hostility: Hostility,
) -> tenferro_tensor::Result<Tensor> {
    let Some(storage) = crate::sim_storage_of::<T>(&output) else {
        return Ok(output);
    };
    let armed = Arc::new(AtomicBool::new(false));
    let storage = HostileStorage {
        inner: storage.sibling(values),
        hostility,
        armed: Arc::clone(&armed),
        len_calls: AtomicUsize::new(0),
    };
    let placement: Placement = output.placement().clone();
    let tensor = TypedTensor::<T>::from_buffer_col_major(
        output.shape().to_vec(),
        StorageBuffer::Backend(Box::new(storage)),
        placement,
    )?;
    drop(output);
    armed.store(true, Ordering::SeqCst);
    Ok(Tensor::from_typed(tensor))
}
