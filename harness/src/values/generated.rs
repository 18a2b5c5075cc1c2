//! Values a case makes instead of holding: each element is a function of
//! its index (a seeded hash, or the fixed cases' pattern), so any run of
//! elements can be made again, a chunk at a time, wherever a read is
//! compared with them. A large case then costs no memory of its own
//! beyond the tensors it is staged in.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use tenferro_tensor::DType;

use xxhash_rust::xxh3::xxh3_128;

use crate::element_width;
use crate::values::patterns::{F32_SPECIALS, F64_SPECIALS, mix, pattern_element};

/// The largest case whose values are held (256 KiB): a larger seeded or
/// patterned case makes them, a chunk at a time, wherever a read is
/// compared with them, so it costs no memory beyond the tensors it is
/// staged in. Below it, comparing with bytes held is the faster. (At
/// 1 MiB, the held values of a generated run's inputs, made on the
/// caller's thread, kept about 2 MB of its heap resident for the rest of
/// a deep run.)
pub const HELD_UP_TO_BYTES: usize = 1 << 18;

/// How a case's values are made from their indices.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Made {
    /// Seeded bits mixed with special values: a special value where an
    /// element's hash (keyed by the seed) falls under `specials` (out of
    /// 256).
    Seeded { key: u64, specials: u8 },
    /// The fixed cases' pattern ([`crate::Case::patterned`]).
    Patterned,
    /// Every byte zero ([`crate::Case::zeros`]).
    Zeros,
    /// Runs of one value ([`crate::Case::runs`]).
    Runs,
}

/// A case's values made on demand (seeded or patterned) with a twin's few
/// changed elements; never held, except where someone asks for them whole
/// ([`crate::Case::values`]).
#[derive(Debug)]
pub(crate) struct Generated {
    dtype: DType,
    width: usize,
    count: usize,
    made: Made,
    /// A twin's changed elements: index and image, in index order.
    patches: BTreeMap<usize, Vec<u8>>,
    /// The whole image, made the first time it is asked for.
    whole: OnceLock<Arc<[u8]>>,
    /// A 128-bit digest (XXH3) of each chunk of [`GENERATED_AT_ONCE`]
    /// elements, taken on the first pass over the values (staging them,
    /// or the first comparison): a read is compared with these, not with
    /// the values made again.
    digests: OnceLock<Vec<u128>>,
}

impl Generated {
    /// `count` elements of `dtype` from `seed`, a special value where an
    /// element's hash falls under `specials` (out of 256); `None` for an
    /// external dtype.
    pub(crate) fn seeded(dtype: DType, count: usize, seed: u64, specials: u8) -> Option<Self> {
        Some(Self {
            dtype,
            width: element_width(dtype)?,
            count,
            made: Made::Seeded {
                key: mix(seed),
                specials,
            },
            patches: BTreeMap::new(),
            whole: OnceLock::new(),
            digests: OnceLock::new(),
        })
    }

    /// `count` elements of the fixed cases' pattern of `dtype`; `None` for
    /// an external dtype.
    pub(crate) fn patterned(dtype: DType, count: usize) -> Option<Self> {
        Some(Self {
            dtype,
            width: element_width(dtype)?,
            count,
            made: Made::Patterned,
            patches: BTreeMap::new(),
            whole: OnceLock::new(),
            digests: OnceLock::new(),
        })
    }

    /// `count` elements of `dtype`, every byte zero; `None` for an
    /// external dtype.
    pub(crate) fn zeros(dtype: DType, count: usize) -> Option<Self> {
        Some(Self {
            made: Made::Zeros,
            ..Self::patterned(dtype, count)?
        })
    }

    /// `count` elements of the runs case of `dtype` ([`crate::Case::runs`]);
    /// `None` for an external dtype.
    pub(crate) fn runs(dtype: DType, count: usize) -> Option<Self> {
        Some(Self {
            made: Made::Runs,
            ..Self::patterned(dtype, count)?
        })
    }

    /// The same values, made afresh: nothing made whole, no digests.
    pub(crate) fn remade(&self) -> Self {
        Self {
            dtype: self.dtype,
            width: self.width,
            count: self.count,
            made: self.made,
            patches: self.patches.clone(),
            whole: OnceLock::new(),
            digests: OnceLock::new(),
        }
    }

    /// These values with a twin's changes ([`twin_values`]).
    pub(crate) fn twinned(mut self, seed: u64) -> Self {
        let patches = twin_changes(self.dtype, self.count, seed, |index, out| {
            self.fill(index, 1, out);
        });
        self.patches = patches;
        self
    }

