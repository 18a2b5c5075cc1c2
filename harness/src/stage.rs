//! Materialising a case's input on the source endpoint, as an owned tensor
//! or as a strided view that tenferro itself builds.

use tenferro_mock_devices::{Element, compact_strides, with_element};
use tenferro_tensor::{StridedSliceSpec, Tensor, TensorRead, TypedTensorView};

use crate::case::Filler;
use crate::{Case, Endpoint, HarnessError, Layout, ViewSpec};

/// Build `case`'s input on `source` and hand it to `f`.
///
/// # Errors
///
/// Returns [`HarnessError::Stage`] if tenferro rejects the tensor or view.
pub(crate) fn with_input<R>(
    source: &Endpoint,
    case: &Case,
    f: impl FnOnce(TensorRead<'_>) -> R,
) -> Result<R, HarnessError> {
    with_element!(case.dtype(), T => stage_typed::<T, R>(source, case, f),
        external => Err(HarnessError::InvalidCase { reason: format!("dtype {:?} is not a preset dtype", case.dtype()) }))
}

fn stage_typed<T: Element + Filler, R>(
    source: &Endpoint,
    case: &Case,
    f: impl FnOnce(TensorRead<'_>) -> R,
) -> Result<R, HarnessError> {
    let stage = |source: tenferro_tensor::Error| HarnessError::Stage { source };
    match (source, case.layout()) {
        (Endpoint::Host(host), Layout::Owned) if host.domain().is_some() => {
            let domain = host.domain().ok_or_else(|| HarnessError::InvalidCase {
                reason: "host domain vanished".into(),
            })?;
            let tensor = domain
                .tensor(case.shape().to_vec(), case.typed_values::<T>())
                .map_err(stage)?;
            Ok(f(TensorRead::from_tensor(&tensor)))
        }
        (Endpoint::Host(host), Layout::View(spec)) if host.domain().is_some() => {
            let domain = host.domain().ok_or_else(|| HarnessError::InvalidCase {
                reason: "host domain vanished".into(),
            })?;
            let tensor = domain
                .tensor(spec.backing_shape.clone(), case.backing_values::<T>())
                .map_err(stage)?;
            carve_tensor::<T, R>(&tensor, spec, f)
        }
        (Endpoint::Host(_), Layout::Owned) => {
            let tensor =
                Tensor::from_vec_col_major(case.shape().to_vec(), case.typed_values::<T>())
                    .map_err(stage)?;
            Ok(f(TensorRead::from_tensor(&tensor)))
        }
        (Endpoint::Host(_), Layout::View(spec)) => {
            let backing = case.backing_values::<T>();
            let strides = compact_strides(&spec.backing_shape);
            let base = TypedTensorView::from_slice(&spec.backing_shape, &strides, 0, &backing)
                .map_err(stage)?;
            let view = carve(base, spec).map_err(stage)?;
            Ok(f(TensorRead::from_view(T::erase_view(view))))
        }
        (Endpoint::Sim(device), Layout::Owned) => {
            let tensor = device
                .tensor(case.shape().to_vec(), case.typed_values::<T>())
                .map_err(stage)?;
            Ok(f(TensorRead::from_tensor(&tensor)))
        }
        (Endpoint::Sim(device), Layout::View(spec)) => {
            let tensor = device
                .tensor(spec.backing_shape.clone(), case.backing_values::<T>())
                .map_err(stage)?;
            carve_tensor::<T, R>(&tensor, spec, f)
        }
        #[cfg(feature = "cuda")]
        (Endpoint::Cuda(device), Layout::Owned) => {
            let host = Tensor::from_vec_col_major(case.shape().to_vec(), case.typed_values::<T>())
                .map_err(stage)?;
            let tensor = device
                .stage(&host)
                .map_err(|source| HarnessError::Cuda {
                    context: format!("staging the input on {}", device.name()),
                    source: Box::new(source),
                })?;
            Ok(f(TensorRead::from_tensor(&tensor)))
        }
        #[cfg(feature = "cuda")]
        (Endpoint::Cuda(_), Layout::View(_)) => Err(HarnessError::Unavailable {
            reason: "strided views of CUDA memory are not staged: tenferro-gpu 0.9 downloads owned device tensors only (a known limit)".to_owned(),
        }),
    }
}

/// A view of a backend tensor, carved by tenferro as `spec` says.
fn carve_tensor<T: Element, R>(
    tensor: &Tensor,
    spec: &ViewSpec,
    f: impl FnOnce(TensorRead<'_>) -> R,
) -> Result<R, HarnessError> {
    let typed = tensor
        .as_typed::<T>()
        .ok_or_else(|| HarnessError::InvalidCase {
            reason: "staged tensor lost its dtype".to_owned(),
        })?;
    let view = carve(typed.as_view(), spec).map_err(|source| HarnessError::Stage { source })?;
    Ok(f(TensorRead::from_view(T::erase_view(view))))
}

/// Slice and permute a compact view as `spec` says.
fn carve<'a, T: Element>(
    base: TypedTensorView<'a, T>,
    spec: &ViewSpec,
) -> tenferro_tensor::Result<TypedTensorView<'a, T>> {
    let slices: Vec<StridedSliceSpec> = spec
        .axes
        .iter()
        .map(|axis| {
            let first = axis.first as isize;
            if axis.len == 0 {
                StridedSliceSpec::new(first, Some(first), axis.step)
            } else if axis.step > 0 {
                StridedSliceSpec::new(
                    first,
                    Some(first + axis.step * (axis.len as isize - 1) + 1),
                    axis.step,
                )
            } else {
                StridedSliceSpec::new(
                    first + axis.step * (axis.len as isize - 1),
                    Some(first + 1),
                    axis.step,
                )
            }
        })
        .collect();
    let sliced = base.slice_view(&slices)?;
    if spec.permutation.is_empty() {
        Ok(sliced)
    } else {
        sliced.transpose_view(&spec.permutation)
    }
}
