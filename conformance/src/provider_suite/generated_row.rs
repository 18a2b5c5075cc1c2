//! The generated run's row: its failure (minimal when it reproduces, the
//! original case and its violations when it does not), or a pass that says
//! how many cases it covered.

use std::sync::Arc;

use super::run::guarded;
use super::{ProviderSuite, RouteRun};
use crate::generated::{
    Found, GeneratedOptions, Generation, REPLAY_ENV, SEED_ENV, generate, shell_quote,
};
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::RowHead;
use tenferro_transfer_harness::describe_error;
use tenferro_transfer_harness::settings::ROUTES_ENV;

impl ProviderSuite {
    /// One row for the whole generated run.
    ///
    /// A failure keeps the violations the case had when it failed, so the
    /// row is `fail` with at least one violation whether or not the minimal
    /// case failed again on replay; a failure that did not reproduce says
    /// so ("nondeterministic: failed on case X, passed on replay").
    pub(super) fn generated_row(&self, run: &RouteRun<'_>) -> CaseRecord {
        let base = self.head(run.name, run.route.label());
        let origin = Origin::Generated {
            seed: run.seed,
            profile: run.profile,
        };
        let options = GeneratedOptions {
            seed: Some(run.seed),
            deadline: run.deadline.clone(),
            regressions: self.regressions_file(run.name),
            ..GeneratedOptions::new(run.profile)
        };
        let fresh = || {
            guarded(|| (run.factory)(run.route))
                .map_err(|panic| format!("building the provider panicked: {panic}"))?
                .map_err(|error| describe_error(&*error))
        };
        let mut generation = match generate(
            run.route,
            Arc::clone(run.provider),
            &fresh,
            run.capabilities,
            &options,
        ) {
            Ok(generation) => generation,
            Err(error) => {
                return CaseRecord::new(
                    run.name,
                    origin,
                    base,
                    CaseOutcome::NotSetUp {
                        message: error.to_string(),
                    },
                );
            }
        };
        let summary = format!(
            "generated: {} cases, {} profile, seed {}",
            generation.cases, run.profile, generation.seed
        );
        let Some(found) = generation.failure.take() else {
            let head = RowHead {
                layout: summary,
                ..base
            };
            return self.generated_pass_row(run, origin, head, generation);
        };
        self.generated_failure_row(run, origin, base, &summary, &found, generation)
    }

    /// The row of a generated run in which no case failed: every case's
    /// outcome summed, or a skip saying why none ran.
    fn generated_pass_row(
        &self,
        run: &RouteRun<'_>,
        origin: Origin,
        head: RowHead,
        generation: Generation,
    ) -> CaseRecord {
        // One record for the whole run: a rule counts as checked where
        // any generated case checked it, and never otherwise.
        let outcome = match generation.summed {
            Some(summed) => summed,
            None => CaseOutcome::Skipped {
                reason: generation
                    .skipped
                    .unwrap_or_else(|| "no generated case could run on this route".to_owned()),
            },
        };
        self.in_level_record(
            CaseRecord::new(run.name, origin, head, outcome).with_coverage(generation.coverage),
        )
    }

    /// The row of a generated run's failure: the failing case's own
    /// outcome, with the line that replays it (and, when it did not fail
    /// again on replay, the sentence that says so).
    fn generated_failure_row(
        &self,
        run: &RouteRun<'_>,
        origin: Origin,
        base: RowHead,
        summary: &str,
        found: &Found,
        generation: Generation,
    ) -> CaseRecord {
        let shown = found.shown();
        let json = shown.recipe.to_json();
        let note = found.nondeterminism();
        let state = found.state_dependence();
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
        // The failing case's own outcome: what it broke, and exactly what
        // its judgement checked, with the line that replays it.
        let outcome = self
            .in_level(shown.outcome.clone())
            .annotated(|message| match (&note, &state) {
                (Some(note), _) => format!(
                    "{message}\n  {note}\n  {replay} (the case alone may pass: it did on replay)"
                ),
                (None, Some(state)) => format!(
                    "{message}\n  {state}\n  {replay} (the case alone, which passed on a fresh provider)\n  rerun: {SEED_ENV}={} {ROUTES_ENV}={} {} {}:: (the route's cases in the same order, which failed it)",
                    generation.seed,
                    run.name,
                    self.cargo_test(),
                    run.name
                ),
                (None, None) => format!("{message}\n  {replay}"),
            });
        self.in_level_record(
            CaseRecord::new(run.name, origin, head, outcome).with_coverage(generation.coverage),
        )
    }
}
