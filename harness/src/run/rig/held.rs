//! The outputs a caller still holds, read again after later calls
//! (`output-stable`): the runtime's outputs of earlier runs, which a rig
//! keeps alive on request ([`super::Rig::keep_outputs`]), and, within a
//! run of several inputs, the provider's own outputs, which the runtime
//! keeps in its slots until the program ends.

use std::collections::VecDeque;

use tenferro_tensor::{DType, Tensor};

use crate::run::effects::reread_output;
use crate::values::compared::Reference;
use crate::values::image_diff::compare_images;
use crate::{Case, ChangedOutput, HeldOutputs, ProviderResult, SpyRecord};
use crate::{Compared, Endpoint};

use super::plans::OutputReads;
use super::{Ran, Rig, case_words};

/// How many recent outputs a rig holds, besides the latest ones of the
/// dtype and length it moves ([`HOLD_SAME_SIZE`]).
pub const HOLD_RECENT: usize = 4;

/// How many outputs of one dtype and length a rig holds at once, whatever
/// else it holds: the latest of the size it moves. A caching allocator
/// that hands out a block the caller still holds once all its blocks of a
/// size are held (a ring of staging outputs) shows only when more outputs
/// of that size are held than it keeps blocks.
pub const HOLD_SAME_SIZE: usize = 16;

/// An output the rig holds, with the bytes it had when it was returned.
struct Held {
    case: String,
    dtype: DType,
    shape: Vec<usize>,
    len: usize,
    output: Tensor,
    bytes: Reference,
    /// Its run read nothing at its end ([`super::Rig::defer_output_reads`]):
    /// `bytes` are the case's values, never read from it.
    deferred: bool,
}

/// The runtime outputs a rig holds across runs, oldest first.
#[derive(Default)]
pub(super) struct HeldAcrossRuns {
    held: VecDeque<Held>,
}

impl HeldAcrossRuns {
    /// Drop every held output.
    pub(super) fn clear(&mut self) {
        self.held.clear();
    }

    /// Read every held output again, after the call of case `after`
    /// (`None`: as they are released).
    pub(super) fn reread(&self, after: Option<&str>, destination: &Endpoint) -> HeldOutputs {
        let mut seen = HeldOutputs::default();
        for held in &self.held {
            seen.reread += 1;
            let difference = match reread_output(destination, &held.output, held.bytes.expected()) {
                Compared::Same => None,
                Compared::Image(now) => {
                    compare_images(held.dtype, &held.shape, held.bytes.expected().bytes(), &now)
                }
                Compared::Failed { reason } | Compared::NotReadable { reason } => {
                    Some(format!("it could not be read again: {reason}"))
                }
            }
            .map(|difference| {
                if held.deferred {
                    format!(
                        "{difference} (its run read it first only after that call, so it may never have held its case's values: the destination engine's work over the provider's output was still queued, its queues stalled, while that call ran)"
                    )
                } else {
                    difference
                }
            });
            if let Some(difference) = difference {
                seen.changed.push(ChangedOutput {
                    case: held.case.clone(),
                    after: after.map(str::to_owned),
                    difference,
                    in_run: None,
                });
            }
        }
        seen
    }

    /// Hold `output` of `case` (whose bytes are `bytes`; `deferred`: the
    /// case's values, never read from it), evicting the
    /// oldest beyond the most recent but never the latest
    /// [`HOLD_SAME_SIZE`] of a dtype and length (this one among them).
    pub(super) fn hold(&mut self, case: &Case, output: Tensor, bytes: Reference, deferred: bool) {
        let key = (case.dtype(), case.len());
        while self.held.len() >= HOLD_RECENT {
            match self.oldest_evictable(key) {
                Some(oldest) => {
                    self.held.remove(oldest);
                }
                None => break,
            }
        }
        self.held.push_back(Held {
            case: case_words(case),
            dtype: case.dtype(),
            shape: case.shape().to_vec(),
            len: case.len(),
            output,
            bytes,
            deferred,
        });
    }
}

