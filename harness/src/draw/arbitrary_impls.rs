//! `arbitrary::Arbitrary` for [`Recipe`] (feature `arbitrary`): fuzz
//! targets decode their bytes into the same recipes the proptest strategies
//! draw, combined by the same code ([`RecipeParts::assemble`]), so a crash
//! input prints as a recipe that `transfer-conformance replay` runs.
//!
//! The decoder draws from the space of [`FUZZ_PROFILE`]: at most its
//! [`Profile::max_elements`] elements, views only of tensors with small
//! footprints, and so a bounded backing, whatever the bytes.

use crate::PRESET_DTYPES;
use arbitrary::{Arbitrary, Result, Unstructured};

use crate::strategy::{
    AxisCut, MAX_RANK, Profile, Recipe, RecipeParts, SMALL_DIMENSION, SMALL_ELEMENTS, SMALL_PRIMES,
    fit,
};

/// The profile whose limits bound every decoded recipe: small cases keep
/// executions per second high, which is what coverage-guided fuzzing needs.
pub const FUZZ_PROFILE: Profile = Profile::Quick;

/// One dimension, weighted as the proptest strategy weights it: zero (1),
/// one (2), a small prime (2), anything up to `max` (3).
fn dimension(u: &mut Unstructured<'_>, max: usize) -> Result<usize> {
    Ok(match u.int_in_range(0_u8..=7)? {
        0 => 0,
        1 | 2 => 1,
        3 | 4 => *u.choose(&SMALL_PRIMES)?,
        _ => u.int_in_range(1..=max.max(1))?,
    })
}

/// A shape: nine in ten of rank 0 to 6 with small dimensions, one in ten of
/// rank 1 to 3 up to `max` elements, as in [`crate::strategy::shape`].
fn shape(u: &mut Unstructured<'_>, max: usize) -> Result<Vec<usize>> {
    // `ratio` answers true when the bytes have run out: the common arm.
    let large = !u.ratio(9_u8, 10)?;
    let (rank, extent, limit) = if large {
        (u.int_in_range(1..=3)?, max, max)
    } else {
        (
            u.int_in_range(0..=MAX_RANK)?,
            SMALL_DIMENSION,
            SMALL_ELEMENTS.min(max),
        )
    };
    let dimensions = (0..rank)
        .map(|_| dimension(u, extent))
        .collect::<Result<Vec<_>>>()?;
    Ok(fit(dimensions, limit.max(1)))
}

/// An axis cut, weighted as the proptest strategy weights it: step 1 (3),
/// 2, -1, 3, -2, 0 (a broadcast; 1 each); padding 0 to 2 before and after.
fn axis_cut(u: &mut Unstructured<'_>) -> Result<AxisCut> {
    const STEPS: [isize; 8] = [1, 1, 1, 2, -1, 3, -2, 0];
    Ok(AxisCut {
        step: *u.choose(&STEPS)?,
        before: u.int_in_range(0..=2)?,
        after: u.int_in_range(0..=2)?,
    })
}

impl<'a> Arbitrary<'a> for Recipe {
    /// One input, and in one decoded recipe of four one or two more moved
    /// in the same run ([`Recipe::with`]): its twin, one of its dtype and
    /// shape with other values, or another decoded input, as the proptest
    /// strategy draws them. Bytes that run out answer zeros: no more
    /// inputs.
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let recipe = single(u)?;
        let others = match u.int_in_range(0_u8..=7)? {
            6 => 1,
            7 => 2,
            _ => 0,
        };
        let mut with = Vec::with_capacity(others);
        for _ in 0..others {
            with.push(match u.int_in_range(0_u8..=3)? {
                0 | 1 => recipe.twin(u64::arbitrary(u)?),
                2 => Recipe {
                    seed: u64::arbitrary(u)?,
                    specials: u8::arbitrary(u)?,
                    ..recipe.clone()
                },
                _ => single(u)?,
            });
        }
        Ok(recipe.moved_with(with))
    }
}

/// One input, as [`crate::strategy::recipe`] draws a single one.
fn single(u: &mut Unstructured<'_>) -> Result<Recipe> {
    {
        // Layout first, values last: when the bytes run out, `arbitrary`
        // answers zeros, so a short input is a small owned case.
        let dtype = format!("{:?}", u.choose(&PRESET_DTYPES)?);
        let sliced = shape(u, FUZZ_PROFILE.max_elements())?;
        let view = !u.ratio(3_u8, 5)?;
        let cuts = (0..MAX_RANK)
            .map(|_| axis_cut(u))
            .collect::<Result<Vec<_>>>()?;
        let permuted = bool::arbitrary(u)?;
        let keys = <[u8; MAX_RANK]>::arbitrary(u)?.to_vec();
        let seed = u64::arbitrary(u)?;
        let specials = u8::arbitrary(u)?;
        Ok(RecipeParts {
            seed,
            specials,
            dtype,
            sliced,
            view,
            cuts,
            permuted,
            keys,
        }
        .assemble(&crate::strategy::Capabilities::all()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    #[test]
    fn decoded_recipes_stay_inside_the_fuzz_profile_and_reach_views() {
        let mut views = 0;
        for seed in 0..2000_u64 {
            let bytes: Vec<u8> = (0..96_u64)
                .map(|i| (crate::values::patterns::mix(seed * 131 + i) & 0xff) as u8)
                .collect();
            let recipe = Recipe::arbitrary(&mut Unstructured::new(&bytes)).unwrap();
            let case = recipe.case().unwrap();
            assert!(case.len() <= FUZZ_PROFILE.max_elements(), "{recipe:?}");
            if let Layout::View(spec) = case.layout() {
                views += 1;
                assert!(spec.backing_len() <= 64 * FUZZ_PROFILE.max_elements());
            }
        }
        assert!(views > 100, "only {views} views in 2000 decoded recipes");
    }

    #[test]
    fn empty_input_is_a_small_owned_case() {
        let recipe = Recipe::arbitrary(&mut Unstructured::new(&[])).unwrap();
        assert_eq!(recipe.layout, Layout::Owned);
        assert!(recipe.case().unwrap().len() <= 1);
    }
}
