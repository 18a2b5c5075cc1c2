//! The rules on the returned tensor itself: dtype, shape, buffer length,
//! placement, residency, completion and values, and the event domains the
//! request carried.

use crate::judge::judgement::Judgement;
use crate::values::image_diff::compare_images;
use crate::{
    Case, Compared, CompletionState, InputBefore, Layout, Outcome, RequestRecord, ReturnedTensor,
    Route, Rule,
};

use super::OUTPUT_RULES;

pub(super) fn skip_output_rules(judgement: &mut Judgement, reason: &str) {
    for rule in OUTPUT_RULES {
        judgement.skip(rule, reason);
    }
    judgement.skip(Rule::Completion, reason);
}

/// The request's event-domain ids must be the snapshot's, and a transfer to
/// a simulated destination must launch in that destination's domain.
pub(super) fn check_event_domains(
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

/// The rules judged from the returned tensor, one after the other.
#[allow(
    clippy::too_many_lines,
    reason = "the oracle's rule-by-rule checks: one block per rule, in catalogue order"
)]
pub(super) fn check_output(
    case: &Case,
    route: &Route,
    returned: &ReturnedTensor,
    holds_values_of: Option<&str>,
    staged: &InputBefore,
    judgement: &mut Judgement,
) {
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
        Compared::Failed { reason } => judgement.violate(
            Rule::Values,
            format!("the output buffer could not be read: {reason}"),
        ),
        Compared::NotReadable { reason } => judgement.skip(Rule::Values, reason),
        // Compared with the case's values as it was read: bit for bit.
        Compared::Same => {}
        Compared::Image(bytes) => {
            if let Some(mut message) = compare_values(case, bytes) {
                if let Some(other) = holds_values_of {
                    message.push_str(&format!(
                        "; the output holds the values of {other}: state the provider kept from one call to the next (a cache, a pool or a staging buffer) answered this one"
                    ));
                }
                if let (Layout::Owned, InputBefore::Bytes(read)) = (case.layout(), staged)
                    && read.as_ref() == bytes.as_slice()
                {
                    message.push_str(STAGED_WRONG);
                }
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

/// Said of an output that holds exactly what its owned input held when it
/// was read before the call, where that already differed from the case.
const STAGED_WRONG: &str = "; the output holds exactly what the input held when it was read before the call, which already differed from the case's values: the provider moved its input as it found it, and the input was wrong before the call (the source adapter's `stage`, the source device's upload or read-back, or an earlier call's late write into the input's memory)";

/// Compare the output image with the case's, element by element.
pub(super) fn compare_values(case: &Case, actual: &[u8]) -> Option<String> {
    compare_images(case.dtype(), case.shape(), case.values(), actual)
}
