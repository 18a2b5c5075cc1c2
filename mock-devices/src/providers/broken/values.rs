//! Value faults: the correct output's elements rewritten in place.

use tenferro_tensor::{DType, Error, Tensor, TensorRead};

use super::{Fault, values_of, write_values};
use crate::{Element, compact_strides, strided_positions};

pub(super) fn corrupt_values<T: Element>(
    fault: Fault,
    input: &TensorRead<'_>,
    output: &mut Tensor,
) -> tenferro_tensor::Result<()> {
    let values = values_of::<T>(output)?;
    let mut bytes = Vec::new();
    T::extend_bytes(&values, &mut bytes);
    let width = T::WIDTH;
    match fault {
        Fault::OneUlp => bump_first(&mut bytes, T::DTYPE),
        Fault::CornerC64OddLastDim => {
            let shape = input.shape();
            if T::DTYPE == DType::C64
                && shape.len() >= 2
                && shape.last().is_some_and(|last| last % 2 == 1)
            {
                bump_first(&mut bytes, T::DTYPE);
            }
        }
        Fault::CornerLastOfOffsetView => {
            let offset = T::typed_view(input.clone().tensor_view()).map_or(0, |view| view.offset());
            if matches!(input, TensorRead::View(_)) && offset != 0 && !values.is_empty() {
                let last = (values.len() - 1) * width;
                bump_first(&mut bytes[last..], T::DTYPE);
            }
        }
        Fault::CornerAbove4096 => {
            if values.len() > 4096 {
                bump_first(&mut bytes, T::DTYPE);
            }
        }
        Fault::CanonicalNan => for_each_float_part(&mut bytes, T::DTYPE, canonicalise_nan),
        Fault::NegativeZeroLost => for_each_float_part(&mut bytes, T::DTYPE, lose_negative_zero),
        Fault::Swapped => {
            let other =
                (1..values.len()).find(|&j| bytes[j * width..(j + 1) * width] != bytes[..width]);
            if let Some(j) = other {
                let (head, tail) = bytes.split_at_mut(j * width);
                head[..width].swap_with_slice(&mut tail[..width]);
            }
        }
        Fault::PartialCopy => {
            let half = values.len() / 2;
            bytes.truncate(half * width);
            T::extend_bytes(&vec![T::POISON; values.len() - half], &mut bytes);
        }
        Fault::IgnoreStrides | Fault::IgnoreOffset => {
            let misread = misread_view::<T>(fault, input, &values)?;
            bytes.clear();
            T::extend_bytes(&misread, &mut bytes);
        }
        _ => {}
    }
    write_values(output, &T::from_bytes(&bytes))
}

/// Read a view the wrong way; positions outside the backing keep the
/// correct element, so only the misread positions differ.
fn misread_view<T: Element>(
    fault: Fault,
    input: &TensorRead<'_>,
    correct: &[T],
) -> tenferro_tensor::Result<Vec<T>> {
    const OP: &str = "Broken::misread_view";
    let view = T::typed_view(input.clone().tensor_view())
        .ok_or_else(|| Error::dtype_mismatch(OP, T::DTYPE, input.dtype()))?;
    let backing: Vec<T> = match view.backend_buffer() {
        Some(storage) => storage
            .map_read()
            .map_err(|error| Error::host_access(OP, error))?
            .to_vec(),
        None => view.host_storage()?.to_vec(),
    };
    let shape = view.shape().to_vec();
    let (strides, offset) = match fault {
        Fault::IgnoreStrides => (compact_strides(&shape), view.offset()),
        _ => (view.strides().to_vec(), 0),
    };
    let mut out = correct.to_vec();
    for (slot, position) in out
        .iter_mut()
        .zip(strided_positions(&shape, &strides, offset))
    {
        if let Some(value) = usize::try_from(position).ok().and_then(|p| backing.get(p)) {
            *slot = *value;
        }
    }
    Ok(out)
}

fn bump_first(bytes: &mut [u8], dtype: DType) {
    match dtype {
        DType::Bool => {
            if let Some(first) = bytes.first_mut() {
                *first ^= 1;
            }
        }
        DType::F32 | DType::I32 | DType::C32 => {
            if let Some(chunk) = bytes.get_mut(..4) {
                let mut image = [0_u8; 4];
                image.copy_from_slice(chunk);
                chunk.copy_from_slice(&u32::from_le_bytes(image).wrapping_add(1).to_le_bytes());
            }
        }
        _ => {
            if let Some(chunk) = bytes.get_mut(..8) {
                let mut image = [0_u8; 8];
                image.copy_from_slice(chunk);
                chunk.copy_from_slice(&u64::from_le_bytes(image).wrapping_add(1).to_le_bytes());
            }
        }
    }
}

/// Apply `edit` to every float (or complex part) image; width 4 or 8.
fn for_each_float_part(bytes: &mut [u8], dtype: DType, edit: fn(&mut [u8])) {
    let part = match dtype {
        DType::F32 | DType::C32 => 4,
        DType::F64 | DType::C64 => 8,
        _ => return,
    };
    bytes.chunks_exact_mut(part).for_each(edit);
}

fn canonicalise_nan(part: &mut [u8]) {
    if part.len() == 4 {
        let mut image = [0_u8; 4];
        image.copy_from_slice(part);
        if f32::from_le_bytes(image).is_nan() {
            part.copy_from_slice(&f32::NAN.to_le_bytes());
        }
    } else {
        let mut image = [0_u8; 8];
        image.copy_from_slice(part);
        if f64::from_le_bytes(image).is_nan() {
            part.copy_from_slice(&f64::NAN.to_le_bytes());
        }
    }
}

fn lose_negative_zero(part: &mut [u8]) {
    let negative_zero_high = part.len() - 1;
    if part[negative_zero_high] == 0x80 && part[..negative_zero_high].iter().all(|&byte| byte == 0)
    {
        part[negative_zero_high] = 0;
    }
}
