//! Element-by-element comparison of two byte images of a tensor, in words
//! a provider author can act on: how many elements differ, the first and
//! the last, each with its neighbours, in decimal and hex.

use tenferro_tensor::DType;

use crate::{Element, element_width, with_element};

/// Compare two images of `dtype` elements laid out in `shape`, element by
/// element: `None` when equal, else how many differ and the first and last.
pub(crate) fn compare_images(
    dtype: DType,
    shape: &[usize],
    expected: &[u8],
    actual: &[u8],
) -> Option<String> {
    let width = element_width(dtype)?;
    let count = expected.len() / width;
    if actual.len() != expected.len() {
        return Some(format!(
            "the output buffer was read as {} elements ({} bytes), its shape and length say {} ({} bytes): map_read handed out a different number of elements than len reports",
            actual.len() / width,
            actual.len(),
            expected.len() / width,
            expected.len()
        ));
    }
    if actual == expected {
        return None;
    }
    let wrong: Vec<usize> = expected
        .chunks_exact(width)
        .zip(actual.chunks_exact(width))
        .enumerate()
        .filter_map(|(index, (want, got))| (want != got).then_some(index))
        .collect();
    let (&first, &last) = (wrong.first()?, wrong.last()?);
    let describe = |index: usize| {
        let element = |image: &[u8], at: usize| render(dtype, &image[at * width..(at + 1) * width]);
        let before = if index > 0 {
            format!("[{}] {}, ", index - 1, element(actual, index - 1))
        } else {
            String::new()
        };
        let after = if index + 1 < count {
            format!(", [{}] {}", index + 1, element(actual, index + 1))
        } else {
            String::new()
        };
        format!(
            "at {:?} (element {index}): expected {}, actual {}; actual around it: {before}*[{index}] {}*{after}",
            unravel(index, shape),
            element(expected, index),
            element(actual, index),
            element(actual, index),
        )
    };
    let mut message = format!(
        "{} of {} elements differ; first {}",
        wrong.len(),
        count,
        describe(first)
    );
    if last != first {
        message.push_str(&format!("; last {}", describe(last)));
    }
    Some(message)
}

/// Column-major multi-index of element `index` in `shape`.
fn unravel(mut index: usize, shape: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .map(|&extent| {
            let coordinate = index % extent.max(1);
            index /= extent.max(1);
            coordinate
        })
        .collect()
}

/// `decimal (hex)` of one element image.
fn render(dtype: DType, image: &[u8]) -> String {
    let decimal = with_element!(dtype, T => T::from_bytes(image).first().map(|value| format!("{value:?}")).unwrap_or_default(),
        external => String::new());
    let hex = match dtype {
        DType::C32 | DType::C64 => {
            let (re, im) = image.split_at(image.len() / 2);
            format!("0x{}:0x{}", hex_le(re), hex_le(im))
        }
        _ => format!("0x{}", hex_le(image)),
    };
    format!("{decimal} ({hex})")
}

fn hex_le(image: &[u8]) -> String {
    image
        .iter()
        .rev()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
