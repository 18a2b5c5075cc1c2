//! [`RouteDeadline`]: the deadline a route's cases share, which shortens
//! once its provider has hung, so that a hang is judged once per route.

use std::sync::Arc;
use std::time::Duration;

use crate::Case;
use crate::run::rig::case_words;

/// After a hang, a later case of the route waits this many times the
/// provider's slowest successful call on the route...
const SHORT_FACTOR: u32 = 8;
/// ...and at least the configured deadline divided by this (2 s of the
/// default 60 s; what a provider that has only hung so far gets), never
/// more than the configured deadline.
const SHORT_FLOOR_DIVISOR: u32 = 30;
/// How many calls of a route may be left hanging (their threads given up)
/// before the route's later cases are not run at all.
const MAX_ABANDONED: usize = 32;
/// The bytes a run of `cases` moves.
fn run_bytes(cases: &[Case]) -> usize {
    cases
        .iter()
        .map(|case| {
            case.len()
                .saturating_mul(crate::element_width(case.dtype()).unwrap_or(1))
        })
        .sum()
}

/// The size class of a run of `bytes`: the bits it takes.
fn size_class(bytes: usize) -> usize {
    (usize::BITS - bytes.leading_zeros()) as usize
}

/// What a route's deadline has seen.
#[derive(Debug, Default)]
struct DeadlineState {
    /// The slowest call that returned in time.
    slowest: Duration,
    /// The slowest run that returned in time, by size class (a power of
    /// two of its bytes: class `c` holds runs of fewer than `2^c` bytes).
    slowest_by_size: Vec<Duration>,
    /// The bytes and time of the run of most bytes that returned in time:
    /// how long the provider takes a byte, on its largest work.
    largest: (usize, Duration),
    /// The first case the provider hung on, in words, if it has.
    hung_on: Option<String>,
    /// Calls left hanging so far.
    abandoned: usize,
}

/// The deadline of a route's cases, shared by every rig of the route (its
/// fixed, generated, concurrent and outside cases, and every thread):
/// a hang is judged once per route, not once per case.
///
/// Until the provider hangs, every case gets the configured deadline. A
/// case that overruns it is a `deadline` violation. From then on, the
/// route's later cases get a short deadline derived from the provider's
/// own successful calls (eight times the slowest, at least a
/// thirtieth of the configured deadline, scaled to each run's bytes:
/// [`RouteDeadline::limit_for`]); a case that overruns the short one was not proven to
/// hang, so it is not judged: the runner reports it as skipped, naming the
/// case the provider hung on. After 32 calls left hanging,
/// the route's later cases are not run (their threads would pile up).
///
/// A `Duration` converts into a fresh `RouteDeadline`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tenferro_transfer_harness::RouteDeadline;
///
/// let deadline = RouteDeadline::new(Duration::from_secs(60));
/// assert_eq!(deadline.limit(), Duration::from_secs(60));
/// assert!(deadline.hung_on().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct RouteDeadline {
    configured: Duration,
    state: Arc<std::sync::Mutex<DeadlineState>>,
}

impl From<Duration> for RouteDeadline {
    fn from(configured: Duration) -> Self {
        Self::new(configured)
    }
}

