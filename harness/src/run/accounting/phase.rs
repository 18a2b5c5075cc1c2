//! The memory of a route's devices over a whole phase of cases.

use super::{CaseOnEndpoint, Sample, combine, judge_endpoint, phase_kept_or_leaked};
use crate::Endpoint;

/// What a phase showed each device's accounting seeing while the phase's
/// tensors were alive: the evidence that its silence afterwards means
/// something. A device whose accounting was not shown to see anything of
/// the phase vouches for nothing, and the phase's `no-leak` is unchecked
/// on it.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::PhaseEvidence;
///
/// // The staged inputs were seen on the source; the destination saw nothing.
/// let seen = PhaseEvidence::new(true, false).or(PhaseEvidence::default());
/// assert!(seen.source && !seen.destination);
/// ```
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct PhaseEvidence {
    /// The source's accounting showed the staged inputs of some case.
    pub source: bool,
    /// The destination's accounting showed the outputs of some case.
    pub destination: bool,
}

impl PhaseEvidence {
    /// What the source and the destination were shown to see.
    pub fn new(source: bool, destination: bool) -> Self {
        Self {
            source,
            destination,
        }
    }

    /// Both devices were shown to see the phase (`seen`), or neither: for
    /// a caller that has one piece of evidence for the whole route.
    pub fn both(seen: bool) -> Self {
        Self::new(seen, seen)
    }

    /// What either shows.
    #[must_use]
    pub fn or(self, other: Self) -> Self {
        Self::new(
            self.source || other.source,
            self.destination || other.destination,
        )
    }
}

/// The memory of a route's devices over a whole phase of cases (a pass
/// that holds outputs, the concurrent calls): sampled when the phase
/// starts and again when it is over and every tensor of it is dropped, so
/// that memory a phase keeps shows even where no single case can be
/// judged alone.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tenferro_transfer_harness::{LeakCheck, PhaseEvidence, PhaseMemory, Route, RouteDeadline};
///
/// // Plain host memory accounts nothing: the phase is unchecked, and why.
/// let route = Route::host_to_host().unwrap();
/// let deadline = RouteDeadline::new(Duration::from_secs(60));
/// let phase = PhaseMemory::start(&route);
/// // ... the phase's cases run here ...
/// let seen = PhaseEvidence::both(true);
/// assert!(matches!(phase.finish(&route, seen, &deadline), LeakCheck::Unchecked(_)));
/// ```
#[derive(Clone, Debug)]
pub struct PhaseMemory {
    samples: [Sample; 2],
}

impl PhaseMemory {
    /// Sample both devices of `route` (settled) as the phase starts.
    pub fn start(route: &crate::Route) -> Self {
        let counted = route.counts_memory();
        let sample = |endpoint: &Endpoint| {
            endpoint.settle();
            Sample::of(endpoint, counted)
        };
        Self {
            samples: [sample(route.source()), sample(route.destination())],
        }
    }

    /// Whether the destination's accounting shows more in use now than
    /// when the phase started: asked while the phase's outputs are held
    /// alive, the evidence that it sees them.
    pub fn shows_held_outputs(&self, route: &crate::Route) -> bool {
        self.samples[1].shown_more_on(route.destination(), route.counts_memory())
    }

    /// What the phase left behind, once every tensor of it is dropped:
    /// `seen` says which device's accounting was shown to see what the
    /// phase put there (without that, its silence vouches for nothing and
    /// the verdict is unchecked on it). Where calls of the route
    /// never returned (`deadline` says how many), what they hold is not
    /// this phase's leak: the verdict is unchecked, naming them.
    pub fn finish(
        &self,
        route: &crate::Route,
        seen: PhaseEvidence,
        deadline: &crate::RouteDeadline,
    ) -> crate::LeakCheck {
        if let Some(hung) = deadline.hung_calls() {
            return crate::LeakCheck::Unchecked(format!(
                "{hung}, and a call that never returned still holds what it allocated: the memory over the phase is not judged (the hang is a deadline violation)"
            ));
        }
        let counted = route.counts_memory();
        let thread = std::thread::current().id();
        let findings = [
            (route.source(), seen.source, "what the phase staged there"),
            (
                route.destination(),
                seen.destination,
                "what the phase put there",
            ),
        ]
        .into_iter()
        .zip(&self.samples)
        .map(|((endpoint, seen, tensor), before)| {
            judge_endpoint(
                &CaseOnEndpoint {
                    endpoint,
                    before,
                    saw_its_tensor: Some(seen),
                    tensor,
                    // The phase is over: every allocation made during
                    // it, on any thread, is the phase's.
                    stay: None,
                    thread,
                },
                counted,
            )
        })
        .collect();
        combine(findings, || {
            format!(
                "neither {} nor {} accounts its memory, so leaks cannot be seen",
                route.source().name(),
                route.destination().name()
            )
        })
    }

    /// As [`Self::finish`], and where the phase left memory in use, tell a
    /// leak from memory the provider keeps: `again` runs the phase's work
    /// once more; memory that grows again is a leak, memory that
    /// stops growing is kept memory ([`crate::LeakCheck::Kept`]).
    pub fn finish_repeating(
        &self,
        route: &crate::Route,
        seen: PhaseEvidence,
        deadline: &crate::RouteDeadline,
        again: impl FnMut(),
    ) -> crate::LeakCheck {
        match self.finish(route, seen, deadline) {
            crate::LeakCheck::Checked(leaks) if !leaks.is_empty() => {
                let judged = phase_kept_or_leaked(route, &self.samples, leaks, again);
                // A hang during the repetitions holds memory too.
                match deadline.hung_calls() {
                    Some(hung) => crate::LeakCheck::Unchecked(format!(
                        "{hung} while the phase was repeated, and a call that never returned still holds what it allocated: the memory over the phase is not judged"
                    )),
                    None => judged,
                }
            }
            other => other,
        }
    }
}
