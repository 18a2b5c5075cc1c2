//! `Oracle`: judges every rule from the Spy's record, independently of the
//! runtime, and reports every violation at once.

use crate::{Element, TraceEvent, element_width, with_element};
use serde::Serialize;
use tenferro_tensor::DType;

use crate::{
    Case, CompletionState, LeakCheck, Outcome, ProviderResult, RUNTIME_ORDER, ReadBack,
    RequestRecord, ReturnedTensor, Route, Rule, RuntimeVerdict,
};

/// One broken rule, with a message precise enough to act on.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, serde::Deserialize)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// What was wrong.
    pub message: String,
}

/// A rule the oracle could not judge on this case, and why. Never a pass.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, serde::Deserialize)]
pub struct Unchecked {
    /// The rule.
    pub rule: Rule,
    /// Why it was not checked.
    pub reason: String,
}

/// The oracle's judgement of one case: the rules it checked, those broken
/// among them, and those it could not check, with why.
///
/// Only the oracle makes one ([`Oracle::judge`], [`Oracle::judge_outside`]),
/// and every rule of the catalogue is then either checked or unchecked with
/// its reason: which rules a case checked is decided here, once, never by
/// the path that ran the case. A caller may only take checks away
/// ([`uncheck`](Judgement::uncheck)) or say better why a rule was not
/// checked ([`explain_unchecked`](Judgement::explain_unchecked)).
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Judgement {
    /// Every rule broken, in catalogue order.
    pub(crate) violations: Vec<Violation>,
    /// Rules not judged on this case.
    pub(crate) unchecked: Vec<Unchecked>,
    /// Device failures the provider correctly passed on as a typed `Err`
    /// (injected by a fault plan): expected errors, not violations.
    pub(crate) expected_errors: Vec<String>,
    /// The rules judged on this case (held or broken), in catalogue order.
    #[serde(skip)]
    checked: Vec<Rule>,
}

impl Judgement {
    /// A judgement not yet made: nothing checked.
    pub(crate) fn empty() -> Self {
        Self {
            violations: Vec::new(),
            unchecked: Vec::new(),
            expected_errors: Vec::new(),
            checked: Vec::new(),
        }
    }

    /// Whether no rule was broken.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Every rule broken, in catalogue order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The rules not checked on this case, with why (never a pass).
    pub fn unchecked(&self) -> &[Unchecked] {
        &self.unchecked
    }

    /// Device failures the provider correctly passed on as a typed `Err`
    /// (injected by a fault plan): expected errors, not violations.
    pub fn expected_errors(&self) -> &[String] {
        &self.expected_errors
    }

    /// The rules the oracle judged on this case, held or broken, in
    /// catalogue order.
    pub fn checked(&self) -> &[Rule] {
        &self.checked
    }

    /// Whether the oracle judged `rule` on this case.
    pub fn was_checked(&self, rule: Rule) -> bool {
        self.checked.contains(&rule)
    }

    /// Why `rule` was not checked, if it was not.
    pub fn why_unchecked(&self, rule: Rule) -> Option<&str> {
        self.unchecked
            .iter()
            .find(|item| item.rule == rule)
            .map(|item| item.reason.as_str())
    }

    /// The rules broken, in catalogue order, without repeats.
    pub fn rules(&self) -> Vec<Rule> {
        let mut rules: Vec<Rule> = self
            .violations
            .iter()
            .map(|violation| violation.rule)
            .collect();
        rules.sort();
        rules.dedup();
        rules
    }

    /// Take `rule` out of the judgement: it no longer counts as checked,
    /// its violations are dropped, and it is unchecked for `reason` (a rule
    /// outside a pinned level, say). The one way to change what a
    /// judgement checked, and it can only take a check away.
    pub fn uncheck(&mut self, rule: Rule, reason: impl Into<String>) {
        self.violations.retain(|violation| violation.rule != rule);
        self.checked.retain(|checked| *checked != rule);
        let reason = reason.into();
        match self.unchecked.iter_mut().find(|item| item.rule == rule) {
            Some(item) => item.reason = reason,
            None => self.unchecked.push(Unchecked { rule, reason }),
        }
    }

