//! The inputs a rig moved lately, so that an output holding another
//! input's values says whose they are: a provider that keeps a cache, a
//! pool or a staging buffer between calls returns an earlier input's
//! values, and a `values` failure that names that input points at the
//! state it kept.

use std::collections::VecDeque;

use crate::Case;

use super::case_words;

/// How many earlier inputs a rig remembers.
const REMEMBERED: usize = 16;

/// The largest input remembered, in elements: the fixed cases' twins and
/// the quick profile's generated cases fit; a remembered input is a copy.
const REMEMBERED_ELEMENTS: usize = 1 << 12;

/// The latest inputs of a rig, oldest first, each with the number of the
/// input it was (counted over the rig's life).
#[derive(Default)]
pub(super) struct RecentInputs {
    inputs: VecDeque<(u64, Case)>,
    moved: u64,
}

impl RecentInputs {
    /// Whose values `bytes` are, when they are not `cases[position]`'s own
    /// but those of another input of the same run or of an earlier input
    /// of the same dtype: in words.
    pub(super) fn whose(&self, cases: &[Case], position: usize, bytes: &[u8]) -> Option<String> {
        let case = cases.get(position)?;
        if case.expected().equals(bytes) || bytes.is_empty() {
            return None;
        }
        let same = |other: &Case| other.dtype() == case.dtype() && other.expected().equals(bytes);
        if let Some((index, other)) = cases
            .iter()
            .enumerate()
            .find(|(index, other)| *index != position && same(other))
        {
            return Some(format!(
                "input {} of the same run ({})",
                index + 1,
                case_words(other)
            ));
        }
        let this = self.moved + position as u64;
        self.inputs
            .iter()
            .rev()
            .find(|(_, other)| same(other))
            .map(|(number, other)| {
                let before = this - number;
                format!(
                    "an earlier input ({}, moved {before} input{} before this one)",
                    case_words(other),
                    if before == 1 { "" } else { "s" }
                )
            })
    }

    /// Remember the inputs of a run, in order.
    pub(super) fn remember(&mut self, cases: &[Case]) {
        for case in cases {
            if case.len() <= REMEMBERED_ELEMENTS {
                if self.inputs.len() == REMEMBERED {
                    self.inputs.pop_front();
                }
                self.inputs.push_back((self.moved, case.clone()));
            }
            self.moved += 1;
        }
    }
}
