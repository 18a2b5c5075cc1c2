//! Reading any tensor read (owned, strided view, host or backend) into
//! compact column-major order, which is what a correct transfer produces.

use tenferro_tensor::{Error, Result, TensorRead, TypedTensorView};

use crate::Element;

/// The logical values of `input`, in column-major order, honouring its
/// strides and offset and mapping backend storage through `map_read`.
///
/// # Errors
///
/// Returns a validation error when `input` does not hold `T`, a host-access
/// error when its backend storage cannot be mapped, or an out-of-bounds error
/// when a stride reaches outside the backing buffer.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::read_compact;
/// use tenferro_tensor::{TensorRead, TensorView, TypedTensorView};
///
/// let backing = [0.0_f64, 1.0, 2.0, 3.0, 4.0, 5.0];
/// // A 2x2 view with strides (2, 1) starting at element 1.
/// let view = TypedTensorView::from_slice(vec![2, 2], vec![2, 1], 1, &backing).unwrap();
/// let read = TensorRead::from_view(TensorView::F64(view));
/// assert_eq!(read_compact::<f64>(&read).unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
/// ```
pub fn read_compact<T: Element>(input: &TensorRead<'_>) -> Result<Vec<T>> {
    let view = T::typed_view(input.clone().tensor_view())
        .ok_or_else(|| Error::dtype_mismatch("read_compact", T::DTYPE, input.dtype()))?;
    read_view(&view)
}

/// [`read_compact`] for a typed view.
///
/// # Errors
///
/// As [`read_compact`].
pub fn read_view<T: Element>(view: &TypedTensorView<'_, T>) -> Result<Vec<T>> {
    visit_view(view, <[T]>::to_vec)
}

/// `input`'s logical values in column-major order, compared with
/// `expected` as they are read: a compact layout's straight from its
/// mapped buffer, a strided one's gathered first; their little-endian
/// image only where they differ.
///
/// # Errors
///
/// As [`read_compact`].
pub(crate) fn compare_compact<T: Element>(
    input: &TensorRead<'_>,
    expected: crate::values::compared::ReferenceView<'_>,
) -> Result<crate::Compared> {
    let view = T::typed_view(input.clone().tensor_view())
        .ok_or_else(|| Error::dtype_mismatch("read_compact", T::DTYPE, input.dtype()))?;
    visit_view(&view, |values| {
        crate::values::compared::compare_with::<T>(values, expected)
    })
}

/// `visit` called with the view's logical values in column-major order:
/// borrowed from the mapped buffer where the layout is compact, gathered
/// otherwise.
fn visit_view<T: Element, R>(
    view: &TypedTensorView<'_, T>,
    visit: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    const OP: &str = "read_compact";
    if let Some(buffer) = view.backend_buffer() {
        let guard = buffer
            .map_read()
            .map_err(|error| Error::host_access(OP, error))?;
        return gather_with(view.shape(), view.strides(), view.offset(), &guard, visit);
    }
    match view.host_storage() {
        Ok(backing) => gather_with(view.shape(), view.strides(), view.offset(), backing, visit),
        // Storage-group roots (tenferro-cpu outputs) have no plain backing
        // slice; let tenferro materialize them.
        Err(_) => view.to_col_major()?.as_view().with_host_read(visit),
    }
}

/// Gather the elements of a strided layout over `backing`, column-major.
///
/// # Errors
///
/// Returns an out-of-bounds runtime-state error when an element's linear
/// position falls outside `backing`.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::gather;
///
/// // A reversed vector: stride -1 from the last element.
/// assert_eq!(gather(&[3], &[-1], 2, &[1, 2, 3]).unwrap(), vec![3, 2, 1]);
/// ```
pub fn gather<T: Copy>(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    backing: &[T],
) -> Result<Vec<T>> {
    gather_with(shape, strides, offset, backing, <[T]>::to_vec)
}