    /// Say better why `rule` was not checked (the suite knows why a
    /// provider's capabilities leave nothing to refuse, say); a rule that
    /// was checked stays checked, and this does nothing.
    pub fn explain_unchecked(&mut self, rule: Rule, reason: impl Into<String>) {
        if let Some(item) = self.unchecked.iter_mut().find(|item| item.rule == rule) {
            item.reason = reason.into();
        }
    }

    pub(crate) fn violate(&mut self, rule: Rule, message: String) {
        self.violations.push(Violation { rule, message });
    }

    pub(crate) fn skip(&mut self, rule: Rule, reason: &str) {
        self.unchecked.push(Unchecked {
            rule,
            reason: reason.to_owned(),
        });
    }

    /// Close the judgement: every rule of the catalogue not listed as
    /// unchecked was judged, and a broken rule counts as checked even where
    /// one of its checks could not be made (its violation stands).
    pub(crate) fn finish(mut self) -> Self {
        self.violations.sort_by_key(|violation| violation.rule);
        let broken = self.rules();
        self.checked = Rule::ALL
            .into_iter()
            .filter(|rule| {
                broken.contains(rule) || !self.unchecked.iter().any(|item| item.rule == *rule)
            })
            .collect();
        self
    }
}

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
    text.push_str(
        &trace[skip..]
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    );
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
    pub fn judge(&self, case: &Case, route: &Route, outcome: &Outcome) -> Judgement {
        let mut judgement = Judgement::empty();
        if let RuntimeVerdict::Abandoned { limit, hung_on } = &outcome.runtime {
            let reason = abandoned_reason(*limit, hung_on);
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
                check_output(case, route, returned, &mut judgement)
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

/// A held output that changed, in words.
fn changed_message(changed: &crate::ChangedOutput) -> String {
    match &changed.after {
        Some(after) => format!(
            "the output of case {}, still held by the caller, changed after the call of case {after}: {}",
            changed.case, changed.difference
        ),
        None => format!(
            "the output of case {}, still held by the caller, had changed when it was read at the end of the route: {}",
            changed.case, changed.difference
        ),
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

/// Why [`Oracle::judge`] leaves `capability-honesty` unchecked: the rule
/// binds only cases outside the declared capabilities
/// ([`Oracle::judge_outside`]).
pub const INSIDE_CAPABILITIES: &str = "the case is inside the declared capabilities";

/// `no-leak`: what the accounting of the devices left behind.
fn check_leaks(leaks: &LeakCheck, judgement: &mut Judgement) {
    let found = match leaks {
        LeakCheck::Checked(found) => found,
        LeakCheck::Unchecked(reason) => return judgement.skip(Rule::NoLeak, reason),
    };
    let allocations: Vec<&crate::LeakedAllocation> = found
        .iter()
        .filter_map(|leak| match leak {
            crate::Leak::Allocation(allocation) => Some(allocation),
            _ => None,
        })
        .collect();
    if !allocations.is_empty() {
        let bytes: usize = allocations.iter().map(|leak| leak.allocation.bytes).sum();
        let listed: Vec<String> = allocations
            .iter()
            .map(|leak| format!("{} on {}", leak.allocation, leak.endpoint))
            .collect();
        judgement.violate(
            Rule::NoLeak,
            format!(
                "{} allocation(s) ({bytes} bytes) made during the case are still live after its tensors were dropped: {}",
                allocations.len(),
                listed.join(", ")
            ),
        );
    }
    for leak in found {
        if let crate::Leak::Growth { endpoint, growth } = leak {
            judgement.violate(
                Rule::NoLeak,
                format!(
                    "the memory in use on {endpoint}, as the device counts it, grew by {growth} over the case and stayed grown after its tensors were dropped and the device settled"
                ),
            );
        }
    }
}

/// `input-intact`: the input's backing, read before the call, right after
/// it and after the output was dropped, must not change.
fn check_input(case: &Case, reads: &crate::InputReads, judgement: &mut Judgement) {
    let before = match &reads.before {
        ReadBack::Bytes(bytes) => bytes,
        ReadBack::NotReadable { reason } => return judgement.skip(Rule::InputIntact, reason),
        ReadBack::Failed { reason } => {
            return judgement.skip(
                Rule::InputIntact,
                &format!("the input could not be read before the call: {reason}"),
            );
        }
    };
    let backing: Vec<usize> = match case.layout() {
        crate::Layout::View(view) => view.backing_shape.clone(),
        _ => case.shape().to_vec(),
    };
    let mut compared = false;
    for (when, read) in [
        ("as soon as the provider returned", &reads.after_return),
        ("after the output was read and dropped", &reads.after_drop),
    ] {
        let Some(read) = read else { continue };
        match read {
            ReadBack::Bytes(after) => {
                compared = true;
                if let Some(difference) = compare_images(case.dtype(), &backing, before, after) {
                    judgement.violate(
                        Rule::InputIntact,
                        format!(
                            "the transfer changed its input, a borrow the caller still owns: read {when}, the input's backing{} has changed: {difference}",
                            if matches!(case.layout(), crate::Layout::View(_)) {
                                " (the view's gaps included)"
                            } else {
                                ""
                            }
                        ),
                    );
                    return;
                }
            }
            ReadBack::Failed { reason } => {
                judgement.violate(
                    Rule::InputIntact,
                    format!("the input could not be read back {when}: {reason}"),
                );
                return;
            }
            ReadBack::NotReadable { .. } => {}
        }
    }
    if !compared {
        judgement.skip(
            Rule::InputIntact,
            "the input was not read again after the call (the provider never returned)",
        );
    }
}

/// `output-stable`: outputs of earlier cases the rig held must not have
/// changed after this one.
fn check_held(held: Option<&crate::HeldOutputs>, judgement: &mut Judgement) {
    let Some(held) = held else {
        return judgement.skip(
            Rule::OutputStable,
            "no earlier output is held on this path (the route's pass that holds outputs checks the rule)",
        );
    };
    for changed in &held.changed {
        judgement.violate(Rule::OutputStable, changed_message(changed));
    }
    if held.reread == 0 && held.changed.is_empty() {
        judgement.skip(
            Rule::OutputStable,
            "no earlier output was held when this case ran",
        );
    }
}

fn skip_output_rules(judgement: &mut Judgement, reason: &str) {
    for rule in OUTPUT_RULES {
        judgement.skip(rule, reason);
    }
    judgement.skip(Rule::Completion, reason);
}

/// The request's event-domain ids must be the snapshot's, and a transfer to
/// a simulated destination must launch in that destination's domain.
fn check_event_domains(
    route: &Route,
    outcome: &Outcome,
    request: &RequestRecord,
    judgement: &mut Judgement,
) {
    let (source, destination) = outcome.snapshot_event_domains;
    if request.source_event_domain_id != source
        || request.destination_event_domain_id != destination
    {
        judgement.violate(
            Rule::RuntimeAgreement,
            format!(
                "the request names event domains {:?} -> {:?}, the runtime's snapshot assigns {source:?} -> {destination:?}",
                request.source_event_domain_id, request.destination_event_domain_id
            ),
        );
    }
    if route.destination().adapter().launches_in_own_domain()
        && request.launch_domain != Some(destination)
    {
        judgement.violate(
            Rule::RuntimeAgreement,
            format!(
                "the transfer to {} launched in {:?}, not in the destination's event domain {destination:?}",
                route.destination().name(),
                request.launch_domain
            ),
        );
    }
}

fn check_output(case: &Case, route: &Route, returned: &ReturnedTensor, judgement: &mut Judgement) {
    let destination = route.destination();
    if returned.dtype != case.dtype() {
        judgement.violate(
            Rule::Dtype,
            format!(
                "output dtype is {:?}, the input's is {:?}",
                returned.dtype,
                case.dtype()
            ),
        );
    }
    if returned.shape != case.shape() {
        judgement.violate(
            Rule::Shape,
            format!(
                "output shape is {:?}, the input's is {:?}",
                returned.shape,
                case.shape()
            ),
        );
    }
    match returned.buffer_len {
        Some(len) if len != case.len() => judgement.violate(
            Rule::BufferLength,
            format!(
                "output buffer reports {len} elements, the shape {:?} holds {}",
                case.shape(),
                case.len()
            ),
        ),
        Some(len) => {
            if let Some(later) = returned.buffer_len_changed_to {
                judgement.violate(
                    Rule::BufferLength,
                    format!(
                        "output buffer reported {len} elements, then {later} when asked again: its length changes between calls (the shape {:?} holds {})",
                        case.shape(),
                        case.len()
                    ),
                );
            }
        }
        None => judgement.skip(
            Rule::BufferLength,
            "the returned storage panicked in len, so its length is unknown (see no-panic)",
        ),
    }
    let placement = destination.placement_rule();
    if !placement.accepts(&returned.placement) {
        judgement.violate(
            Rule::Placement,
            format!(
                "output placement is {:?}, destination {} requires {placement}",
                returned.placement,
                destination.name()
            ),
        );
    }
    let storage = destination.storage_rule();
    if !storage.accepts(returned.backend_family, returned.allocation_domain) {
        judgement.violate(
            Rule::Residency,
            format!(
                "output storage is backend family {:?} in {:?}, destination {} requires {storage}{}",
                returned.backend_family,
                returned.allocation_domain,
                destination.name(),
                residency_difference(&storage, returned),
            ),
        );
    }
    match &returned.completion {
        CompletionState::Complete => {}
        CompletionState::Pending { detail } => {
            judgement.violate(
                Rule::Completion,
                format!("transfer_blocking returned while the copy into its output was still in flight ({detail}): the output was not readable"),
            );
            judgement.skip(
                Rule::Values,
                "the copy had not completed, so the output held no final values",
            );
            return;
        }
        CompletionState::Failed { detail } => {
            judgement.violate(
                Rule::Completion,
                format!("the copy into the output failed ({detail}), and the provider returned the tensor instead of an Err"),
            );
            judgement.skip(
                Rule::Values,
                "the copy failed, so the output held no final values",
            );
            return;
        }
        CompletionState::Unknown { reason } => judgement.skip(Rule::Completion, reason),
    }
    // Values are compared element by element, which presupposes the
    // element type and count; a wrong dtype or length is already reported.
    if returned.panic_in("map_read").is_some()
        || returned.panic_in("the destination's read-back").is_some()
    {
        judgement.skip(
            Rule::Values,
            "the returned storage panicked while it was read back, so its values could not be read (see no-panic)",
        );
        return;
    }
    if returned.dtype != case.dtype() || returned.buffer_len.is_some_and(|len| len != case.len()) {
        judgement.skip(
            Rule::Values,
            "dtype or buffer length is wrong, so elements cannot be paired",
        );
        return;
    }
    if returned.buffer_len.is_none() || returned.buffer_len_changed_to.is_some() {
        judgement.skip(
            Rule::Values,
            "the buffer's length is unknown or changes between calls, so elements cannot be paired",
        );
        return;
    }
    match &returned.bytes {
        ReadBack::Failed { reason } => judgement.violate(
            Rule::Values,
            format!("the output buffer could not be read: {reason}"),
        ),
        ReadBack::NotReadable { reason } => judgement.skip(Rule::Values, reason),
        ReadBack::Bytes(bytes) => {
            if let Some(message) = compare_values(case, bytes) {
                judgement.violate(Rule::Values, message);
            }
        }
    }
}

/// Which part of the storage identity is wrong, in words, because the
/// numbers of allocation domains mean little to a reader.
fn residency_difference(storage: &crate::StorageRule, returned: &ReturnedTensor) -> &'static str {
    match storage {
        crate::StorageRule::PlainHost => " (the output is backend storage, not plain host memory)",
        crate::StorageRule::Domain { family, domain } => {
            match (
                returned.backend_family == Some(family),
                returned.allocation_domain == Some(*domain),
            ) {
                (true, false) => " (the allocation domain is foreign)",
                (false, true) => " (the backend family is wrong)",
                _ => " (both the backend family and the allocation domain are wrong)",
            }
        }
    }
}

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

/// Compare the output image with the case's, element by element.
fn compare_values(case: &Case, actual: &[u8]) -> Option<String> {
    compare_images(case.dtype(), case.shape(), case.values(), actual)
}

/// Compare two images of `dtype` elements laid out in `shape`, element by
/// element: `None` when equal, else how many differ and the first and last.
pub(crate) fn compare_images(
    dtype: DType,
    shape: &[usize],
    expected: &[u8],
    actual: &[u8],
) -> Option<String> {
    let width = element_width(dtype)?;
    let count = expected.len() / width;
    if actual.len() != expected.len() {
        return Some(format!(
            "the output buffer was read as {} elements ({} bytes), its shape and length say {} ({} bytes): map_read handed out a different number of elements than len reports",
            actual.len() / width,
            actual.len(),
            expected.len() / width,
            expected.len()
        ));
    }
    if actual == expected {
        return None;
    }
    let wrong: Vec<usize> = expected
        .chunks_exact(width)
        .zip(actual.chunks_exact(width))
        .enumerate()
        .filter_map(|(index, (want, got))| (want != got).then_some(index))
        .collect();
    let (&first, &last) = (wrong.first()?, wrong.last()?);
    let describe = |index: usize| {
        let element = |image: &[u8], at: usize| render(dtype, &image[at * width..(at + 1) * width]);
        let before = if index > 0 {
            format!("[{}] {}, ", index - 1, element(actual, index - 1))
        } else {
            String::new()
        };
        let after = if index + 1 < count {
            format!(", [{}] {}", index + 1, element(actual, index + 1))
        } else {
            String::new()
        };
        format!(
            "at {:?} (element {index}): expected {}, actual {}; actual around it: {before}*[{index}] {}*{after}",
            unravel(index, shape),
            element(expected, index),
            element(actual, index),
            element(actual, index),
        )
    };
    let mut message = format!(
        "{} of {} elements differ; first {}",
        wrong.len(),
        count,
        describe(first)
    );
    if last != first {
        message.push_str(&format!("; last {}", describe(last)));
    }
    Some(message)
}

/// Column-major multi-index of element `index` in `shape`.
fn unravel(mut index: usize, shape: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .map(|&extent| {
            let coordinate = index % extent.max(1);
            index /= extent.max(1);
            coordinate
        })
        .collect()
}

/// `decimal (hex)` of one element image.
fn render(dtype: DType, image: &[u8]) -> String {
    let decimal = with_element!(dtype, T => T::from_bytes(image).first().map(|value| format!("{value:?}")).unwrap_or_default(),
        external => String::new());
    let hex = match dtype {
        DType::C32 | DType::C64 => {
            let (re, im) = image.split_at(image.len() / 2);
            format!("0x{}:0x{}", hex_le(re), hex_le(im))
        }
        _ => format!("0x{}", hex_le(image)),
    };
    format!("{decimal} ({hex})")
}

fn hex_le(image: &[u8]) -> String {
    image
        .iter()
        .rev()
        .map(|byte| format!("{byte:02x}"))
        .collect()
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
