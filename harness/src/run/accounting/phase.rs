//! The memory of a route's devices over a whole phase of cases.

use super::{CaseOnEndpoint, Sample, combine, judge_endpoint, phase_kept_or_leaked};
use crate::Endpoint;

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
/// use tenferro_transfer_harness::{LeakCheck, PhaseMemory, Route, RouteDeadline};
///
/// // Plain host memory accounts nothing: the phase is unchecked, and why.
/// let route = Route::host_to_host().unwrap();
/// let deadline = RouteDeadline::new(Duration::from_secs(60));
/// let phase = PhaseMemory::start(&route);
/// // ... the phase's cases run here ...
/// assert!(matches!(phase.finish(&route, true, &deadline), LeakCheck::Unchecked(_)));
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
    /// `accounting_seen` says whether the accounting was shown to see what
    /// the phase put on the devices (without that, its silence vouches for
    /// nothing and the verdict is unchecked). Where calls of the route
    /// never returned (`deadline` says how many), what they hold is not
    /// this phase's leak: the verdict is unchecked, naming them.
    pub fn finish(
        &self,
        route: &crate::Route,
        accounting_seen: bool,
        deadline: &crate::RouteDeadline,
    ) -> crate::LeakCheck {
        if let Some(hung) = deadline.hung_calls() {
            return crate::LeakCheck::Unchecked(format!(
                "{hung}, and a call that never returned still holds what it allocated: the memory over the phase is not judged (the hang is a deadline violation)"
            ));
        }
        let counted = route.counts_memory();
        let thread = std::thread::current().id();
        let findings = [route.source(), route.destination()]
            .into_iter()
            .zip(&self.samples)
            .map(|(endpoint, before)| {
                judge_endpoint(
                    &CaseOnEndpoint {
                        endpoint,
                        before,
                        saw_its_tensor: Some(accounting_seen),
                        tensor: "what the phase put there",
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
        accounting_seen: bool,
        deadline: &crate::RouteDeadline,
        again: impl FnMut(),
    ) -> crate::LeakCheck {
        match self.finish(route, accounting_seen, deadline) {
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