/// `visit` called with the elements of a strided layout over `backing`,
/// column-major: a compact layout's are borrowed from `backing`, any
/// other's gathered.
fn gather_with<T: Copy, R>(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    backing: &[T],
    visit: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    const OP: &str = "gather";
    let count: usize = shape.iter().product();
    if count == 0 {
        return Ok(visit(&[]));
    }
    if is_compact(shape, strides) {
        let start = usize::try_from(offset)
            .map_err(|_| Error::runtime_state(OP, "negative offset of a compact layout"))?;
        return backing
            .get(start..start + count)
            .map(visit)
            .ok_or_else(|| Error::runtime_state(OP, "layout reaches past the backing buffer"));
    }
    let gathered = strided_positions(shape, strides, offset)
        .into_iter()
        .map(|position| {
            usize::try_from(position)
                .ok()
                .and_then(|slot| backing.get(slot))
                .copied()
                .ok_or_else(|| {
                    Error::runtime_state(OP, "layout reaches outside the backing buffer")
                })
        })
        .collect::<Result<Vec<T>>>()?;
    Ok(visit(&gathered))
}

/// The linear position of every element of a strided layout, in
/// column-major order of `shape`; positions may fall outside any buffer.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::strided_positions;
///
/// assert_eq!(strided_positions(&[2, 2], &[2, 1], 1), vec![1, 3, 2, 4]);
/// ```
pub fn strided_positions(shape: &[usize], strides: &[isize], offset: isize) -> Vec<isize> {
    let count: usize = shape.iter().product();
    let mut positions = Vec::with_capacity(count);
    let mut index = vec![0_usize; shape.len()];
    let mut position = offset;
    for _ in 0..count {
        positions.push(position);
        for axis in 0..shape.len() {
            index[axis] += 1;
            position += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            position -= strides[axis] * shape[axis] as isize;
            index[axis] = 0;
        }
    }
    positions
}

/// Column-major strides of a compact `shape` (a zero extent counts as one,
/// so an empty tensor still has valid strides).
pub fn compact_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut stride = 1_isize;
    for &extent in shape {
        strides.push(stride);
        stride *= extent.max(1) as isize;
    }
    strides
}

/// Whether `strides` are the compact column-major strides of `shape`
/// (axes of extent one may carry any stride).
pub fn is_compact(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1_isize;
    for (&extent, &stride) in shape.iter().zip(strides) {
        if extent != 1 && stride != expected {
            return false;
        }
        expected *= extent as isize;
    }
    shape.len() == strides.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenferro_tensor::{TensorView, TypedTensorView};

    fn bytes_of(values: &[f64]) -> Vec<u8> {
        let mut bytes = Vec::new();
        f64::extend_bytes(values, &mut bytes);
        bytes
    }

    #[test]
    fn values_compared_as_read_are_the_compact_values() {
        let backing: Vec<f64> = (0..12).map(f64::from).collect();
        for (shape, strides, offset) in [
            (vec![3, 2], vec![1, 3], 2_isize),
            (vec![2, 2], vec![2, 1], 1),
            (vec![3], vec![-2], 8),
            (vec![0, 4], vec![1, 1], 0),
        ] {
            let view = TypedTensorView::from_slice(shape, strides, offset, &backing).unwrap();
            let read = TensorRead::from_view(TensorView::F64(view));
            let compact = bytes_of(&read_compact::<f64>(&read).unwrap());
            assert_eq!(
                compare_compact::<f64>(&read, compact.as_slice().into()).unwrap(),
                crate::Compared::Same
            );
            let mut other = compact.clone();
            other.push(0);
            assert_eq!(
                compare_compact::<f64>(&read, other.as_slice().into()).unwrap(),
                crate::Compared::Image(compact)
            );
        }
    }

    #[test]
    fn a_layout_past_its_backing_fails_as_gather_does() {
        let backing = [1.0_f64, 2.0];
        let error = gather_with(&[3], &[1], 0, &backing, <[f64]>::len).unwrap_err();
        assert_eq!(
            error.to_string(),
            gather(&[3], &[1], 0, &backing).unwrap_err().to_string()
        );
    }
}
