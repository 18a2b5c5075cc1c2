//! A generated run's failure once its minimal case was replayed: the case
//! that failed, and whether it failed again (on the provider that ran the
//! earlier cases, and on a fresh one), or only now and then.

use crate::record::CaseOutcome;
use crate::report::violation_rows;
use tenferro_transfer_harness::strategy::Recipe;

/// A case that failed, with what became of it when it failed: a rule
/// broken or a case not set up, never a pass, by construction.
#[derive(Clone, Debug)]
pub(crate) struct FailedCase {
    /// The case.
    pub recipe: Recipe,
    /// Its outcome when it failed ([`CaseOutcome::failed`]); the rules it
    /// left unchecked stay in it (a rule the failure did not name was not
    /// necessarily checked: a pending copy leaves `values` unjudged).
    pub outcome: CaseOutcome,
}

impl FailedCase {
    /// `Some` only when the case failed.
    pub(super) fn new(recipe: Recipe, outcome: CaseOutcome) -> Option<Self> {
        outcome.failed().then_some(Self { recipe, outcome })
    }

    /// The message of its first violation.
    pub(super) fn first_message(&self) -> String {
        violation_rows(&self.outcome)
            .first()
            .map(|row| row.message.clone())
            .unwrap_or_default()
    }
}

/// What a generated run's failure amounts to, once the minimal case has
/// been replayed.
#[derive(Clone, Debug)]
pub(crate) enum Found {
    /// The minimal case failed again on replay, on a fresh provider as
    /// its replay line runs it (or on the same one where the route's
    /// factory could not build another): its violations are the replay's.
    Reproduced(FailedCase),
    /// The minimal case failed again on the provider that ran the earlier
    /// cases, and passed on a fresh provider from the route's factory: the
    /// failure depends on what the provider kept from earlier calls (a
    /// cache, a pool, a counter), so the case alone passes.
    StateDependent {
        /// The minimal case and its violations on the provider that ran
        /// the earlier cases.
        failed: FailedCase,
        /// How many cases that provider had run (shrinking included).
        earlier: u64,
    },
    /// The minimal case passed on replay: the provider fails only now and
    /// then (state kept between calls, a race). `original` is the first
    /// case that failed, with the violations it had; `minimal` the last
    /// case that failed while shrinking.
    Nondeterministic {
        /// The first failing case and its violations.
        original: FailedCase,
        /// The last case that failed during shrinking, with its violations.
        minimal: Box<FailedCase>,
    },
}

impl Found {
    /// The case a report row is about and the violations it shows.
    pub fn shown(&self) -> &FailedCase {
        match self {
            Found::Reproduced(case)
            | Found::StateDependent { failed: case, .. }
            | Found::Nondeterministic { original: case, .. } => case,
        }
    }

    /// For a failure that did not reproduce, the sentence that says so.
    pub fn nondeterminism(&self) -> Option<String> {
        match self {
            Found::Reproduced(_) | Found::StateDependent { .. } => None,
            Found::Nondeterministic { original, minimal } => {
                let mut text = format!(
                    "nondeterministic: failed on case {}, passed on replay",
                    original.recipe.to_json()
                );
                if minimal.recipe != original.recipe {
                    text.push_str(&format!(
                        " (shrinking reached {}, which failed once and passed on replay)",
                        minimal.recipe.to_json()
                    ));
                }
                text.push_str(
                    "; the provider fails only now and then: state kept between calls, a counter, a cache or a race",
                );
                Some(text)
            }
        }
    }

    /// For a failure that came back only on the provider that ran the
    /// earlier cases, the sentence that says so.
    pub fn state_dependence(&self) -> Option<String> {
        match self {
            Found::StateDependent { earlier, .. } => Some(format!(
                "depends on the provider's state: the minimal case failed again on the provider that had run {earlier} generated cases before it, and passed on a fresh provider from the route's factory; the provider keeps something between calls (a cache, a pool, a counter) that this case trips over, so the case alone passes"
            )),
            _ => None,
        }
    }
}
