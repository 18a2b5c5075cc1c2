//! The element types the device carries, and reading any host or device
//! tensor read (owned or a strided view) into compact column-major order.

use std::fmt::Debug;

use crate::storage::VendorStorage;

use tenferro_tensor::{
    Complex, DType, Error, Result, TensorRead, TensorScalar, TensorView, TypedTensorView,
};

/// One of the seven element types the device's memory holds.
pub trait DeviceScalar: TensorScalar + Debug {
    /// What fresh device memory holds until a copy lands in it: a pattern
    /// (`0xa5` bytes; a negative NaN with a payload for floats) that no
    /// correct copy produces by accident.
    const POISON: Self;

    /// Zero (`false` for `bool`): what cleared memory holds.
    const ZERO: Self;

    /// The typed view inside an erased view, if it holds this type.
    fn typed_view(view: TensorView<'_>) -> Option<TypedTensorView<'_, Self>>;
}

macro_rules! device_scalar {
    ($($ty:ty => $variant:ident, $poison:expr, $zero:expr;)+) => {$(
        impl DeviceScalar for $ty {
            const POISON: Self = $poison;
            const ZERO: Self = $zero;

            fn typed_view(view: TensorView<'_>) -> Option<TypedTensorView<'_, Self>> {
                match view {
                    TensorView::$variant(view) => Some(view),
                    _ => None,
                }
            }
        }
    )+};
}

device_scalar! {
    f32 => F32, f32::from_bits(0xffa5_a5a5), 0.0;
    f64 => F64, f64::from_bits(0xffa5_a5a5_a5a5_a5a5), 0.0;
    i32 => I32, 0xa5a5_a5a5_u32 as i32, 0;
    i64 => I64, 0xa5a5_a5a5_a5a5_a5a5_u64 as i64, 0;
    bool => Bool, true, false;
    Complex<f32> => C32, Complex::new(f32::from_bits(0xffa5_a5a5), f32::from_bits(0xffa5_a5a5)), Complex::new(0.0, 0.0);
    Complex<f64> => C64, Complex::new(f64::from_bits(0xffa5_a5a5_a5a5_a5a5), f64::from_bits(0xffa5_a5a5_a5a5_a5a5)), Complex::new(0.0, 0.0);
}

/// Run `$body` with `$T` bound to the Rust type of `$dtype`; any other
/// dtype evaluates `$other`.
macro_rules! with_scalar {
    ($dtype:expr, $T:ident => $body:expr, other => $other:expr) => {
        match $dtype {
            ::tenferro_tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            ::tenferro_tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            ::tenferro_tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            ::tenferro_tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            ::tenferro_tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            ::tenferro_tensor::DType::C32 => {
                type $T = ::tenferro_tensor::Complex<f32>;
                $body
            }
            ::tenferro_tensor::DType::C64 => {
                type $T = ::tenferro_tensor::Complex<f64>;
                $body
            }
            _ => $other,
        }
    };
}
pub(crate) use with_scalar;

/// The error for a dtype the device does not carry.
pub(crate) fn unsupported_dtype(op: &'static str, dtype: DType) -> Error {
    Error::unsupported(
        op,
        format!("the vendor's device carries the seven preset dtypes, not {dtype:?}"),
    )
}

/// The logical values of `input` in column-major order, honouring its
/// shape, strides and offset (negative steps and permuted axes included);
/// the device's own memory is read as its kernels read it (also where the
/// host cannot map it), any other backend storage through `map_read`.
///
/// # Errors
///
/// A dtype mismatch when `input` does not hold `T`, a host-access error
/// when its storage cannot be mapped (a copy into it still in flight), or a
/// runtime-state error when the view reaches outside its storage.
pub fn read_compact<T: DeviceScalar>(input: &TensorRead<'_>) -> Result<Vec<T>> {
    const OP: &str = "example_vendor_device::read_compact";
    let view = T::typed_view(input.clone().tensor_view())
        .ok_or_else(|| Error::dtype_mismatch(OP, T::dtype(), input.dtype()))?;
    if let Some(buffer) = view.backend_buffer() {
        // The device's own memory is read as its kernels read it, mapped
        // or not; any other backend's through `map_read`.
        let guard = match buffer.as_any().downcast_ref::<VendorStorage<T>>() {
            Some(storage) => storage.read_on_device(),
            None => buffer.map_read(),
        }
        .map_err(|error| Error::host_access(OP, error))?;
        return gather(view.shape(), view.strides(), view.offset(), &guard);
    }
    match view.host_storage() {
        Ok(backing) => gather(view.shape(), view.strides(), view.offset(), backing),
        // Storage-group roots (some tenferro-cpu outputs) have no plain
        // backing slice: let tenferro materialize them.
        Err(_) => view.to_col_major()?.as_view().with_host_read(<[T]>::to_vec),
    }
}

/// The elements of a strided layout over `backing`, in column-major order.
fn gather<T: Copy>(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    backing: &[T],
) -> Result<Vec<T>> {
    const OP: &str = "example_vendor_device::gather";
    let count: usize = shape.iter().product();
    let mut values = Vec::with_capacity(count);
    let mut index = vec![0_usize; shape.len()];
    let mut position = offset;
    for _ in 0..count {
        let value = usize::try_from(position)
            .ok()
            .and_then(|slot| backing.get(slot))
            .ok_or_else(|| Error::runtime_state(OP, "the view reaches outside its storage"))?;
        values.push(*value);
        for ((at, &extent), &stride) in index.iter_mut().zip(shape).zip(strides) {
            *at += 1;
            position += stride;
            if *at < extent {
                break;
            }
            position -= stride * extent as isize;
            *at = 0;
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_honours_offset_negative_steps_and_permutation() {
        let backing = [0, 1, 2, 3, 4, 5];
        // Reversed: stride -1 from the last element.
        assert_eq!(gather(&[3], &[-1], 5, &backing).unwrap(), vec![5, 4, 3]);
        // A 2x2 view with strides (2, 1) starting at element 1.
        assert_eq!(
            gather(&[2, 2], &[2, 1], 1, &backing).unwrap(),
            vec![1, 3, 2, 4]
        );
        // Out of bounds is an error, not a panic.
        assert!(gather(&[2], &[4], 3, &backing).is_err());
        assert!(gather::<i32>(&[0, 3], &[1, 1], 0, &[]).unwrap().is_empty());
    }
}
