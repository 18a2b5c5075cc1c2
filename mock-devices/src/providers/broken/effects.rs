//! Faults that leave the output right and break what else a transfer
//! touches: the input it only borrowed ([`Fault::WritesInput`]), the
//! outputs it returned before ([`Fault::ReusesLiveOutput`]) and the
//! device's memory ([`Fault::LeaksEveryFifth`],
//! [`Fault::LeaksOnDriverThread`]). Each acts only on simulated memory (a
//! [`SimStorage`]: a simulated device's, or host memory of an allocation
//! domain that is `SimStorage` too); plain host memory is left alone.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use tenferro_tensor::{
    AllocationDomainId, BackendStorage, Error, StorageBuffer, Tensor, TensorRead, TypedTensor,
};

use super::{Fault, sim_storage};
use crate::storage::WeakSimStorage;
use crate::{Element, SimStorage, StorageCompletion, with_element};

/// Bytes of the buffer a [`Fault::LeaksOnDriverThread`] driver thread
/// allocates on each transfer.
const DRIVER_BUFFER_BYTES: usize = 64;

/// [`Fault::LeaksEveryFifth`] keeps one output allocation in this many.
const LEAK_PERIOD: u64 = 5;

/// The pools remember at most this many sizes before forgetting those no
/// longer alive, so a long run does not grow them without bound.
const POOL_LIMIT: usize = 256;

/// A pool's slot: the last output allocation of one (thread, element type,
/// element count, domain), held weakly.
type PoolKey = (ThreadId, TypeId, usize, AllocationDomainId);

/// A weak handle of any element type, as a pool remembers it.
trait Remembered: Send + Sync {
    /// Whether the allocation is still held by someone.
    fn alive(&self) -> bool;
    /// The typed handle, to downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Element> Remembered for WeakSimStorage<T> {
    fn alive(&self) -> bool {
        self.is_alive()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What the side-effect faults of one [`super::Broken`] keep between
/// transfers: the output pool, the count of outputs, and the allocations
/// it leaks on purpose.
#[derive(Default)]
pub(super) struct SideEffects {
    pool: Mutex<HashMap<PoolKey, Box<dyn Remembered>>>,
    outputs: AtomicU64,
    kept: Mutex<Vec<Box<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for SideEffects {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SideEffects")
            .field("pooled", &lock(&self.pool).len())
            .field("outputs", &self.outputs.load(Ordering::Relaxed))
            .field("kept", &lock(&self.kept).len())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SideEffects {
    /// Apply the side-effect faults among `faults` to a correct transfer of
    /// `input` that returned `output`; the output that goes back.
    pub(super) fn apply(
        &self,
        faults: &[Fault],
        input: &TensorRead<'_>,
        output: Tensor,
    ) -> tenferro_tensor::Result<Tensor> {
        if faults.contains(&Fault::WritesInput) {
            with_element!(input.dtype(), T => {
                with_input_storage::<T, ()>(input, SimStorage::scribble);
            }, external => {});
        }
        with_element!(output.dtype(), T => self.apply_to_output::<T>(faults, input, output),
            external => Ok(output))
    }

    fn apply_to_output<T: Element>(
        &self,
        faults: &[Fault],
        input: &TensorRead<'_>,
        mut output: Tensor,
    ) -> tenferro_tensor::Result<Tensor> {
        if faults.contains(&Fault::ReusesLiveOutput) {
            output = self.reuse_live_output::<T>(output)?;
        }
        if faults.contains(&Fault::LeaksEveryFifth) {
            self.leak_every_fifth::<T>(&output);
        }
        if faults.contains(&Fault::LeaksOnDriverThread) {
            self.leak_on_driver_thread::<T>(input, &output);
        }
        Ok(output)
    }

    /// [`Fault::ReusesLiveOutput`]: hand out this thread's last output
    /// allocation of the same size again, with the new values, while
    /// someone still holds it; else keep the fresh output and remember it.
    fn reuse_live_output<T: Element>(&self, output: Tensor) -> tenferro_tensor::Result<Tensor> {
        const OP: &str = "Broken::reuse_live_output";
        let Some(fresh) = sim_storage::<T>(&output) else {
            return Ok(output);
        };
        if fresh.completion() != StorageCompletion::Complete {
            return Ok(output);
        }
        let key = (
            std::thread::current().id(),
            TypeId::of::<T>(),
            BackendStorage::len(fresh),
            fresh.domain(),
        );
        let mut pool = lock(&self.pool);
        let live = pool
            .get(&key)
            .and_then(|slot| slot.as_any().downcast_ref::<WeakSimStorage<T>>())
            .and_then(WeakSimStorage::upgrade)
            .filter(|old| {
                old.completion() == StorageCompletion::Complete && old.family() == fresh.family()
            });
        let Some(old) = live else {
            if pool.len() >= POOL_LIMIT {
                pool.retain(|_, slot| slot.alive());
            }
            pool.insert(key, Box::new(fresh.downgrade()));
            return Ok(output);
        };
        drop(pool);
        // The bug: the allocation is still in use by an earlier output, and
        // the new values overwrite it under that output's holder.
        let values = fresh
            .map_read()
            .map_err(|error| Error::host_access(OP, error))?
            .to_vec();
        old.overwrite(&values)
            .map_err(|error| Error::host_access(OP, error))?;
        let shape = output.shape().to_vec();
        let placement = output.placement().clone();
        drop(output);
        TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(old)),
            placement,
        )
        .map(Tensor::from_typed)
    }

    /// [`Fault::LeaksEveryFifth`]: every fifth output in simulated memory
    /// is kept alive forever.
    fn leak_every_fifth<T: Element>(&self, output: &Tensor) {
        let Some(storage) = sim_storage::<T>(output) else {
            return;
        };
        let count = self.outputs.fetch_add(1, Ordering::SeqCst) + 1;
        if count.is_multiple_of(LEAK_PERIOD) {
            lock(&self.kept).push(Box::new(storage.alias()));
        }
    }

    /// [`Fault::LeaksOnDriverThread`]: a thread of the provider's own (a
    /// driver thread) allocates a small buffer in the output's simulated
    /// memory (else the input's) and it is kept alive forever.
    fn leak_on_driver_thread<T: Element>(&self, input: &TensorRead<'_>, output: &Tensor) {
        let allocate = |anchor: &SimStorage<T>| {
            std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .name("broken-provider-driver".to_owned())
                    .spawn_scoped(scope, || anchor.sibling(vec![0_u8; DRIVER_BUFFER_BYTES]))
                    .ok()?
                    .join()
                    .ok()
            })
        };
        let buffer = match sim_storage::<T>(output) {
            Some(storage) => allocate(storage),
            None => with_input_storage::<T, _>(input, allocate).flatten(),
        };
        if let Some(buffer) = buffer {
            lock(&self.kept).push(Box::new(buffer));
        }
    }
}

/// `f` of the simulated storage backing `input` (owned or a view), if its
/// storage is simulated.
fn with_input_storage<T: Element, R>(
    input: &TensorRead<'_>,
    f: impl FnOnce(&SimStorage<T>) -> R,
) -> Option<R> {
    let view = T::typed_view(input.clone().tensor_view())?;
    let storage = view
        .backend_buffer()?
        .as_any()
        .downcast_ref::<SimStorage<T>>()?;
    Some(f(storage))
}
