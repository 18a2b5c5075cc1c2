//! Materialising a case's input on the source endpoint, through its
//! adapter, as an owned tensor or as a strided view that tenferro itself
//! builds.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::{Element, panic_message, with_element};
use tenferro_tensor::{StridedSliceSpec, Tensor, TensorRead, TypedTensorView};

use crate::values::case::Filler;
use crate::{Case, Endpoint, HarnessError, Layout, ViewSpec};

/// Build `case`'s input on `source` (its adapter's
/// [`stage`](crate::DeviceEndpoint::stage)) and hand it to `f`.
///
/// # Errors
///
/// The adapter's staging error, [`HarnessError::NothingStaged`] when
/// the adapter never handed an input over, or
/// [`HarnessError::AdapterPanicked`] when its `stage` panicked outside `f`.
pub(crate) fn with_input<R>(
    source: &Endpoint,
    case: &Case,
    f: impl FnOnce(TensorRead<'_>) -> R,
) -> Result<R, HarnessError> {
    let mut f = Some(f);
    let mut result = None;
    // A panic while `f` runs is the run's own (it catches the provider's
    // and the runtime's); one outside it is the adapter's `stage`.
    let running = Cell::new(false);
    let staged = catch_unwind(AssertUnwindSafe(|| {
        source.adapter().stage(case, &mut |input| {
            if let Some(f) = f.take() {
                running.set(true);
                result = Some(f(input));
                running.set(false);
            }
        })
    }));
    match staged {
        Ok(staged) => staged?,
        Err(payload) if running.get() => resume_unwind(payload),
        Err(payload) => {
            return Err(HarnessError::AdapterPanicked {
                endpoint: source.name().to_owned(),
                method: "stage",
                message: panic_message(payload.as_ref()),
            });
        }
    }
    result.ok_or_else(|| HarnessError::NothingStaged {
        endpoint: source.name().to_owned(),
    })
}

/// Build every input of `cases` on `source`, in order, and hand them all
/// to `f` at once: the inputs of a run of several.
///
/// # Errors
///
/// As [`with_input`], for the first input that cannot be staged.
pub(crate) fn with_inputs<R>(
    source: &Endpoint,
    cases: &[Case],
    f: impl FnOnce(&[TensorRead<'_>]) -> R,
) -> Result<R, HarnessError> {
    let mut f = Some(f);
    let mut call = |inputs: &[TensorRead<'_>]| f.take().map(|f| f(inputs));
    nest(source, cases, Vec::new(), &mut call)?.ok_or_else(|| HarnessError::NothingStaged {
        endpoint: source.name().to_owned(),
    })
}

/// Stage `cases` one inside the other, each kept alive while the next is
/// staged, and call `f` with every input staged so far.
fn nest<R>(
    source: &Endpoint,
    cases: &[Case],
    staged: Vec<TensorRead<'_>>,
    f: &mut dyn FnMut(&[TensorRead<'_>]) -> Option<R>,
) -> Result<Option<R>, HarnessError> {
    let Some((case, rest)) = cases.split_first() else {
        return Ok(f(&staged));
    };
    with_input(source, case, |input| {
        let mut more: Vec<TensorRead<'_>> = Vec::with_capacity(staged.len() + 1);
        for read in &staged {
            more.push(read.clone());
        }
        more.push(input);
        nest(source, rest, more, f)
    })?
}

/// See [`crate::stage_via_host`].
pub(crate) fn stage_via_host(
    case: &Case,
    upload: impl FnOnce(Tensor) -> Result<Tensor, HarnessError>,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    with_element!(case.dtype(), T => stage_typed_via_host::<T>(case, upload, use_input),
        external => Err(HarnessError::InvalidCase { reason: format!("dtype {:?} is not a preset dtype", case.dtype()) }))
}

fn stage_typed_via_host<T: Element + Filler>(
    case: &Case,
    upload: impl FnOnce(Tensor) -> Result<Tensor, HarnessError>,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    let stage = |source: tenferro_tensor::Error| HarnessError::Stage { source };
    match case.layout() {
        Layout::Owned => {
            let host = Tensor::from_vec_col_major(case.shape().to_vec(), case.typed_values::<T>())
                .map_err(stage)?;
            let tensor = upload(host)?;
            use_input(TensorRead::from_tensor(&tensor));
            Ok(())
        }
        Layout::View(spec) => {
            let host =
                Tensor::from_vec_col_major(spec.backing_shape.clone(), case.backing_values::<T>())
                    .map_err(stage)?;
            let tensor = upload(host)?;
            carve_tensor::<T>(&tensor, spec, use_input)
        }
    }
}

/// A view of a (host or device) tensor, carved by tenferro as `spec` says.
pub(crate) fn carve_tensor<T: Element>(
    tensor: &Tensor,
    spec: &ViewSpec,
    use_input: &mut dyn FnMut(TensorRead<'_>),
) -> Result<(), HarnessError> {
    let typed = tensor
        .as_typed::<T>()
        .ok_or_else(|| HarnessError::InvalidCase {
            reason: "staged tensor lost its dtype".to_owned(),
        })?;
    let view = carve(typed.as_view(), spec).map_err(|source| HarnessError::Stage { source })?;
    use_input(view);
    Ok(())
}

/// Slice and permute a compact view as `spec` says, then broadcast its
/// axes of step zero (sliced to one element) to their length.
pub(crate) fn carve<'a, T: Element>(
    base: TypedTensorView<'a, T>,
    spec: &ViewSpec,
) -> tenferro_tensor::Result<TensorRead<'a>> {
    let slices: Vec<StridedSliceSpec> = spec
        .axes
        .iter()
        .map(|axis| {
            let first = axis.first as isize;
            if axis.step == 0 {
                // One element, broadcast below.
                StridedSliceSpec::new(first, Some(first + 1), 1)
            } else if axis.len == 0 {
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
    let permuted = if spec.permutation.is_empty() {
        sliced
    } else {
        sliced.transpose_view(&spec.permutation)?
    };
    let read = TensorRead::from_view(T::erase_view(permuted));
    if !spec.broadcasts() {
        return Ok(read);
    }
    // Every axis keeps its place; the sliced ones of one element take
    // their length with stride zero. (`TensorRead::broadcast_in_dim_view`
    // is the metadata-only broadcast tenferro's own public
    // `TensorValue::broadcast_in_dim_view` builds on.)
    let shape = spec.shape();
    let dims: Vec<usize> = (0..shape.len()).collect();
    read.broadcast_in_dim_view(&shape, &dims)
}
