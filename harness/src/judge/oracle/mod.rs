//! `Oracle`: judges every rule from the Spy's record, independently of the
//! runtime, and reports every violation at once.

mod output;
mod side_effects;

use output::{check_event_domains, check_output, skip_output_rules};
use side_effects::{check_held, check_input, check_leaks};

use crate::TraceEvent;
use crate::judge::judgement::Judgement;
use tenferro_runtime::EventDomainId;

use crate::{Case, LeakCheck, Outcome, ProviderResult, RUNTIME_ORDER, Route, Rule, RuntimeVerdict};

/// Rules judged from the provider's output; without one they are not checked.
pub(crate) const OUTPUT_RULES: [Rule; 6] = [
    Rule::Dtype,
    Rule::Shape,
    Rule::BufferLength,
    Rule::Placement,
    Rule::Residency,
    Rule::Values,
];

/// How many of a case's last trace events a deadline message shows.
const TRACE_TAIL: usize = 12;

/// The last events of a trace, in words.
pub(crate) fn describe_trace(trace: &[TraceEvent]) -> String {
    if trace.is_empty() {
        return "no events were traced".to_owned();
    }
    let skip = trace.len().saturating_sub(TRACE_TAIL);
    let mut text = if skip > 0 {
        format!("... {skip} earlier events; ")
    } else {
        String::new()
    };
    // Each event domain is written out once, at the end, and named
    // shortly (`domain 1`) in the events: its full id is a long line.
    let mut domains: Vec<EventDomainId> = Vec::new();
    for event in &trace[skip..] {
        for domain in event.domains() {
            if !domains.contains(&domain) {
                domains.push(domain);
            }
        }
    }
    let name = |domain: &EventDomainId| {
        domains
            .iter()
            .position(|known| known == domain)
            .map_or_else(
                || format!("{domain:?}"),
                |index| format!("domain {}", index + 1),
            )
    };
    text.push_str(
        &trace[skip..]
            .iter()
            .map(|event| event.describe(&name))
            .collect::<Vec<_>>()
            .join("; "),
    );
    if !domains.is_empty() {
        text.push_str(&format!(
            " (where {})",
            domains
                .iter()
                .enumerate()
                .map(|(index, domain)| format!("domain {} is {domain:?}", index + 1))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    text
}

/// Judges outcomes.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
///
/// let route = Route::host_to_host().unwrap();
/// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
/// let case = Case::from_values(vec![2], vec![f64::NAN, -0.0]).unwrap();
/// let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
/// assert!(judgement.passed(), "{judgement:?}");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Oracle;

impl Oracle {
    /// Judge one case's outcome on `route`.
    #[allow(
        clippy::too_many_lines,
        reason = "the oracle's rule-by-rule checks: one block per rule, in catalogue order"
    )]
    pub fn judge(&self, case: &Case, route: &Route, outcome: &Outcome) -> Judgement {
        let mut judgement = Judgement::empty();
        let unjudged = match &outcome.runtime {
            RuntimeVerdict::Abandoned { limit, hung_on } => Some(abandoned_reason(*limit, hung_on)),
            RuntimeVerdict::NotReached { stopped_at } => Some(not_reached_reason(stopped_at)),
            _ => None,
        };
        if let Some(reason) = unjudged {
            for rule in Rule::ALL {
                judgement.skip(rule, &reason);
            }
            return judgement.finish();
        }
        let Some(call) = outcome.call() else {
            match (&outcome.runtime, outcome.calls.len()) {
                (RuntimeVerdict::TimedOut { limit }, 0) => judgement.violate(
                    Rule::Deadline,
                    format!(
                        "the run did not finish within {limit:?}, and the provider was not being called; trace: {}",
                        describe_trace(&outcome.trace)
                    ),
                ),
                (_, count) => judgement.violate(
                    Rule::RuntimeAgreement,
                    format!(
                        "the runtime called the provider {count} times for one transfer, expected once"
                    ),
                ),
            }
            // Only the rule broken above was judged: with no single call
            // there is no output, error or panic of the provider to judge.
            let broken = judgement.rules();
            for rule in Rule::ALL.into_iter().filter(|rule| !broken.contains(rule)) {
                judgement.skip(
                    rule,
                    "there was no single provider call to judge (see the deadline or runtime-agreement violation)",
                );
            }
            return judgement.finish();
        };
        check_event_domains(route, outcome, &call.request, &mut judgement);
        let injected = outcome
            .trace
            .iter()
            .any(|event| matches!(event, TraceEvent::FaultInjected { .. }));
        match &call.result {
            ProviderResult::Panicked { message } => {
                judgement.violate(Rule::NoPanic, format!("the provider panicked: {message}"));
                skip_output_rules(
                    &mut judgement,
                    "the provider panicked, so there is no output",
                );
            }
            ProviderResult::TimedOut { limit } => {
                judgement.violate(
                    Rule::Deadline,
                    format!(
                        "the provider had not returned after {limit:?}; trace: {}",
                        describe_trace(&outcome.trace)
                    ),
                );
                skip_output_rules(
                    &mut judgement,
                    "the provider never returned, so there is no output",
                );
            }
            ProviderResult::Failed {
                message,
                chain,
                device_error,
            } => {
                match device_error {
                    Some(error) if injected => judgement.expected_errors.push(format!(
                        "the provider passed the injected device failure on as a typed Err: {error}"
                    )),
                    _ => {
                        let mut text = format!(
                            "the provider returned Err for a case inside its capabilities: {message}"
                        );
                        for source in chain {
                            text.push_str(&format!("\n  caused by: {source}"));
                        }
                        if injected {
                            text.push_str("\n  (the device did inject a fault, but the Err does not carry the device's error in its source chain)");
                        }
                        judgement.violate(Rule::NoError, text);
                    }
                }
                skip_output_rules(
                    &mut judgement,
                    "the provider returned Err, so there is no output",
                );
            }
            ProviderResult::StorageHung { method, limit } => {
                judgement.violate(
                    Rule::Deadline,
                    format!(
                        "the provider returned a tensor whose storage's {method} had not returned after {limit:?}; trace: {}",
                        describe_trace(&outcome.trace)
                    ),
                );
                skip_output_rules(
                    &mut judgement,
                    "the returned storage hung while it was read back, so the output was not read",
                );
            }
            ProviderResult::Returned(returned) => {
                for panic in &returned.storage_panics {
                    judgement.violate(Rule::NoPanic, panic.to_string());
                }
                if let RuntimeVerdict::Unwound { message } = &outcome.runtime {
                    judgement.violate(
                        Rule::NoPanic,
                        format!(
                            "after the provider returned its tensor, a panic escaped Runtime::run while the runtime and the destination engine handled that tensor (a call into its storage such as len, map_read or its Drop, or the destination engine's use of it): {message}"
                        ),
                    );
                }
                check_output(
                    case,
                    route,
                    returned,
                    outcome.holds_values_of.as_deref(),
                    &outcome.input.before,
                    &mut judgement,
                )
            }
        }
        check_leaks(&outcome.leaks, &mut judgement);
        check_input(case, &outcome.input, &mut judgement);
        check_held(outcome.held.as_ref(), &mut judgement);
        check_agreement(&outcome.runtime, &mut judgement);
        judgement.skip(Rule::CapabilityHonesty, INSIDE_CAPABILITIES);
        judgement.finish()
    }
}

impl Oracle {
    /// Judge what a pass that held outputs found when it read them again:
    /// `output-stable` alone (every other rule is judged on the cases
    /// themselves).
    pub fn judge_held(&self, held: &crate::HeldOutputs) -> Judgement {
        let mut judgement = Judgement::empty();
        check_held(Some(held), &mut judgement);
        only(
            judgement,
            Rule::OutputStable,
            "judged on the cases themselves, not on the outputs held over the pass",
        )
    }

    /// Judge the memory a phase of cases left behind on the devices
    /// ([`crate::PhaseMemory`]): `no-leak` alone.
    pub fn judge_phase_memory(&self, leaks: &LeakCheck) -> Judgement {
        let mut judgement = Judgement::empty();
        check_leaks(leaks, &mut judgement);
        only(
            judgement,
            Rule::NoLeak,
            "judged on the cases themselves, not on the memory over the phase",
        )
    }
}

/// `judgement` with every rule but `kept` unchecked for `reason`.
fn only(mut judgement: Judgement, kept: Rule, reason: &str) -> Judgement {
    for rule in Rule::ALL.into_iter().filter(|rule| *rule != kept) {
        judgement.skip(rule, reason);
    }
    judgement.finish()
}

/// Why a case the watchdog abandoned on a short deadline is not judged.
pub fn abandoned_reason(limit: std::time::Duration, hung_on: &str) -> String {
    format!(
        "after the provider hung on {hung_on} (a deadline violation), this route's later cases get a deadline of {limit:?} (derived from its successful calls), and this one overran it: not proven to hang, so not judged; replay it alone to judge it"
    )
}

/// Why an input a run of several never reached is not judged.
pub fn not_reached_reason(stopped_at: &str) -> String {
    format!(
        "the run moved several inputs and stopped at {stopped_at} before this input moved, so there is nothing of it to judge (the failure is reported on that input)"
    )
}

/// Why [`Oracle::judge`] leaves `capability-honesty` unchecked: the rule
/// binds only cases outside the declared capabilities
/// ([`Oracle::judge_outside`]).
pub const INSIDE_CAPABILITIES: &str = "the case is inside the declared capabilities";

fn check_agreement(runtime: &RuntimeVerdict, judgement: &mut Judgement) {
    // Two verdicts are compared only when both exist.
    if let RuntimeVerdict::Unwound { .. } = runtime {
        judgement.skip(
            Rule::RuntimeAgreement,
            "a panic escaped Runtime::run, so the runtime gave no verdict to compare",
        );
        return;
    }
    let first = RUNTIME_ORDER.into_iter().find(|rule| {
        judgement
            .violations
            .iter()
            .any(|violation| violation.rule == *rule)
    });
    let disagreement = match (runtime, first) {
        (RuntimeVerdict::ContractError { variant, message, .. }, Some(rule)) => (rule.runtime_variant().as_ref() != Some(variant))
            .then(|| format!("the runtime rejected the output with {variant} ({message}), the oracle's first runtime-checked violation is {rule}")),
        (RuntimeVerdict::ContractError { variant, message, .. }, None) => Some(format!(
            "the runtime rejected the output with {variant} ({message}), the oracle found no runtime-checked violation"
        )),
        (RuntimeVerdict::Accepted(_), Some(rule)) => {
            Some(format!("the runtime accepted the output, the oracle found a {rule} violation"))
        }
        // The runtime let an output it checks through (the destination's
        // registration accepted it) and failed only later, elsewhere.
        (RuntimeVerdict::Other { message, .. }, Some(rule)) => Some(format!(
            "the runtime did not refuse the output for its {rule} violation (the destination's registration let it through) and the run failed later: {message}"
        )),
        (RuntimeVerdict::Other { message, .. }, None)
            // A destination engine may fail on an output whose values
            // cannot be read in full: the run's failure is explained then.
            if !judgement.violations.iter().any(|violation| matches!(violation.rule, Rule::NoError | Rule::NoPanic | Rule::Completion | Rule::Deadline | Rule::Values)) =>
        {
            Some(format!("the oracle found no runtime-checked violation, yet the run failed: {message}"))
        }
        _ => None,
    };
    if let Some(message) = disagreement {
        judgement.violate(Rule::RuntimeAgreement, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agreement(runtime: &RuntimeVerdict, broken: Option<Rule>) -> Vec<String> {
        let mut judgement = Judgement::empty();
        if let Some(rule) = broken {
            judgement.violate(rule, "seen by the oracle".to_owned());
        }
        check_agreement(runtime, &mut judgement);
        judgement
            .violations()
            .iter()
            .filter(|violation| violation.rule == Rule::RuntimeAgreement)
            .map(|violation| violation.message.clone())
            .collect()
    }

    #[test]
    fn a_runtime_that_lets_a_checked_violation_through_and_fails_later_disagrees() {
        let later = RuntimeVerdict::Other {
            message: "the engine could not read the output".to_owned(),
            chain: vec![],
        };
        let found = agreement(&later, Some(Rule::Placement));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("did not refuse the output for its placement violation"));
        // A run that failed with the oracle seeing why (the values could
        // not be read) is explained, not a disagreement.
        assert!(agreement(&later, Some(Rule::Values)).is_empty());
    }
}