impl HeldAcrossRuns {
    /// The oldest held output that may make room for one of size `key`:
    /// any but the latest `HOLD_SAME_SIZE - 1` of that size.
    fn oldest_evictable(&self, key: (DType, usize)) -> Option<usize> {
        let mut protected = HOLD_SAME_SIZE - 1;
        let mut oldest = None;
        for (index, held) in self.held.iter().enumerate().rev() {
            if (held.dtype, held.len) == key && protected > 0 {
                protected -= 1;
            } else {
                oldest = Some(index);
            }
        }
        oldest
    }
}

/// The provider's output of one input of a run of several, as it was
/// returned and as the program read it once every later input had moved.
pub(super) struct HeldInRun<'a> {
    /// The input's case.
    pub(super) case: &'a Case,
    /// Its place in the run, from 1.
    pub(super) position: usize,
    /// The returned buffer's image as the Spy read it at return, when it
    /// could be read and paired element by element with the case.
    pub(super) at_return: Option<&'a [u8]>,
    /// The program's first read of it (`y_i`), right after its transfer,
    /// compared with the case's values as it was read.
    pub(super) at_start: Option<&'a Compared>,
    /// The program's second read of it (`z_i`), after the later
    /// transfers, compared with the case's values as it was read.
    pub(super) at_end: &'a Compared,
}

/// Said of an output the provider returned right whose first read by the
/// program, before any later transfer, was already wrong.
const ENGINE_SUSPECT: &str = "; the program's first read of it, right after its transfer and before any later one, already differed from the case's values the provider returned: the destination engine's reading of the output (its reshape kernel), not a later transfer, may be what is wrong";

