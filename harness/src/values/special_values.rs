//! The special-values case: every special value of a float dtype in both
//! signs, one vector per dtype, so each fixed run meets all of them.

use tenferro_tensor::DType;

use crate::{Case, HarnessError, Layout};

/// Every special value of `T`'s float kind, in both signs: zero, the
/// smallest and largest subnormal, the smallest normal, one, the largest
/// finite value, infinity, a quiet NaN without and with a payload, and a
/// signalling NaN; each positive, then with its sign bit set.
fn signed_specials(positive: &[u64], sign: u64) -> Vec<u64> {
    positive
        .iter()
        .copied()
        .chain(positive.iter().map(|bits| bits | sign))
        .collect()
}

/// The positive special values of f32, as bits.
const F32_SPECIAL_BITS: [u64; 10] = [
    0x0000_0000, // 0.0
    0x0000_0001, // smallest subnormal
    0x007f_ffff, // largest subnormal
    0x0080_0000, // smallest normal
    0x3f80_0000, // 1.0
    0x7f7f_ffff, // MAX
    0x7f80_0000, // inf
    0x7fc0_0000, // quiet NaN
    0x7fc0_1234, // quiet NaN with a payload
    0x7fa0_0001, // signalling NaN
];

/// The positive special values of f64, as bits.
const F64_SPECIAL_BITS: [u64; 10] = [
    0x0000_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x000f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0x7ff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff8_0000_dead_beef,
    0x7ff4_0000_0000_0001,
];

impl Case {
    /// The `specials` case of a float dtype: a vector holding every special
    /// value of the dtype in both signs (20 elements); for a complex dtype, the
    /// real parts run through them in order and the imaginary parts in reverse,
    /// so each part meets every value in both signs. `None` for a dtype with no
    /// special float values (integers, bool).
    ///
    /// # Errors
    ///
    /// As [`Case::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::Case;
    ///
    /// let case = Case::special_values(DType::F32).unwrap().unwrap();
    /// assert_eq!(case.shape(), [20]);
    /// assert!(Case::special_values(DType::I64).unwrap().is_none());
    /// ```
    pub fn special_values(dtype: DType) -> Result<Option<Case>, HarnessError> {
        let f32_bits = || signed_specials(&F32_SPECIAL_BITS, 0x8000_0000);
        let f64_bits = || signed_specials(&F64_SPECIAL_BITS, 1 << 63);
        let narrow = |bits: &[u64]| -> Vec<u8> {
            bits.iter()
                .flat_map(|bits| (*bits as u32).to_le_bytes())
                .collect()
        };
        let wide =
            |bits: &[u64]| -> Vec<u8> { bits.iter().flat_map(|bits| bits.to_le_bytes()).collect() };
        let complex = |bits: Vec<u64>, part: &dyn Fn(&[u64]) -> Vec<u8>| -> Vec<u8> {
            bits.iter()
                .zip(bits.iter().rev())
                .flat_map(|(re, im)| {
                    let mut bytes = part(&[*re]);
                    bytes.extend(part(&[*im]));
                    bytes
                })
                .collect()
        };
        let (count, bytes) = match dtype {
            DType::F32 => (20, narrow(&f32_bits())),
            DType::F64 => (20, wide(&f64_bits())),
            DType::C32 => (20, complex(f32_bits(), &narrow)),
            DType::C64 => (20, complex(f64_bits(), &wide)),
            _ => return Ok(None),
        };
        Case::new(dtype, vec![count], Layout::Owned, bytes).map(Some)
    }
}