    /// The dtype.
    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    /// Bytes in the whole image.
    pub(crate) fn byte_len(&self) -> usize {
        self.count * self.width
    }

    /// Append the images of `len` elements from element `first` to `out`.
    pub(crate) fn fill(&self, first: usize, len: usize, out: &mut Vec<u8>) {
        let end = (first + len).min(self.count);
        let mut next = first;
        for (&index, image) in self.patches.range(first..end) {
            self.fill_made(next, index, out);
            out.extend_from_slice(image);
            next = index + 1;
        }
        self.fill_made(next, end, out);
    }

    /// Append the made images of elements `first..end`.
    fn fill_made(&self, first: usize, end: usize, out: &mut Vec<u8>) {
        if end <= first {
            return;
        }
        let (key, specials) = match self.made {
            Made::Seeded { key, specials } => (key, specials),
            Made::Patterned => {
                for index in first..end {
                    pattern_element(self.dtype, index, out);
                }
                return;
            }
            Made::Zeros => {
                out.resize(out.len() + (end - first) * self.width, 0);
                return;
            }
            Made::Runs => {
                crate::values::runs::runs_elements(self.dtype, first, end, out);
                return;
            }
        };
        let start = out.len();
        out.resize(start + (end - first) * self.width, 0);
        let images = out[start..].chunks_exact_mut(self.width);
        // One match on the dtype per run of elements, not per element.
        macro_rules! each {
            ($element:expr) => {
                for (image, index) in images.zip(first as u64..) {
                    image.copy_from_slice(&$element(seeded_bits(key, index)));
                }
            };
        }
        match self.dtype {
            DType::F32 => each!(|bits| f32_image(bits, specials, 0)),
            DType::F64 => each!(|bits| f64_image(bits, specials, 0)),
            DType::I32 => each!(|bits| i32_image(bits, specials)),
            DType::I64 => each!(|bits| i64_image(bits, specials)),
            DType::Bool => each!(|bits: u64| [((bits >> 16) & 1) as u8]),
            DType::C32 => each!(|bits| {
                let mut pair = [0_u8; 8];
                pair[..4].copy_from_slice(&f32_image(bits, specials, 0));
                pair[4..].copy_from_slice(&f32_image(bits, specials, 3));
                pair
            }),
            DType::C64 => each!(|bits| {
                let mut pair = [0_u8; 16];
                pair[..8].copy_from_slice(&f64_image(bits, specials, 0));
                pair[8..].copy_from_slice(&f64_image(bits, specials, 3));
                pair
            }),
            _ => {}
        }
    }

    /// The whole image, made once and kept.
    pub(crate) fn whole(&self) -> &Arc<[u8]> {
        self.whole.get_or_init(|| {
            let mut out = Vec::new();
            self.fill(0, self.count, &mut out);
            out.into()
        })
    }

    /// Call `each` with the image of every chunk of [`GENERATED_AT_ONCE`]
    /// elements in turn, made in one buffer; the first pass takes the
    /// chunks' digests as it goes.
    pub(crate) fn for_each_chunk(&self, mut each: impl FnMut(&[u8])) {
        let mut chunk = Vec::with_capacity(GENERATED_AT_ONCE * self.width);
        let mut digests = self
            .digests
            .get()
            .is_none()
            .then(|| Vec::with_capacity(self.count.div_ceil(GENERATED_AT_ONCE)));
        for first in (0..self.count).step_by(GENERATED_AT_ONCE) {
            chunk.clear();
            self.fill(first, GENERATED_AT_ONCE, &mut chunk);
            if let Some(digests) = digests.as_mut() {
                digests.push(xxh3_128(&chunk));
            }
            each(&chunk);
        }
        if let Some(digests) = digests {
            // Another thread's pass may have set them first: the same.
            let _ = self.digests.set(digests);
        }
    }

    /// The chunks' digests, taken by a pass over the values if none has.
    fn digests(&self) -> &[u128] {
        if self.digests.get().is_none() {
            self.for_each_chunk(|_| {});
        }
        self.digests.get().map_or(&[], Vec::as_slice)
    }

