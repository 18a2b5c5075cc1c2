//! How a run ended, and each of its inputs' [`Outcome`]: the runtime's
//! verdict, the calls and the memory check go with the input they belong
//! to, and the run's trace with each.

use crate::run::effects::InputBefore;
use crate::trace::TraceEvent;
use crate::{
    Case, Compared, HarnessError, HeldOutputs, InputReads, LeakCheck, Outcome, ProviderResult,
    Route, RuntimeOutput, RuntimeVerdict, SpyRecord,
};

use super::{Rig, case_words};

impl Rig {
    /// The [`Outcome`] of input `index` of a run that `ended` so, with its
    /// provider calls `call`, its backing's reads (before, after) and the
    /// run's `trace`.
    pub(super) fn outcome_of(
        &self,
        ended: &RunEnd<'_>,
        index: usize,
        mut call: Vec<SpyRecord>,
        (before_read, after_read): (InputBefore, Option<Compared>),
        trace: Vec<TraceEvent>,
    ) -> Outcome {
        let last = index + 1 == ended.reached;
        let runtime = ended.verdict_of(index);
        let holds_values_of = match call.first().map(|call| &call.result) {
            Some(ProviderResult::Returned(returned)) => match &returned.bytes {
                Compared::Image(bytes) => self.recent.whose(ended.cases, index, bytes),
                _ => None,
            },
            _ => None,
        };
        let after_return = call
            .first_mut()
            .and_then(|call| call.input_after_return.take());
        let in_flight = call
            .first_mut()
            .and_then(|call| call.input_in_flight.take());
        Outcome {
            runtime,
            calls: call,
            snapshot_event_domains: self.event_domains,
            trace,
            leaks: ended.leaks_of(index),
            source_saw_input: ended.source_saw_input,
            input: InputReads {
                before: before_read,
                after_return,
                after_drop: after_read,
                in_flight,
            },
            held: if last { ended.held.clone() } else { None },
            holds_values_of,
        }
    }
}

/// What a whole run ended with, shared by the outcomes of its inputs.
pub(super) struct RunEnd<'a> {
    pub(super) cases: &'a [Case],
    /// The runtime's outputs, read, or how the run ended instead.
    pub(super) outputs: &'a Result<Vec<RuntimeOutput>, RuntimeVerdict>,
    /// The number of inputs the run reached (at least one).
    pub(super) reached: usize,
    /// What the run did to the devices' memory, judged on its last input.
    pub(super) leaks: LeakCheck,
    /// The held outputs read again, reported on the last input.
    pub(super) held: Option<HeldOutputs>,
    /// Whether the source's accounting showed the staged inputs (`None`:
    /// it accounts nothing).
    pub(super) source_saw_input: Option<bool>,
}

impl RunEnd<'_> {
    /// The runtime's verdict on input `index`.
    fn verdict_of(&self, index: usize) -> RuntimeVerdict {
        let reached = self.reached;
        let last = index + 1 == reached;
        match self.outputs {
            Ok(observed) => match observed.get(index) {
                Some(output) => RuntimeVerdict::Accepted(output.clone()),
                None => RuntimeVerdict::Other {
                    message: format!("the run returned no output for input {}", index + 1),
                    chain: vec![],
                },
            },
            Err(_) if index + 1 < reached => {
                let case = &self.cases[index];
                RuntimeVerdict::Accepted(RuntimeOutput {
                    dtype: case.dtype(),
                    shape: case.shape().to_vec(),
                    bytes: Compared::NotReadable {
                        reason: format!("not read: the run stopped later, at input {reached}"),
                    },
                })
            }
            Err(verdict) if last => verdict.clone(),
            Err(_) => RuntimeVerdict::NotReached {
                stopped_at: format!("input {reached} ({})", case_words(&self.cases[reached - 1])),
            },
        }
    }

    /// The memory check of input `index`: the run's own on the last input
    /// it reached, unchecked on the others.
    fn leaks_of(&self, index: usize) -> LeakCheck {
        let reached = self.reached;
        if index + 1 == reached {
            self.leaks.clone()
        } else if index + 1 < reached {
            LeakCheck::Unchecked(format!(
                "judged once for the whole run of {} inputs, on input {reached}",
                self.cases.len()
            ))
        } else {
            LeakCheck::Unchecked("the run never reached this input".to_owned())
        }
    }
}

/// Call `i` is input `i`'s; calls past the inputs (a runtime that called
/// the provider more than once for an input) go with the last input,
/// whose judgement then says how many there were.
pub(super) fn calls_by_input(calls: Vec<SpyRecord>, inputs: usize) -> Vec<Vec<SpyRecord>> {
    let mut calls = calls.into_iter();
    let mut split: Vec<Vec<SpyRecord>> = (1..inputs)
        .map(|_| calls.next().into_iter().collect())
        .collect();
    split.push(calls.collect());
    split
}

/// A run that ended as if the provider had been called (`failed` is how
/// it ended when it did not succeed), with no call in the Spy's record, is
/// the harness's fault (a record lost, or a panic before the transfer),
/// never the provider's or the runtime's.
pub(super) fn lost_call(
    failed: Option<&RuntimeVerdict>,
    route: &Route,
) -> Result<(), HarnessError> {
    let message = match failed {
        Some(RuntimeVerdict::Unwound { message }) => {
            format!("Runtime::run panicked before the provider was called: {message}")
        }
        None
        | Some(
            RuntimeVerdict::Accepted(_)
            | RuntimeVerdict::ContractError { .. }
            | RuntimeVerdict::ProviderError { .. }
            | RuntimeVerdict::ProviderPanicked { .. },
        ) => "the runtime's verdict needs a provider call, but the Spy holds no record of one"
            .to_owned(),
        _ => return Ok(()),
    };
    Err(HarnessError::HarnessFault {
        route: route.label(),
        reason: message,
    })
}

/// The outcome of a run of one input, from the outcomes `run_together`
/// returned for it.
pub(crate) fn sole_outcome(
    route: &Route,
    mut outcomes: Vec<Outcome>,
) -> Result<Outcome, HarnessError> {
    outcomes.pop().ok_or_else(|| HarnessError::HarnessFault {
        route: route.label(),
        reason: "a run of one input gave no outcome".to_owned(),
    })
}
