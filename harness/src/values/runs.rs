//! The runs case: long runs of one element, where a copy that compresses
//! what it sends (run-length, zero-skipping, deduplicated pages) changes
//! strategy. Each run's value differs from the one before it in bits, but
//! not always as a number (`0.0` then `-0.0`, NaNs of other payloads), and
//! the runs' lengths sit on both sides of 256 and 4,096 and just past what
//! a `u16` counts, the counts such an encoder keeps.

use tenferro_tensor::DType;

use crate::values::generated::{Generated, HELD_UP_TO_BYTES};
use crate::{Case, HarnessError, Layout};

/// The lengths of the runs of [`Case::runs`], in order: short runs, runs
/// on each side of 256 and 4,096 elements, and one of 65,537, past what a
/// `u16` counts: a count kept modulo 65,536, or runs split at 65,536
/// instead of 65,535, changes it.
pub const RUN_LENGTHS: [usize; 16] = [
    1, 2, 3, 4, 7, 8, 15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 65537,
];

/// Elements of a case that holds every run of [`RUN_LENGTHS`] (78,666).
pub const RUNS_ELEMENTS: usize = {
    let mut total = 0;
    let mut index = 0;
    while index < RUN_LENGTHS.len() {
        total += RUN_LENGTHS[index];
        index += 1;
    }
    total
};

/// The values the runs of an f32 take in turn, as bits: `0.0` and `-0.0`
/// next to each other (equal as numbers), NaNs of three payloads and a
/// negative one next to each other, one, a subnormal.
const F32_RUN_VALUES: [u32; 10] = [
    0x0000_0000,
    0x8000_0000,
    0x0000_0000,
    0x7fc0_0000,
    0x7fc0_1234,
    0x7fa0_0001,
    0xffc0_0000,
    0x3f80_0000,
    0x0000_0001,
    0x8000_0000,
];

/// The same for f64.
const F64_RUN_VALUES: [u64; 10] = [
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff8_0000_dead_beef,
    0x7ff4_0000_0000_0001,
    0xfff8_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x8000_0000_0000_0000,
];

/// The values the runs of an integer take in turn.
const INT_RUN_VALUES: [i64; 8] = [0, -1, 0, 7, i64::MIN, i64::MAX, 1, -1];

/// The run element `index` of [`Case::runs`] belongs to, counted from 0
/// over the lengths [`RUN_LENGTHS`] gives, taken again and again.
fn run_of(index: usize) -> usize {
    let (cycle, mut position) = (index / RUNS_ELEMENTS, index % RUNS_ELEMENTS);
    let mut run = 0;
    while position >= RUN_LENGTHS[run] {
        position -= RUN_LENGTHS[run];
        run += 1;
    }
    cycle * RUN_LENGTHS.len() + run
}

/// Append elements `first..end` of [`Case::runs`] of `dtype`.
pub(crate) fn runs_elements(dtype: DType, first: usize, end: usize, out: &mut Vec<u8>) {
    for index in first..end {
        run_element(dtype, run_of(index), out);
    }
}

/// Append the element of run `run` of `dtype`; a complex element's
/// imaginary part takes the next run's value.
fn run_element(dtype: DType, run: usize, out: &mut Vec<u8>) {
    let f32_bits = |run: usize| F32_RUN_VALUES[run % F32_RUN_VALUES.len()];
    let f64_bits = |run: usize| F64_RUN_VALUES[run % F64_RUN_VALUES.len()];
    let int = INT_RUN_VALUES[run % INT_RUN_VALUES.len()];
    match dtype {
        DType::F32 => out.extend_from_slice(&f32_bits(run).to_le_bytes()),
        DType::F64 => out.extend_from_slice(&f64_bits(run).to_le_bytes()),
        DType::C32 => {
            out.extend_from_slice(&f32_bits(run).to_le_bytes());
            out.extend_from_slice(&f32_bits(run + 1).to_le_bytes());
        }
        DType::C64 => {
            out.extend_from_slice(&f64_bits(run).to_le_bytes());
            out.extend_from_slice(&f64_bits(run + 1).to_le_bytes());
        }
        // The extremes come in as I32's own.
        DType::I32 => {
            let value = match int {
                i64::MIN => i32::MIN,
                i64::MAX => i32::MAX,
                other => other as i32,
            };
            out.extend_from_slice(&value.to_le_bytes());
        }
        DType::I64 => out.extend_from_slice(&int.to_le_bytes()),
        DType::Bool => out.push(u8::from(run % 2 == 1)),
        _ => {}
    }
}

