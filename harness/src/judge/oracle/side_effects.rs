//! The rules on what a transfer does besides its output: `no-leak` (what
//! the devices' accounting left behind), `input-intact` (the borrowed
//! input's backing unchanged) and `output-stable` (earlier outputs the
//! caller holds unchanged).

use crate::judge::judgement::Judgement;
use crate::values::compared::ReferenceView;
use crate::values::image_diff::compare_images;
use crate::{Case, LeakCheck, Rule};

/// `no-leak`: what the accounting of the devices left behind.
pub(super) fn check_leaks(leaks: &LeakCheck, judgement: &mut Judgement) {
    let found = match leaks {
        LeakCheck::Checked(found) => found,
        LeakCheck::Unchecked(reason) => return judgement.skip(Rule::NoLeak, reason),
        LeakCheck::Kept(kept) => {
            judgement.kept.extend(kept.iter().cloned());
            return;
        }
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
        if let crate::Leak::Growth {
            endpoint,
            growth,
            repeated,
            ..
        } = leak
        {
            judgement.violate(
                Rule::NoLeak,
                format!(
                    "the memory in use on {endpoint}, as the device counts it, grew by {growth} over the case and stayed grown after its tensors were dropped and the device settled{}",
                    repetition_profile(repeated)
                ),
            );
        }
    }
}