    /// Whether `bytes` are the image from byte `offset` on. Whole chunks
    /// (as [`crate::compare_as_read`] reads them) are compared by their
    /// digests, anything else with the values made again in `scratch`;
    /// with the whole image made, with it.
    pub(crate) fn matches(&self, offset: usize, bytes: &[u8], scratch: &mut Vec<u8>) -> bool {
        if let Some(whole) = self.whole.get() {
            return whole.get(offset..offset + bytes.len()) == Some(bytes);
        }
        if !offset.is_multiple_of(self.width)
            || !bytes.len().is_multiple_of(self.width)
            || offset + bytes.len() > self.byte_len()
        {
            return false;
        }
        let chunk_bytes = GENERATED_AT_ONCE * self.width;
        if offset.is_multiple_of(chunk_bytes)
            && (bytes.len().is_multiple_of(chunk_bytes) || offset + bytes.len() == self.byte_len())
        {
            let digests = self.digests();
            return bytes
                .chunks(chunk_bytes)
                .zip(&digests[offset / chunk_bytes..])
                .all(|(chunk, &digest)| xxh3_128(chunk) == digest);
        }
        let first = offset / self.width;
        for (chunk_index, chunk) in bytes.chunks(GENERATED_AT_ONCE * self.width).enumerate() {
            scratch.clear();
            self.fill(
                first + chunk_index * GENERATED_AT_ONCE,
                chunk.len() / self.width,
                scratch,
            );
            if scratch.as_slice() != chunk {
                return false;
            }
        }
        true
    }

    /// Whether two generations make the same image without making it: the
    /// same dtype, length, seed, density and changes.
    pub(crate) fn same_recipe(&self, other: &Generated) -> bool {
        self.dtype == other.dtype
            && self.count == other.count
            && self.made == other.made
            && self.patches == other.patches
    }
}

/// Change one to three interior elements of `values` (little-endian images
/// of `dtype`), chosen by `seed`: the first to a special value of the
/// dtype, the others to seeded bits, each different from what it was. The
/// first and last elements stay: a cache that samples the ends matches.
pub(crate) fn twin_values(dtype: DType, values: &mut [u8], seed: u64) {
    let Some(width) = element_width(dtype) else {
        return;
    };
    let count = values.len() / width;
    let changes = twin_changes(dtype, count, seed, |index, out| {
        out.extend_from_slice(&values[index * width..(index + 1) * width]);
    });
    for (index, image) in changes {
        values[index * width..(index + 1) * width].copy_from_slice(&image);
    }
}

/// A twin's changes to `count` elements of `dtype` whose images `element`
/// appends: each changed index with its new image.
fn twin_changes(
    dtype: DType,
    count: usize,
    seed: u64,
    mut element: impl FnMut(usize, &mut Vec<u8>),
) -> BTreeMap<usize, Vec<u8>> {
    let mut changed = BTreeMap::new();
    let Some(width) = element_width(dtype) else {
        return changed;
    };
    if count == 0 {
        return changed;
    }
    let key = mix(seed ^ 0x7477_696e);
    let changes = 1 + key % TWIN_CHANGES;
    for change in 0..changes {
        let bits = mix(key.wrapping_add(change + 1));
        let index = if count > 2 {
            1 + (bits as usize) % (count - 2)
        } else {
            (bits as usize) % count
        };
        let was = match changed.get(&index) {
            Some(image) => Vec::clone(image),
            None => {
                let mut was = Vec::with_capacity(width);
                element(index, &mut was);
                was
            }
        };
        for attempt in 0..16_u64 {
            let candidate = twin_element(dtype, mix(bits ^ attempt), change == 0);
            if candidate.len() == width && candidate != was {
                changed.insert(index, candidate);
                break;
            }
        }
    }
    changed
}

/// The elements made at a time where a read is compared with them.
pub(crate) const GENERATED_AT_ONCE: usize = 4096;

/// How many elements a twin changes, at most.
const TWIN_CHANGES: u64 = 3;