impl Case {
    /// The `runs` case: its elements, in order, are runs of one value of
    /// the lengths [`RUN_LENGTHS`] gives (from 1 to 65,537 elements; cut
    /// short where the shape holds fewer than [`RUNS_ELEMENTS`], and
    /// starting over where it holds more; made, not held, past 256 KiB),
    /// each run's value different in
    /// bits from the run before it: for a float dtype, `0.0` next to
    /// `-0.0` and NaNs of other payloads next to each other, which an
    /// encoder that compares elements as numbers merges; `false` and
    /// `true` in turn for bool. A copy that compresses runs, skips zeros
    /// or counts a run in too few bits changes these values.
    ///
    /// # Errors
    ///
    /// As [`Case::new`]; a dtype with no preset element.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::{Case, Layout, RUNS_ELEMENTS};
    ///
    /// let case = Case::runs(DType::F32, vec![RUNS_ELEMENTS], Layout::Owned).unwrap();
    /// let bits: Vec<u32> = case.typed_values::<f32>().iter().map(|v| v.to_bits()).collect();
    /// // A run of one +0.0, then two -0.0: equal as numbers, not in bits.
    /// assert_eq!(bits[..3], [0, 0x8000_0000, 0x8000_0000]);
    /// // The longest run, past what a u16 counts.
    /// assert!(bits[RUNS_ELEMENTS - 65_537..].iter().all(|&b| b == bits[RUNS_ELEMENTS - 1]));
    /// ```
    pub fn runs(dtype: DType, shape: Vec<usize>, layout: Layout) -> Result<Case, HarnessError> {
        let not_preset = || HarnessError::InvalidCase {
            reason: format!("dtype {dtype:?} is not a preset dtype"),
        };
        let width = crate::element_width(dtype).ok_or_else(not_preset)?;
        let bytes = Self::byte_len(dtype, &shape)?;
        let count = bytes / width;
        if bytes > HELD_UP_TO_BYTES {
            let generated = Generated::runs(dtype, count).ok_or_else(not_preset)?;
            return Self::generated(shape, layout, generated);
        }
        let mut values = Vec::with_capacity(bytes);
        runs_elements(dtype, 0, count, &mut values);
        Case::new(dtype, shape, layout, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_differs_in_bits_from_the_one_before() {
        for dtype in crate::PRESET_DTYPES {
            let width = crate::element_width(dtype).unwrap();
            let case = Case::runs(dtype, vec![RUNS_ELEMENTS], Layout::Owned).unwrap();
            let bytes = case.values();
            let element = |index: usize| &bytes[index * width..(index + 1) * width];
            let mut start = 0;
            for (run, &length) in RUN_LENGTHS.iter().enumerate() {
                let first = element(start);
                assert!(
                    (start..start + length).all(|index| element(index) == first),
                    "{dtype:?} run {run}"
                );
                if start > 0 {
                    assert_ne!(element(start - 1), first, "{dtype:?} run {run}");
                }
                start += length;
            }
            assert_eq!(start, RUNS_ELEMENTS);
        }
    }

    #[test]
    fn made_values_are_the_held_ones() {
        // Past 256 KiB the values are made a chunk at a time: the same
        // bytes as the held ones, the runs taken again past the last.
        let count = 2 * RUNS_ELEMENTS + 5;
        let made = Case::runs(DType::C64, vec![count], Layout::Owned).unwrap();
        let mut held = Vec::new();
        runs_elements(DType::C64, 0, count, &mut held);
        let chunks: Vec<u8> = made
            .value_chunks()
            .flat_map(|chunk| chunk.to_vec())
            .collect();
        assert_eq!(chunks, held);
        assert_eq!(run_of(RUNS_ELEMENTS), RUN_LENGTHS.len());
    }

    #[test]
    fn a_float_case_puts_zeros_of_both_signs_next_to_each_other() {
        let case = Case::runs(DType::F64, vec![10], Layout::Owned).unwrap();
        let values = case.typed_values::<f64>();
        assert_eq!(values[0], values[1]);
        assert_ne!(values[0].to_bits(), values[1].to_bits());
    }
}
