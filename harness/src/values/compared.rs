//! Comparing values as they are read: a read of a tensor (an input after
//! the call, an output) is compared chunk by chunk with the bytes it must
//! hold, and keeps an image of itself only where it differs.

use std::sync::Arc;

use crate::Element;
use crate::values::generated::Generated;

/// What a read must hold: bytes in memory, or a large case's values,
/// made a chunk at a time as the read is compared with them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ReferenceView<'a> {
    /// Bytes held.
    Bytes(&'a [u8]),
    /// Values made on demand (from a seed or the pattern).
    Generated(&'a Generated),
}

impl<'a> ReferenceView<'a> {
    /// Bytes in the whole image.
    pub(crate) fn byte_len(self) -> usize {
        match self {
            ReferenceView::Bytes(bytes) => bytes.len(),
            ReferenceView::Generated(generated) => generated.byte_len(),
        }
    }

    /// Whether `bytes` are the image from byte `offset` on.
    pub(crate) fn matches(self, offset: usize, bytes: &[u8], scratch: &mut Vec<u8>) -> bool {
        match self {
            ReferenceView::Bytes(held) => held.get(offset..offset + bytes.len()) == Some(bytes),
            ReferenceView::Generated(generated) => generated.matches(offset, bytes, scratch),
        }
    }

    /// Whether `bytes` are the whole image.
    pub(crate) fn equals(self, bytes: &[u8]) -> bool {
        bytes.len() == self.byte_len() && self.matches(0, bytes, &mut Vec::new())
    }

    /// The whole image: for generated values, made once and kept by them,
    /// so only what a report needs (a difference to show) asks for it.
    pub(crate) fn bytes(self) -> &'a [u8] {
        match self {
            ReferenceView::Bytes(bytes) => bytes,
            ReferenceView::Generated(generated) => generated.whole(),
        }
    }
}

impl<'a> From<&'a [u8]> for ReferenceView<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        ReferenceView::Bytes(bytes)
    }
}

/// [`ReferenceView`] owned and shared: what a read made later (an output the
/// caller holds, the input after the call) is compared with.
#[derive(Clone, Debug)]
pub(crate) enum Reference {
    /// Bytes held, shared.
    Held(Arc<[u8]>),
    /// Values made on demand, shared.
    Generated(Arc<Generated>),
}

impl Reference {
    /// Borrowed, to compare a read with.
    pub(crate) fn expected(&self) -> ReferenceView<'_> {
        match self {
            Reference::Held(bytes) => ReferenceView::Bytes(bytes),
            Reference::Generated(generated) => ReferenceView::Generated(generated),
        }
    }
}

impl PartialEq for Reference {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Reference::Held(a), Reference::Held(b)) => a == b,
            (Reference::Generated(a), Reference::Generated(b)) if a.same_recipe(b) => true,
            (Reference::Held(bytes), generated) | (generated, Reference::Held(bytes)) => {
                generated.expected().equals(bytes)
            }
            (Reference::Generated(a), Reference::Generated(b)) => {
                ReferenceView::Generated(a).equals(ReferenceView::Generated(b).bytes())
            }
        }
    }
}

impl Eq for Reference {}

/// A read compared, as its bytes were read, with what they must be: the
/// input after the call with what it held before it
/// ([`InputBefore::reference`](crate::InputBefore::reference)), an output with the case's values. Only a
/// read that differs keeps its image, so a case that passes costs no
/// memory beyond its own tensors.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Compared {
    /// Bit for bit what it must be; no image is kept.
    Same,
    /// The whole image as read: it differs (or there was nothing to
    /// compare it with), for the report to say where.
    Image(Vec<u8>),
    /// The read failed.
    Failed {
        /// Why.
        reason: String,
    },
    /// It cannot be read here.
    NotReadable {
        /// Why.
        reason: String,
    },
}

