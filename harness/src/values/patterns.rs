//! The bit patterns cases are made of: each dtype's special values, the
//! index hash every made value comes from, and the fixed cases' pattern.

use tenferro_tensor::DType;

use crate::element_width;

pub(crate) const F32_SPECIALS: [u32; 10] = [
    0x3fc0_0000, // 1.5
    0x7fc0_1234, // quiet NaN with payload
    0x8000_0000, // -0.0
    0x0000_0001, // smallest subnormal
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x7fa0_0001, // signalling NaN
    0x7f7f_ffff, // MAX
    0xff7f_ffff, // MIN
    0x807f_ffff, // largest negative subnormal
];
pub(crate) const F64_SPECIALS: [u64; 10] = [
    0x3ff8_0000_0000_0000,
    0x7ff8_0000_dead_beef,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff4_0000_0000_0001,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
    0x800f_ffff_ffff_ffff,
];

/// A cheap, well-mixed 64-bit hash of an index (splitmix64).
pub(crate) fn mix(index: u64) -> u64 {
    let mut z = index.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The fixed cases' pattern of `count` elements of `dtype`
/// ([`pattern_element`] each); `None` for an external dtype.
pub(crate) fn pattern_bytes(dtype: DType, count: usize) -> Option<Vec<u8>> {
    let width = element_width(dtype)?;
    let mut out = Vec::with_capacity(count * width);
    for i in 0..count {
        pattern_element(dtype, i, &mut out);
    }
    Some(out)
}

/// An integer element of the pattern: 7, `min`, `max` and -1 in turn at
/// the special places, else the position's bits.
fn int_bits(special: Option<usize>, min: i64, max: i64, bits: u64) -> i64 {
    match special.map(|k| k % 4) {
        Some(0) => 7,
        Some(1) => min,
        Some(2) => max,
        Some(_) => -1,
        None => bits as i64,
    }
}

/// Append element `i` of the pattern: a special value every other element,
/// position-dependent bits in between.
pub(crate) fn pattern_element(dtype: DType, i: usize, out: &mut Vec<u8>) {
    let bits = mix(i as u64);
    let special = i.is_multiple_of(2).then_some(i / 2);
    match dtype {
        DType::F32 => out.extend_from_slice(&f32_bits(special, bits).to_le_bytes()),
        DType::F64 => out.extend_from_slice(&f64_bits(special, bits).to_le_bytes()),
        // Truncating the I64 pattern to 32 bits keeps 7 and -1, and the
        // extremes come in as I32's own.
        DType::I32 => {
            let value = int_bits(special, i64::from(i32::MIN), i64::from(i32::MAX), bits) as i32;
            out.extend_from_slice(&value.to_le_bytes());
        }
        DType::I64 => {
            let value = int_bits(special, i64::MIN, i64::MAX, bits);
            out.extend_from_slice(&value.to_le_bytes());
        }
        // Index 0 is false so it differs from the backing filler.
        DType::Bool => out.push(u8::from(i % 3 == 1)),
        DType::C32 => {
            out.extend_from_slice(&f32_bits(special, bits).to_le_bytes());
            out.extend_from_slice(&f32_bits(special.map(|k| k + 3), bits >> 32).to_le_bytes());
        }
        DType::C64 => {
            out.extend_from_slice(&f64_bits(special, bits).to_le_bytes());
            out.extend_from_slice(
                &f64_bits(special.map(|k| k + 3), bits.rotate_left(17)).to_le_bytes(),
            );
        }
        _ => {}
    }
}

fn f32_bits(special: Option<usize>, bits: u64) -> u32 {
    match special {
        Some(k) => F32_SPECIALS[k % F32_SPECIALS.len()],
        None => bits as u32,
    }
}

fn f64_bits(special: Option<usize>, bits: u64) -> u64 {
    match special {
        Some(k) => F64_SPECIALS[k % F64_SPECIALS.len()],
        None => bits,
    }
}