/// Where the memory stood after each repetition of a case that leaked, in
/// words: `; the case was run 12 more times to tell memory a provider
/// keeps from a leak, and after each it stood at +2 +3 +4 (×2) allocation(s)
/// above where it was before the case`. Empty when it was not repeated.
fn repetition_profile(repeated: &[crate::MemoryGrowth]) -> String {
    let series = |pick: fn(&crate::MemoryGrowth) -> Option<i64>, unit: &str| {
        let values: Option<Vec<i64>> = repeated.iter().map(pick).collect();
        values.map(|values| format!("{} {unit}", runs(&values)))
    };
    let parts: Vec<String> = [
        series(|growth| growth.allocations, "allocation(s)"),
        series(|growth| growth.bytes, "bytes"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if repeated.is_empty() || parts.is_empty() {
        return String::new();
    }
    format!(
        "; the case was run {} more times to tell memory a provider keeps from a leak, and after each it stood at {} above where it was before the case",
        repeated.len(),
        parts.join(", and ")
    )
}

/// `+1 +2 +2 +2 +3` as `+1 +2 (×3) +3`, and a rise by the same step over
/// four or more repetitions as `+2 to +49 (+1 each)`.
fn runs(values: &[i64]) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(&value) = values.get(index) {
        let same = values[index..]
            .iter()
            .take_while(|other| **other == value)
            .count();
        let step = values.get(index + 1).map_or(0, |next| next - value);
        let stepped = 1 + values[index..]
            .windows(2)
            .take_while(|pair| pair[1] - pair[0] == step)
            .count();
        if same > 1 {
            words.push(format!("{value:+} (×{same})"));
            index += same;
        } else if stepped >= 4 {
            let last = values[index + stepped - 1];
            words.push(format!("{value:+} to {last:+} ({step:+} each)"));
            index += stepped;
        } else {
            words.push(format!("{value:+}"));
            index += 1;
        }
    }
    words.join(" ")
}

/// `input-intact`: the input's backing, read before the call, right after
/// it and after the output was dropped, and beside the call where it was
/// read so, must not change.
pub(super) fn check_input(case: &Case, reads: &crate::InputReads, judgement: &mut Judgement) {
    let before = match &reads.before {
        crate::InputBefore::NotReadable { reason } => {
            return judgement.skip(Rule::InputIntact, reason);
        }
        crate::InputBefore::Failed { reason } => {
            return judgement.skip(
                Rule::InputIntact,
                &format!("the input could not be read before the call: {reason}"),
            );
        }
        before => before.reference_view(case),
    };
    let backing: Vec<usize> = match case.layout() {
        crate::Layout::View(view) => view.backing_shape.clone(),
        _ => case.shape().to_vec(),
    };
    let mut compared = false;
    for (when, read) in [
        ("as soon as the provider returned", &reads.after_return),
        ("after the output was read and dropped", &reads.after_drop),
        (
            "beside the call while it was in flight (and put back before the call returned; but others may read a borrow meanwhile)",
            &reads.in_flight,
        ),
    ] {
        let Some(read) = read else { continue };
        match read {
            crate::Compared::Same => compared = true,
            crate::Compared::Image(after) => {
                compared = true;
                // Made whole only here, where a difference is to be shown.
                let before = before.map(ReferenceView::bytes).unwrap_or_default();
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
            crate::Compared::Failed { reason } => {
                judgement.violate(
                    Rule::InputIntact,
                    format!("the input could not be read back {when}: {reason}"),
                );
                return;
            }
            crate::Compared::NotReadable { .. } => {}
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
pub(super) fn check_held(held: Option<&crate::HeldOutputs>, judgement: &mut Judgement) {
    let Some(held) = held else {
        return judgement.skip(
            Rule::OutputStable,
            "no earlier output is held on this path (the route's pass that holds outputs checks the rule)",
        );
    };
    for changed in &held.changed {
        judgement.violate(Rule::OutputStable, changed_message(changed));
    }
    if held.deferred && held.changed.is_empty() {
        judgement.skip(
            Rule::OutputStable,
            "this run's outputs were not read at its end (its reads are deferred): they are read, held, after the next run, on that run's part",
        );
    } else if held.reread == 0 && held.changed.is_empty() {
        judgement.skip(
            Rule::OutputStable,
            "no earlier output was held when this case ran",
        );
    }
}

/// A held output that changed, in words.
fn changed_message(changed: &crate::ChangedOutput) -> String {
    if let Some((position, total)) = changed.in_run {
        return format!(
            "the output the provider returned for input {position} of {total} moved in one run ({}), which the runtime holds until the program ends, changed while the later inputs moved ({}): {}",
            changed.case,
            changed.after.as_deref().unwrap_or("the later inputs"),
            changed.difference
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryGrowth;

    fn counted(allocations: i64, bytes: Option<i64>) -> MemoryGrowth {
        MemoryGrowth {
            allocations: Some(allocations),
            bytes,
        }
    }

    #[test]
    fn a_deferred_run_says_its_outputs_are_read_after_the_next_run() {
        let deferred = crate::HeldOutputs {
            deferred: true,
            ..crate::HeldOutputs::default()
        };
        let mut judgement = Judgement::empty();
        check_held(Some(&deferred), &mut judgement);
        let reason = judgement.why_unchecked(Rule::OutputStable);
        assert!(
            reason.is_some_and(|reason| reason.contains("read, held, after the next run")),
            "{reason:?}"
        );
        let mut judgement = Judgement::empty();
        check_held(None, &mut judgement);
        let reason = judgement.why_unchecked(Rule::OutputStable);
        assert!(
            reason.is_some_and(|reason| reason.contains("no earlier output is held")),
            "{reason:?}"
        );
    }

    #[test]
    fn a_leak_repeated_says_where_its_memory_stood_after_each_repetition() {
        let repeated = [1, 2, 2, 2, 3].map(|count| counted(count, Some(count * 64)));
        assert_eq!(
            repetition_profile(&repeated),
            "; the case was run 5 more times to tell memory a provider keeps from a leak, and after each it stood at +1 +2 (×3) +3 allocation(s), and +64 +128 (×3) +192 bytes above where it was before the case"
        );
        let rising: Vec<MemoryGrowth> = (2..50).map(|count| counted(count, None)).collect();
        assert!(
            repetition_profile(&rising)
                .contains("stood at +2 to +49 (+1 each) allocation(s) above"),
            "{}",
            repetition_profile(&rising)
        );
        // Counts without bytes name the allocations alone.
        assert!(!repetition_profile(&[counted(1, None)]).contains("bytes"));
        assert_eq!(repetition_profile(&[]), "");
    }
}
