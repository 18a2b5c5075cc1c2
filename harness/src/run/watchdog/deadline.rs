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
/// What a route's deadline has seen.
#[derive(Debug, Default)]
struct DeadlineState {
    /// The slowest call that returned in time.
    slowest: Duration,
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
/// thirtieth of the configured deadline); a case that overruns the short one was not proven to
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

    /// The deadline of the route's next case: the configured one until the
    /// provider hangs, the short one after.
    pub fn limit(&self) -> Duration {
        let state = self.state();
        match state.hung_on {
            None => self.configured,
            Some(_) => (state.slowest * SHORT_FACTOR)
                .max(self.configured / SHORT_FLOOR_DIVISOR)
                .min(self.configured),
        }
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

    pub(super) fn returned_after(&self, elapsed: Duration) {
        let mut state = self.state();
        state.slowest = state.slowest.max(elapsed);
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
}