impl Compared {
    /// The bytes read: `same` (what they had to be) where they were the
    /// same, the image where they differed; or why they were not read.
    ///
    /// # Errors
    ///
    /// The reason of a read that failed or could not be made.
    pub fn values<'a>(&'a self, same: &'a [u8]) -> Result<&'a [u8], &'a str> {
        match self {
            Compared::Same => Ok(same),
            Compared::Image(bytes) => Ok(bytes),
            Compared::Failed { reason } | Compared::NotReadable { reason } => Err(reason),
        }
    }
}

/// The elements per chunk a reread compares at a time.
const COMPARED_AT_ONCE: usize = 4096;

/// `values` compared with `reference`, the little-endian image they must
/// have, a chunk at a time as they are read: [`Compared::Same`], or their
/// whole image where any bit differs (or the lengths do). What the Spy does
/// with a returned output's mapped buffer and the rig with the input's.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{Compared, compare_as_read};
///
/// let expected: Vec<u8> = [1.0_f32, -0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(compare_as_read(&[1.0_f32, -0.0], &expected), Compared::Same);
/// // +0.0 and -0.0 are equal numbers but not equal bits.
/// assert!(matches!(compare_as_read(&[1.0_f32, 0.0], &expected), Compared::Image(_)));
/// ```
pub fn compare_as_read<T: Element>(values: &[T], reference: &[u8]) -> Compared {
    compare_with(values, ReferenceView::Bytes(reference))
}

/// [`compare_as_read`] with what the values must be held or generated.
pub(crate) fn compare_with<T: Element>(values: &[T], expected: ReferenceView<'_>) -> Compared {
    let mut chunk_bytes = Vec::new();
    let mut scratch = Vec::new();
    let mut offset = 0;
    for chunk in values.chunks(COMPARED_AT_ONCE) {
        chunk_bytes.clear();
        T::extend_bytes(chunk, &mut chunk_bytes);
        if !expected.matches(offset, &chunk_bytes, &mut scratch) {
            return changed(values);
        }
        offset += chunk_bytes.len();
    }
    if offset == expected.byte_len() {
        Compared::Same
    } else {
        changed(values)
    }
}

fn changed<T: Element>(values: &[T]) -> Compared {
    let mut bytes = Vec::new();
    T::extend_bytes(values, &mut bytes);
    Compared::Image(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(values: &[f64]) -> Vec<u8> {
        let mut bytes = Vec::new();
        f64::extend_bytes(values, &mut bytes);
        bytes
    }

    #[test]
    fn an_unchanged_read_keeps_no_image_and_a_change_anywhere_is_seen() {
        let values: Vec<f64> = (0..3 * COMPARED_AT_ONCE + 7).map(|i| i as f64).collect();
        let reference = image(&values);
        assert_eq!(compare_as_read::<f64>(&values, &reference), Compared::Same);
        // A change in the last, partial chunk, past the first whole ones.
        let mut changed = values.clone();
        *changed.last_mut().unwrap() = -0.0;
        assert_eq!(
            compare_as_read::<f64>(&changed, &reference),
            Compared::Image(image(&changed))
        );
        // A NaN payload differs bit for bit, though both are NaN.
        let mut nan = values.clone();
        nan[COMPARED_AT_ONCE] = f64::from_bits(0x7ff8_0000_0000_0001);
        let mut other = values.clone();
        other[COMPARED_AT_ONCE] = f64::NAN;
        assert_eq!(
            compare_as_read::<f64>(&nan, &image(&other)),
            Compared::Image(image(&nan))
        );
    }

    #[test]
    fn a_read_of_another_length_is_a_change() {
        let values = [1.0_f64, 2.0, 3.0];
        let longer = image(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            compare_as_read::<f64>(&values, &longer),
            Compared::Image(image(&values))
        );
        assert_eq!(
            compare_as_read::<f64>(&values, &longer[..16]),
            Compared::Image(image(&values))
        );
        assert_eq!(compare_as_read::<f64>(&[], &[]), Compared::Same);
    }
}
