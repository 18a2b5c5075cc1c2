//! Cases equal as numbers but not in bits: the same finite values, with
//! zeros of one sign or the other and NaNs of one payload or another. A
//! cache that compares inputs with `==` (where `-0.0 == 0.0`), or with an
//! equality that takes every NaN for equal, answers one from the other and
//! hands back the wrong bits; a cache may answer an input only from one
//! equal to it in every bit.

use tenferro_tensor::DType;

use crate::{Case, HarnessError, Layout};

/// The variant of [`Case::equal_as_numbers`] whose zeros are `-0.0`.
pub const NEGATIVE_ZEROS: u64 = 1;
/// The variant of [`Case::equal_as_numbers`] with NaNs among its values.
pub const WITH_NANS: u64 = 2;
/// The variant of [`Case::equal_as_numbers`] whose NaNs carry the other
/// payload.
pub const OTHER_NAN_PAYLOAD: u64 = 4;

/// The bits of scalar `index` of a variant: a finite value, a zero, its
/// negation, and a NaN or another finite value, by turns.
fn scalar_bits(index: usize, variant: u64, double: bool) -> u64 {
    let value = (index as f64 + 1.0) * 1.25;
    let bits = |value: f64| {
        if double {
            value.to_bits()
        } else {
            u64::from((value as f32).to_bits())
        }
    };
    let (sign, quiet, payload) = if double {
        (
            1_u64 << 63,
            0x7ff8_0000_0000_0000_u64,
            0x0000_0000_0000_00a5_u64,
        )
    } else {
        (0x8000_0000, 0x7fc0_0000, 0x0000_00a5)
    };
    match index % 4 {
        0 => bits(value),
        1 if variant & NEGATIVE_ZEROS != 0 => sign,
        1 => 0,
        2 => bits(-value),
        _ if variant & WITH_NANS == 0 => bits(value + 0.5),
        _ if variant & OTHER_NAN_PAYLOAD != 0 => quiet | (payload << 1),
        _ => quiet | payload,
    }
}

impl Case {
    /// A case of a float dtype whose values are equal as numbers across its
    /// variants, not in bits: finite values, zeros (`-0.0` where `variant`
    /// has [`NEGATIVE_ZEROS`]), and, where it has [`WITH_NANS`], quiet NaNs
    /// of one payload or the other ([`OTHER_NAN_PAYLOAD`]). A complex
    /// element's two parts are two scalars in turn. `None` for a dtype with
    /// no float values (integers, bool).
    ///
    /// # Errors
    ///
    /// As [`Case::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::{Case, Layout, NEGATIVE_ZEROS};
    ///
    /// let plus = Case::equal_as_numbers(DType::F32, vec![8], Layout::Owned, 0).unwrap().unwrap();
    /// let minus = Case::equal_as_numbers(DType::F32, vec![8], Layout::Owned, NEGATIVE_ZEROS)
    ///     .unwrap()
    ///     .unwrap();
    /// let (plus, minus) = (plus.typed_values::<f32>(), minus.typed_values::<f32>());
    /// assert_eq!(plus, minus); // equal as numbers...
    /// assert_ne!(
    ///     plus.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
    ///     minus.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    /// ); // ...not in bits
    /// ```
    pub fn equal_as_numbers(
        dtype: DType,
        shape: Vec<usize>,
        layout: Layout,
        variant: u64,
    ) -> Result<Option<Case>, HarnessError> {
        let (double, parts) = match dtype {
            DType::F32 => (false, 1),
            DType::F64 => (true, 1),
            DType::C32 => (false, 2),
            DType::C64 => (true, 2),
            _ => return Ok(None),
        };
        let elements = shape
            .iter()
            .try_fold(1_usize, |count, &extent| count.checked_mul(extent))
            .ok_or_else(|| HarnessError::InvalidCase {
                reason: format!("shape {shape:?} overflows"),
            })?;
        let scalars = elements
            .checked_mul(parts)
            .ok_or_else(|| HarnessError::InvalidCase {
                reason: format!("shape {shape:?} overflows"),
            })?;
        let values = (0..scalars)
            .flat_map(|index| {
                let bits = scalar_bits(index, variant, double);
                if double {
                    bits.to_le_bytes().to_vec()
                } else {
                    (bits as u32).to_le_bytes().to_vec()
                }
            })
            .collect();
        Case::new(dtype, shape, layout, values).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variants_are_equal_as_numbers_and_differ_in_bits() {
        let case = |variant| {
            Case::equal_as_numbers(DType::F64, vec![12], Layout::Owned, variant)
                .unwrap()
                .unwrap()
                .typed_values::<f64>()
        };
        let bits = |values: &[f64]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let (plus, minus) = (case(0), case(NEGATIVE_ZEROS));
        assert_eq!(plus, minus);
        assert_ne!(bits(&plus), bits(&minus));
        assert!(plus.iter().all(|value| !value.is_nan()));
        let (nans, others) = (case(WITH_NANS), case(WITH_NANS | OTHER_NAN_PAYLOAD));
        let same = |a: &f64, b: &f64| a == b || (a.is_nan() && b.is_nan());
        assert!(nans.iter().zip(&others).all(|(a, b)| same(a, b)));
        assert!(nans.iter().any(|value| value.is_nan()));
        assert_ne!(bits(&nans), bits(&others));
        assert!(
            Case::equal_as_numbers(DType::I32, vec![4], Layout::Owned, 0)
                .unwrap()
                .is_none()
        );
    }
}