/// What reading each output of a run again, after the later transfers of
/// the run, found: outputs that changed while the runtime held them.
/// `cases` names the run's inputs, for the message.
pub(super) fn reread_in_run(inputs: &[HeldInRun<'_>], cases: &[Case]) -> HeldOutputs {
    let mut seen = HeldOutputs::default();
    let total = cases.len();
    for input in inputs {
        if input.position >= total {
            continue;
        }
        let Some(at_return) = input.at_return else {
            continue;
        };
        seen.reread += 1;
        let at_end = input.at_end.values(input.case.values());
        let difference = match at_end {
            Ok(now) => compare_images(input.case.dtype(), input.case.shape(), at_return, now),
            Err(reason) => Some(format!("it could not be read again: {reason}")),
        };
        let Some(mut difference) = difference else {
            continue;
        };
        // The provider returned the case's values, yet the program's first
        // read of them, before any later transfer, already differed: the
        // destination engine's reading of the output is the suspect.
        if at_return == input.case.values()
            && matches!(
                input.at_start,
                Some(Compared::Image(_) | Compared::Failed { .. })
            )
        {
            difference.push_str(ENGINE_SUSPECT);
        }
        if let Ok(now) = at_end
            && let Some(other) = cases
                .iter()
                .enumerate()
                .find(|(index, other)| *index + 1 != input.position && other.values() == now)
        {
            difference.push_str(&format!(
                "; it now holds the values of input {} of the run ({})",
                other.0 + 1,
                case_words(other.1)
            ));
        }
        seen.changed.push(ChangedOutput {
            case: case_words(input.case),
            after: Some(later_inputs(cases, input.position)),
            difference,
            in_run: Some((input.position, total)),
        });
    }
    seen
}

/// The inputs of a run after the first `position`, in words: neighbours
/// of the same case said once (`inputs 2 to 17: F32 [2, 3] owned`), since
/// a run stacks one case many times.
fn later_inputs(cases: &[Case], position: usize) -> String {
    let mut groups: Vec<(usize, usize, String)> = Vec::new();
    for (index, case) in cases.iter().enumerate().skip(position) {
        let words = case_words(case);
        match groups.last_mut() {
            Some((_, last, previous)) if *previous == words => *last = index + 1,
            _ => groups.push((index + 1, index + 1, words)),
        }
    }
    groups
        .into_iter()
        .map(|(first, last, words)| match last - first {
            0 => format!("input {first}: {words}"),
            _ => format!("inputs {first} to {last}: {words}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Rig {
    /// What the outputs a caller holds showed after this run: those held
    /// from earlier runs, read again, and in a run of several inputs the
    /// provider's own outputs, read again after the later transfers.
    /// `None` where nothing is held on this path; marked deferred, with
    /// nothing read, where the run's reads are deferred.
    pub(super) fn held_outputs(
        &self,
        cases: &[Case],
        calls: &[SpyRecord],
        ran: &Ran,
    ) -> Option<HeldOutputs> {
        // A deferred run reads no output at its end, held or its own: a
        // read through the destination may wait for its queues, and the
        // engine's work over this run's outputs must stay queued into the
        // next run. Everything held is read after the next run.
        if ran.reads == OutputReads::Deferred {
            return Some(HeldOutputs {
                deferred: true,
                ..HeldOutputs::default()
            });
        }
        let mut seen = self.keeping.then(|| {
            let last = cases.last().map(case_words);
            self.held.reread(last.as_deref(), self.route.destination())
        });
        if let (true, Ok(observed)) = (cases.len() > 1, &ran.executed.outputs)
            && calls.len() == cases.len()
        {
            let inputs: Vec<HeldInRun<'_>> = cases
                .iter()
                .zip(calls)
                .enumerate()
                .filter_map(|(index, (case, call))| {
                    Some(HeldInRun {
                        case,
                        position: index + 1,
                        at_return: readable_at_return(case, &call.result),
                        at_start: observed.get(index).map(|output| &output.bytes),
                        at_end: &observed.get(cases.len() + index)?.bytes,
                    })
                })
                .collect();
            let within = reread_in_run(&inputs, cases);
            let all = seen.get_or_insert_with(HeldOutputs::default);
            all.reread += within.reread;
            all.changed.extend(within.changed);
        }
        seen
    }
}

/// The image of a returned output as the Spy read it at return, when its
/// elements pair with the case's: a complete copy of the case's dtype and
/// length, read in full.
fn readable_at_return<'a>(case: &'a Case, result: &'a ProviderResult) -> Option<&'a [u8]> {
    let ProviderResult::Returned(returned) = result else {
        return None;
    };
    let complete = matches!(returned.completion, crate::CompletionState::Complete)
        || matches!(returned.completion, crate::CompletionState::Unknown { .. });
    let pairs = complete
        && returned.dtype == case.dtype()
        && returned.buffer_len == Some(case.len())
        && returned.buffer_len_changed_to.is_none();
    returned.bytes.values(case.values()).ok().filter(|_| pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_later_inputs_of_one_case_are_said_once() {
        let small = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
        let other = Case::from_values(vec![3], vec![1.0_f32; 3]).unwrap();
        let cases = [
            small.clone(),
            small.clone(),
            small.clone(),
            other.clone(),
            small.clone(),
        ];
        assert_eq!(
            later_inputs(&cases, 1),
            format!(
                "inputs 2 to 3: {small}, input 4: {other}, input 5: {small}",
                small = case_words(&small),
                other = case_words(&other)
            )
        );
    }

    #[test]
    fn an_output_read_wrong_before_any_later_transfer_names_the_engine() {
        let cases = [
            Case::from_values(vec![2], vec![1_i32, 2]).unwrap(),
            Case::from_values(vec![2], vec![3_i32, 4]).unwrap(),
        ];
        let wrong = Compared::Image(vec![9, 0, 0, 0, 9, 0, 0, 0]);
        let seen = |at_start: &Compared| {
            let input = HeldInRun {
                case: &cases[0],
                position: 1,
                at_return: Some(cases[0].values()),
                at_start: Some(at_start),
                at_end: &wrong,
            };
            reread_in_run(&[input], &cases).changed[0]
                .difference
                .clone()
        };
        // Read right first, wrong after the later transfer: a later
        // transfer changed it.
        assert!(!seen(&Compared::Same).contains("engine"));
        // Already wrong at its first read: the engine is the suspect.
        assert!(seen(&wrong).contains(ENGINE_SUSPECT));
    }
}
