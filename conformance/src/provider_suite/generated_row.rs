//! The generated run's row: its failure (minimal when it reproduces, the
//! original case and its violations when it does not), or a pass that says
//! how many cases it covered.

use std::sync::Arc;

use tenferro_transfer_harness::Judgement;

use super::{ProviderSuite, RouteRun};
use crate::generated::{GeneratedOptions, REPLAY_ENV, SEED_ENV, generate, shell_quote};
use crate::report::{CaseResult, RowHead, ViolationRow};

impl ProviderSuite {
    /// One row for the whole generated run.
    ///
    /// A failure keeps the violations the case had when it failed, so the
    /// row is `fail` with at least one violation whether or not the minimal
    /// case failed again on replay; a failure that did not reproduce says
    /// so ("nondeterministic: failed on case X, passed on replay").
    pub(super) fn generated_row(&self, run: &RouteRun<'_>) -> CaseResult {
        let base = self.head(run.name, run.route.label());
        let options = GeneratedOptions {
            seed: Some(run.seed),
            deadline: self.deadline,
            regressions: self.regressions_file(run.name),
            ..GeneratedOptions::new(run.profile)
        };
        let generation = match generate(
            run.route,
            Arc::clone(run.provider),
            run.capabilities,
            &options,
        ) {
            Ok(generation) => generation,
            Err(error) => return CaseResult::setup_failure(base, error.to_string()),
        };
        let summary = format!(
            "generated: {} cases, {} profile, seed {}",
            generation.cases, run.profile, generation.seed
        );
        let Some(found) = generation.failure else {
            return self.row(
                RowHead {
                    layout: summary,
                    ..base
                },
                Judgement {
                    unchecked: generation.unchecked,
                    ..Judgement::default()
                },
                Some(run.honesty_unchecked),
            );
        };
        let shown = found.shown();
        let json = shown.recipe.to_json();
        let note = found.nondeterminism();
        let head = RowHead {
            dtype: shown.recipe.dtype.clone(),
            shape: shown.recipe.shape.clone(),
            layout: match &note {
                None => format!("{summary}; minimal case {json}"),
                Some(_) => format!("{summary}; failed once on case {json}"),
            },
            ..base
        };
        let replay = format!(
            "replay: {REPLAY_ENV}={} {SEED_ENV}={} {} {}::",
            shell_quote(&json),
            generation.seed,
            self.cargo_test(),
            run.name
        );
        let violations: Vec<ViolationRow> = shown
            .violations
            .iter()
            .map(|violation| ViolationRow {
                message: match &note {
                    None => format!("{}\n  {replay}", violation.message),
                    Some(note) => format!(
                        "{}\n  {note}\n  {replay} (the case alone may pass: it did on replay)",
                        violation.message
                    ),
                },
                ..violation.clone()
            })
            .collect();
        let (violations, mut unchecked) = self.within_level(violations);
        // What the failing case left unjudged stays unjudged: a rule its
        // failure does not name was not thereby checked.
        unchecked.extend(shown.unchecked.iter().cloned());
        CaseResult::from_violations(head, violations, unchecked)
    }
}
