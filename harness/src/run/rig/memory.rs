//! What a run did to the devices' memory (`no-leak`): judged once its
//! tensors were dropped, and, where memory stayed, told from memory the
//! provider keeps by running the same inputs again.

use crate::device::memory::Stay;
use crate::run::accounting::{
    CaseOnEndpoint, Repetition, Sample, combine, judge_endpoint, kept_or_leaked,
};
use crate::{Case, LeakCheck};

use super::Rig;
use super::plans::OutputReads;

/// After this many runs of a rig were shown to leak (their memory grew
/// again when they were repeated), later growth is judged a leak without
/// repeating: the provider fails `no-leak` already, and a leaking provider
/// should not pay a dozen repetitions on every case.
const LEAKING_RUNS_BEFORE_TRUSTED: usize = 4;

impl Rig {
    /// What the run of `cases` did to the devices' memory, once its
    /// tensors were dropped (`before`: the devices' accounting before it;
    /// `stays`: its stays on them): not judged while outputs are held on
    /// purpose; where memory stayed, the run again, and again, tells kept
    /// memory from a leak (until the rig has seen runs leak: then growth is
    /// a leak again without the repetitions' cost).
    pub(super) fn memory_after(
        &mut self,
        cases: &[Case],
        before: &[Sample; 2],
        stays: &[Stay; 2],
        staged: bool,
        saw_output: Option<bool>,
    ) -> LeakCheck {
        if self.keeping {
            return LeakCheck::Unchecked(
                "the outputs of this pass are kept alive on purpose (output-stable), so its memory is judged over the whole pass, not case by case".to_owned(),
            );
        }
        let counted = self.route.counts_memory();
        match self.judge_leaks(before, stays, staged, saw_output, counted) {
            LeakCheck::Checked(found)
                if !found.is_empty() && self.leaking_runs < LEAKING_RUNS_BEFORE_TRUSTED =>
            {
                let route = self.route.clone();
                let judged =
                    kept_or_leaked(&route, before, Some(stays), found, Repetition::RUN, || {
                        if let Some(hook) = &self.on_repetition {
                            hook();
                        }
                        self.spy.take();
                        // Only the memory of a repetition is looked at:
                        // nothing of it is read.
                        let _ =
                            self.stage_and_run(cases, &before[0], counted, OutputReads::MemoryOnly);
                        self.spy.take();
                    });
                if matches!(&judged, LeakCheck::Checked(leaks) if !leaks.is_empty()) {
                    self.leaking_runs += 1;
                }
                judged
            }
            other => other,
        }
    }

    /// What the devices' accounting says of a run once its tensors were
    /// dropped.
    fn judge_leaks(
        &self,
        before: &[Sample; 2],
        stays: &[crate::device::memory::Stay; 2],
        staged: bool,
        saw_output: Option<bool>,
        counted: bool,
    ) -> LeakCheck {
        let thread = std::thread::current().id();
        let findings = [
            CaseOnEndpoint {
                endpoint: self.route.source(),
                before: &before[0],
                saw_its_tensor: before[0].accounts().then_some(staged),
                tensor: "the staged input",
                stay: Some(&stays[0]),
                thread,
            },
            CaseOnEndpoint {
                endpoint: self.route.destination(),
                before: &before[1],
                saw_its_tensor: saw_output,
                tensor: "the output the provider returned",
                stay: Some(&stays[1]),
                thread,
            },
        ]
        .iter()
        .map(|case| judge_endpoint(case, counted))
        .collect();
        combine(findings, || {
            format!(
                "neither {} nor {} accounts its memory (its adapter keeps no ledger{}), so leaks cannot be seen",
                self.route.source().name(),
                self.route.destination().name(),
                if counted {
                    " and counts nothing"
                } else {
                    "; counts of memory in use judge no-leak from level v2"
                }
            )
        })
    }
}