impl RouteDeadline {
    /// A route that has not hung yet, with `configured` per case.
    pub fn new(configured: Duration) -> Self {
        Self {
            configured,
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DeadlineState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The configured deadline.
    pub fn configured(&self) -> Duration {
        self.configured
    }

    /// The deadline of one case: the configured one until the provider
    /// hangs, the longest short one after (eight times the slowest run in
    /// time); [`RouteDeadline::limit_for`] gives a run's own.
    pub fn limit(&self) -> Duration {
        let state = self.state();
        match state.hung_on {
            None => self.configured,
            Some(_) => (state.slowest * SHORT_FACTOR)
                .max(self.configured / SHORT_FLOOR_DIVISOR)
                .min(self.configured),
        }
    }

    /// The deadline of a run of `cases`: the configured deadline per input
    /// until the provider hangs. After, eight times the slowest run in
    /// time of no more bytes, or eight times what the largest run took
    /// scaled to these bytes, whichever is longer (at least a thirtieth of
    /// the configured deadline per input, never more than the configured
    /// deadline per input). A small case that hangs
    /// again costs little, and a large one is not skipped as "not proven
    /// to hang" for taking longer than the small calls did.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tenferro_transfer_harness::{Case, RouteDeadline};
    ///
    /// let deadline = RouteDeadline::new(Duration::from_secs(60));
    /// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// assert_eq!(deadline.limit_for(&[case.clone(), case]), Duration::from_secs(120));
    /// ```
    pub fn limit_for(&self, cases: &[Case]) -> Duration {
        let inputs = u32::try_from(cases.len().max(1)).unwrap_or(u32::MAX);
        let configured = self.configured.saturating_mul(inputs);
        let state = self.state();
        if state.hung_on.is_none() {
            return configured;
        }
        let bytes = run_bytes(cases);
        let smaller = state
            .slowest_by_size
            .iter()
            .take(size_class(bytes) + 1)
            .max()
            .copied()
            .unwrap_or_default();
        let scaled = match state.largest {
            (largest, took) if largest > 0 => took.mul_f64(bytes as f64 / largest as f64),
            _ => Duration::ZERO,
        };
        smaller
            .max(scaled)
            .saturating_mul(SHORT_FACTOR)
            .max((self.configured / SHORT_FLOOR_DIVISOR).saturating_mul(inputs))
            .min(configured)
    }

    /// The case the provider first hung on, in words, if it has.
    pub fn hung_on(&self) -> Option<String> {
        self.state().hung_on.clone()
    }

    /// The calls of the route left hanging, in words (`2 calls of this
    /// route hung, the first on F64 [1] owned`), if any.
    pub fn hung_calls(&self) -> Option<String> {
        let state = self.state();
        let first = state.hung_on.as_deref()?;
        Some(match state.abandoned {
            0 | 1 => format!("a call of this route hung (on {first})"),
            count => format!("{count} calls of this route hung, the first on {first}"),
        })
    }

    /// Why the route's later cases are not run any more, once too many
    /// calls were left hanging.
    pub(super) fn exhausted(&self) -> Option<String> {
        let state = self.state();
        (state.abandoned >= MAX_ABANDONED).then(|| {
            format!(
                "the provider left {} calls of this route hanging, the first on {} (a deadline violation; the later ones overran the short deadline that follows a hang, and were skipped as not proven to hang); its later cases are not run, so that hung threads do not pile up",
                state.abandoned,
                state.hung_on.as_deref().unwrap_or("a case")
            )
        })
    }

    /// A run of `cases` returned in time, after `elapsed`.
    pub(super) fn returned_after(&self, elapsed: Duration, cases: &[Case]) {
        let mut state = self.state();
        state.slowest = state.slowest.max(elapsed);
        let bytes = run_bytes(cases);
        let class = size_class(bytes);
        if state.slowest_by_size.len() <= class {
            state.slowest_by_size.resize(class + 1, Duration::ZERO);
        }
        state.slowest_by_size[class] = state.slowest_by_size[class].max(elapsed);
        if (bytes, elapsed) > state.largest {
            state.largest = (bytes, elapsed);
        }
    }

    pub(super) fn hung(&self, case: &Case) {
        let mut state = self.state();
        state.abandoned += 1;
        state.hung_on.get_or_insert_with(|| case_words(case));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_left_hanging_too_often_stops_and_says_only_its_first_hang_was_judged() {
        let deadline = RouteDeadline::new(Duration::from_secs(10));
        let first = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
        let later = Case::from_values(vec![3], vec![1.0_f32; 3]).unwrap();
        deadline.hung(&first);
        assert!(deadline.exhausted().is_none());
        for _ in 1..MAX_ABANDONED {
            deadline.hung(&later);
        }
        let reason = deadline.exhausted().unwrap();
        assert!(
            reason.contains(&format!("{MAX_ABANDONED} calls"))
                && reason.contains(&case_words(&first))
                && reason.contains("skipped as not proven to hang"),
            "{reason}"
        );
        // The short deadline after a hang: a thirtieth of the configured one
        // for a provider that never returned in time.
        assert_eq!(
            deadline.limit(),
            Duration::from_secs(10) / SHORT_FLOOR_DIVISOR
        );
    }

    #[test]
    fn after_a_hang_each_case_waits_on_what_runs_of_its_size_took() {
        let deadline = RouteDeadline::new(Duration::from_secs(60));
        let of =
            |elements: usize| Case::from_values(vec![elements], vec![1.0_f32; elements]).unwrap();
        let (small, large, huge) = (of(256), of(65_536), of(262_144));
        deadline.returned_after(Duration::from_millis(400), std::slice::from_ref(&small));
        deadline.returned_after(Duration::from_secs(1), std::slice::from_ref(&large));
        // Before a hang, every case gets the configured deadline.
        assert_eq!(
            deadline.limit_for(std::slice::from_ref(&large)),
            Duration::from_secs(60)
        );
        deadline.hung(&small);
        // A small case: eight times the small run, not the large one.
        assert_eq!(
            deadline.limit_for(std::slice::from_ref(&small)),
            Duration::from_millis(3_200)
        );
        // The floor: 2 s of 60, for a case smaller than any run.
        assert_eq!(deadline.limit_for(&[of(1)]), Duration::from_secs(2));
        assert_eq!(
            deadline.limit_for(std::slice::from_ref(&large)),
            Duration::from_secs(8)
        );
        // Four times the largest run's bytes: four times its time, eight
        // times over.
        assert_eq!(
            deadline.limit_for(std::slice::from_ref(&huge)),
            Duration::from_secs(32)
        );
        // Never more than the configured deadline.
        assert_eq!(deadline.limit_for(&[of(1 << 21)]), Duration::from_secs(60));
    }
}