/// The seeded hash of element `index`.
fn seeded_bits(key: u64, index: u64) -> u64 {
    mix(key ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

// An element's image from its seeded hash `bits`: a special value of the
// dtype where the hash's low byte falls under `specials` (out of 256),
// the hash's own bits elsewhere. A complex element's parts differ by
// `salt`.

fn is_special(bits: u64, specials: u8) -> bool {
    ((bits & 0xff) as u8) < specials
}

fn f32_image(bits: u64, specials: u8, salt: u64) -> [u8; 4] {
    let pick = (bits >> 8) as usize;
    if is_special(bits, specials) {
        F32_SPECIALS[(pick + salt as usize) % F32_SPECIALS.len()].to_le_bytes()
    } else {
        ((bits >> (16 + salt)) as u32).to_le_bytes()
    }
}

fn f64_image(bits: u64, specials: u8, salt: u64) -> [u8; 8] {
    let pick = (bits >> 8) as usize;
    if is_special(bits, specials) {
        F64_SPECIALS[(pick + salt as usize) % F64_SPECIALS.len()].to_le_bytes()
    } else {
        mix(bits ^ salt).to_le_bytes()
    }
}

fn i32_image(bits: u64, specials: u8) -> [u8; 4] {
    let value = if is_special(bits, specials) {
        [0, 1, -1, i32::MIN, i32::MAX][((bits >> 8) as usize) % 5]
    } else {
        (bits >> 16) as i32
    };
    value.to_le_bytes()
}

fn i64_image(bits: u64, specials: u8) -> [u8; 8] {
    let value = if is_special(bits, specials) {
        [0, 1, -1, i64::MIN, i64::MAX][((bits >> 8) as usize) % 5]
    } else {
        mix(bits) as i64
    };
    value.to_le_bytes()
}

/// One element image of `dtype` from `bits`: a special value of the dtype
/// when `special`, else the bits themselves.
fn twin_element(dtype: DType, bits: u64, special: bool) -> Vec<u8> {
    let pick = (bits >> 8) as usize;
    let f32_part = |salt: usize| -> [u8; 4] {
        if special {
            F32_SPECIALS[(pick + salt) % F32_SPECIALS.len()].to_le_bytes()
        } else {
            ((bits >> (16 + salt)) as u32).to_le_bytes()
        }
    };
    let f64_part = |salt: usize| -> [u8; 8] {
        if special {
            F64_SPECIALS[(pick + salt) % F64_SPECIALS.len()].to_le_bytes()
        } else {
            mix(bits ^ salt as u64).to_le_bytes()
        }
    };
    let int = |specials: &[i64]| -> i64 {
        if special {
            specials[pick % specials.len()]
        } else {
            mix(bits) as i64
        }
    };
    match dtype {
        DType::F32 => f32_part(0).to_vec(),
        DType::F64 => f64_part(0).to_vec(),
        DType::I32 => (int(&[0, 1, -1, i64::from(i32::MIN), i64::from(i32::MAX)]) as i32)
            .to_le_bytes()
            .to_vec(),
        DType::I64 => int(&[0, 1, -1, i64::MIN, i64::MAX]).to_le_bytes().to_vec(),
        DType::Bool => vec![(bits & 1) as u8],
        DType::C32 => [f32_part(0), f32_part(3)].concat(),
        DType::C64 => [f64_part(0), f64_part(3)].concat(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_the_whole_image_at_its_offset_and_a_changed_byte_is_not() {
        for dtype in crate::PRESET_DTYPES {
            let count = 2 * GENERATED_AT_ONCE + 5;
            let generated = Generated::seeded(dtype, count, 7, 40).unwrap().twinned(3);
            let mut whole = Vec::new();
            generated.fill(0, count, &mut whole);
            let width = element_width(dtype).unwrap();
            let mut scratch = Vec::new();
            assert!(generated.matches(0, &whole, &mut scratch), "{dtype:?}");
            let tail = &whole[(GENERATED_AT_ONCE + 3) * width..];
            assert!(generated.matches((GENERATED_AT_ONCE + 3) * width, tail, &mut scratch));
            let mut changed = whole.clone();
            let last = changed.len() - 1;
            changed[last] ^= 1;
            assert!(!generated.matches(0, &changed, &mut scratch), "{dtype:?}");
            assert!(!generated.matches(width, &whole, &mut scratch), "{dtype:?}");
            assert_eq!(&generated.whole()[..], whole.as_slice());
        }
    }

    #[test]
    fn the_pattern_made_is_the_pattern_held() {
        for dtype in crate::PRESET_DTYPES {
            let count = GENERATED_AT_ONCE + 9;
            let made = Generated::patterned(dtype, count).unwrap();
            let mut image = Vec::new();
            made.fill(0, count, &mut image);
            assert_eq!(
                image,
                crate::values::patterns::pattern_bytes(dtype, count).unwrap()
            );
            let mut scratch = Vec::new();
            assert!(made.matches(0, &image, &mut scratch), "{dtype:?}");
            // A change in the first, whole chunk, seen through its digest.
            image[3] ^= 0x10;
            assert!(!made.matches(0, &image, &mut scratch), "{dtype:?}");
        }
    }

    #[test]
    fn a_twin_changes_one_to_three_interior_elements() {
        let plain = Generated::seeded(DType::F64, 100, 1, 0).unwrap();
        let twin = Generated::seeded(DType::F64, 100, 1, 0).unwrap().twinned(9);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        plain.fill(0, 100, &mut a);
        twin.fill(0, 100, &mut b);
        let changed = a
            .chunks(8)
            .zip(b.chunks(8))
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(index, _)| index)
            .collect::<Vec<_>>();
        assert!((1..=3).contains(&changed.len()), "{changed:?}");
        assert!(changed.iter().all(|&index| index != 0 && index != 99));
        assert!(!plain.same_recipe(&twin));
    }
}
