//! Metadata faults: the correct output rebuilt with a forged dtype, shape,
//! length, placement, backend family or allocation domain.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, DType, Error, HostAccessError, HostReadGuard,
    HostWriteGuard, MemoryKind, Placement, StorageBuffer, Tensor, TypedTensor,
};

use super::{Fault, sim_storage, values_of};
use crate::{AllocationLedger, Element, SIM_FAMILY, SimStorage, with_element};

/// Backend family a [`Fault::WrongFamily`] output claims.
pub const FORGED_FAMILY: &str = "tenferro-mock.forged";

/// The dtype a [`Fault::WrongDtype`] output has.
pub fn wrong_dtype_of(dtype: DType) -> DType {
    match dtype {
        DType::F32 => DType::F64,
        DType::F64 => DType::F32,
        DType::I32 => DType::I64,
        DType::I64 | DType::Bool => DType::I32,
        DType::C32 => DType::C64,
        _ => DType::C32,
    }
}

/// Overrides for the storage identity of a rebuilt output.
#[derive(Default)]
struct Forgery {
    family: Option<&'static str>,
    domain: Option<AllocationDomainId>,
    placement: Option<Placement>,
    lie: bool,
}

pub(super) fn break_metadata<T: Element>(
    fault: Fault,
    output: Tensor,
) -> tenferro_tensor::Result<Tensor> {
    let shape = output.shape().to_vec();
    let values = values_of::<T>(&output)?;
    let placement = output.placement().clone();
    match fault {
        Fault::WrongDtype => with_element!(wrong_dtype_of(T::DTYPE), U => {
            let zeros = U::from_bytes(&vec![0_u8; U::WIDTH * values.len()]);
            rebuild::<T, U>(&output, shape, zeros, Forgery::default())
        }, external => Ok(output)),
        Fault::RankChanged => {
            let mut longer = shape;
            longer.push(1);
            rebuild::<T, T>(&output, longer, values, Forgery::default())
        }
        Fault::DimsPermuted => {
            let reversed: Vec<usize> = shape.into_iter().rev().collect();
            rebuild::<T, T>(&output, reversed, values, Forgery::default())
        }
        Fault::LyingLength => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                lie: true,
                ..Forgery::default()
            },
        ),
        Fault::HostPlacement => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                placement: Some(Placement::default()),
                ..Forgery::default()
            },
        ),
        Fault::WrongOrdinal => {
            let mut moved = placement;
            if let Some(device) = moved.device.as_mut() {
                device.ordinal += 1;
            } else {
                moved.memory_kind = MemoryKind::Device;
            }
            rebuild::<T, T>(
                &output,
                shape,
                values,
                Forgery {
                    placement: Some(moved),
                    ..Forgery::default()
                },
            )
        }
        Fault::ForeignDomain => {
            let family = sim_storage::<T>(&output).map_or(SIM_FAMILY, SimStorage::family);
            rebuild::<T, T>(
                &output,
                shape,
                values,
                Forgery {
                    family: Some(family),
                    domain: Some(AllocationDomainId::fresh()),
                    ..Forgery::default()
                },
            )
        }
        Fault::WrongFamily => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                family: Some(FORGED_FAMILY),
                ..Forgery::default()
            },
        ),
        _ => Ok(output),
    }
}

/// A tensor like `output` (same storage identity and placement unless
/// forged) holding `data` in `shape`.
fn rebuild<T: Element, U: Element>(
    output: &Tensor,
    shape: Vec<usize>,
    data: Vec<U>,
    forgery: Forgery,
) -> tenferro_tensor::Result<Tensor> {
    let placement = forgery
        .placement
        .clone()
        .unwrap_or_else(|| output.placement().clone());
    let original = sim_storage::<T>(output);
    let storage = match original {
        Some(storage) => Some(storage.rehome(
            data,
            forgery.family.unwrap_or(storage.family()),
            forgery.domain.unwrap_or(storage.domain()),
        )),
        None if forgery.family.is_some() || forgery.domain.is_some() || forgery.lie => {
            Some(SimStorage::new(
                data,
                forgery.family.unwrap_or(SIM_FAMILY),
                forgery.domain.unwrap_or_else(AllocationDomainId::fresh),
                Arc::new(AllocationLedger::default()),
            ))
        }
        None => {
            return TypedTensor::<U>::from_buffer_col_major(
                shape,
                StorageBuffer::Host(data),
                placement,
            )
            .map(Tensor::from_typed);
        }
    };
    let Some(storage) = storage else {
        return Err(Error::runtime_state(
            "Broken::rebuild",
            "no storage to rebuild",
        ));
    };
    if forgery.lie {
        let armed = Arc::new(AtomicBool::new(false));
        let lying = LyingStorage {
            inner: storage,
            armed: Arc::clone(&armed),
        };
        let tensor = TypedTensor::<U>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(lying)),
            placement,
        )?;
        armed.store(true, Ordering::SeqCst);
        return Ok(Tensor::from_typed(tensor));
    }
    TypedTensor::<U>::from_buffer_col_major(
        shape,
        StorageBuffer::Backend(Box::new(storage)),
        placement,
    )
    .map(Tensor::from_typed)
}

/// Storage that reports one element more than it holds once armed, after
/// tenferro validated it at construction.
#[derive(Debug)]
struct LyingStorage<T> {
    inner: SimStorage<T>,
    armed: Arc<AtomicBool>,
}

impl<T: Clone + std::fmt::Debug + Send + Sync + 'static> BackendStorage<T> for LyingStorage<T> {
    fn backend_family(&self) -> &'static str {
        self.inner.backend_family()
    }

    fn len(&self) -> usize {
        self.inner.len() + usize::from(self.armed.load(Ordering::SeqCst))
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        self.inner.allocation_domain()
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        self.inner.allocation_id()
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        self.inner.map_read()
    }

    fn map_write(&mut self) -> Result<HostWriteGuard<'_, T>, HostAccessError> {
        self.inner.map_write()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
