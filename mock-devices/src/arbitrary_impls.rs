//! `arbitrary::Arbitrary` for the fault vocabulary (feature `arbitrary`),
//! so fuzz targets decode their bytes into the same [`Fault`]s and
//! [`FaultPlan`]s that the self-test and the CLI use.
//!
//! Every number is bounded: a plan's counters stay within the first few
//! operations of a case (where a case's copies and allocations are), and a
//! latency spike lasts at most [`MAX_FUZZ_SPIKE`], so no decoded plan can
//! make a case slow or large.

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};

use crate::FaultPlan;
use crate::providers::Fault;

/// The longest latency spike a decoded [`FaultPlan`] injects.
pub const MAX_FUZZ_SPIKE: Duration = Duration::from_millis(2);

/// The highest allocation or copy number a decoded plan names: a case makes
/// only a few of each.
const MAX_NUMBER: u64 = 4;

/// The most bytes a decoded copy fault lets through before it strikes:
/// enough to tear an element of every width at every offset.
const MAX_BYTES: usize = 16;

/// The latency spikes a decoded plan injects: their size, not their exact
/// value, is what a provider can get wrong.
const SPIKES: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_micros(100),
    Duration::from_millis(1),
    MAX_FUZZ_SPIKE,
];

impl<'a> Arbitrary<'a> for Fault {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        u.choose(&Fault::ALL).copied()
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(4))
    }
}

/// `Some(draw)` one time in four, so most decoded plans hold one or two
/// faults rather than all six; `None` when the bytes have run out
/// (`ratio` then answers its first outcome).
fn sometimes<'a, T>(
    u: &mut Unstructured<'a>,
    draw: impl FnOnce(&mut Unstructured<'a>) -> Result<T>,
) -> Result<Option<T>> {
    if !u.ratio(3_u8, 4)? {
        draw(u).map(Some)
    } else {
        Ok(None)
    }
}

fn number(u: &mut Unstructured<'_>) -> Result<u64> {
    u.int_in_range(1..=MAX_NUMBER)
}

impl<'a> Arbitrary<'a> for FaultPlan {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let bytes = |u: &mut Unstructured<'a>| u.int_in_range(0..=MAX_BYTES);
        Ok(FaultPlan {
            out_of_memory_at: sometimes(u, number)?,
            lost_after: sometimes(u, |u| u.int_in_range(0..=MAX_NUMBER))?,
            copy_error: sometimes(u, |u| Ok((number(u)?, bytes(u)?)))?,
            partial_copy: sometimes(u, |u| Ok((number(u)?, bytes(u)?)))?,
            latency_spike: sometimes(u, |u| Ok((number(u)?, *u.choose(&SPIKES)?)))?,
            never_complete: sometimes(u, number)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_is_reachable_and_plans_stay_bounded() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..=255_u8 {
            let bytes: Vec<u8> = (0..64)
                .map(|i| seed.wrapping_mul(31).wrapping_add(i))
                .collect();
            let mut u = Unstructured::new(&bytes);
            seen.insert(Fault::arbitrary(&mut u).unwrap());
            let plan = FaultPlan::arbitrary(&mut u).unwrap();
            assert!(
                plan.out_of_memory_at
                    .is_none_or(|k| (1..=MAX_NUMBER).contains(&k))
            );
            assert!(
                plan.latency_spike
                    .is_none_or(|(_, delay)| delay <= MAX_FUZZ_SPIKE)
            );
            assert!(plan.copy_error.is_none_or(|(_, bytes)| bytes <= MAX_BYTES));
        }
        assert_eq!(seen.len(), Fault::ALL.len());
    }
}
