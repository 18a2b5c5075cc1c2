//! The rows of the concurrent and repeated calls: one provider instance,
//! several threads each with its own runtime, judged by the existing rules
//! (`values`, `no-leak`, ...).

use std::collections::BTreeSet;
use std::sync::Arc;

use tenferro_transfer_harness::{Oracle, PhaseEvidence, PhaseMemory, Rule};

use super::{ProviderSuite, RouteRun};
use crate::concurrency::{Call, ConcurrencyOptions, Pressure, drive, replay_alone};
use crate::coverage::Coverage;
use crate::generated::{REPLAY_ENV, SEED_ENV, shell_quote};
use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};
use tenferro_transfer_harness::settings::ROUTES_ENV;

/// How many failing calls get a row of their own, beyond one per rule
/// broken (every rule broken always gets one).
const LISTED_CALLS: usize = 3;

impl ProviderSuite {
    /// The concurrent run's rows: one passing row that says what ran, or
    /// one failing row per listed failing call (the first few, and the
    /// first that broke each rule), each naming its thread, the calls in
    /// flight beside it and how to replay it.
    pub(super) fn pressure_rows(&self, run: &RouteRun<'_>) -> Vec<CaseRecord> {
        let origin = Origin::Concurrent { seed: run.seed };
        let options = ConcurrencyOptions {
            seed: run.seed,
            deadline: run.deadline.clone(),
            ..ConcurrencyOptions::for_profile(run.profile)
        };
        let summary = format!(
            "concurrent: {} threads x {} calls x {} repeats, one provider, a runtime per thread, {} profile, seed {}",
            options.threads, options.cases_per_thread, options.repeats, run.profile, run.seed
        );
        let base = RowHead {
            layout: summary.clone(),
            ..self.head(run.name, run.route.label())
        };
        let phase = PhaseMemory::start(run.route);
        let mut pressure = match drive(
            run.route,
            run.provider,
            run.profile,
            run.capabilities,
            &options,
        ) {
            Ok(pressure) => pressure,
            Err(error) => {
                return vec![CaseRecord::new(
                    run.name,
                    origin,
                    base,
                    CaseOutcome::NotSetUp {
                        message: error.to_string(),
                    },
                )];
            }
        };
        let heads = PressureHeads {
            origin,
            summary,
            base,
            repeats: options.repeats,
        };
        let mut rows = Vec::new();
        // Calls beside each other cannot tell whose memory is whose; the
        // devices' memory over all of them can (level v2 on).
        if self.level.counts_memory() {
            let (row, repeated) =
                self.pressure_memory_row(run, &options, &pressure, &phase, &heads);
            rows.push(row);
            // The calls made again for the memory check are judged too.
            for again in repeated {
                pressure.extend(again);
            }
        }
        let failing: Vec<&Call> = pressure.failures().collect();
        if failing.is_empty() {
            rows.insert(0, self.pressure_pass_row(run, &pressure, heads));
            return rows;
        }
        rows.extend(self.failing_call_rows(run, &pressure, &failing, &heads));
        rows
    }

    /// The row of the devices' memory over every concurrent call, judged
    /// once the calls have run (and, for memory that stayed, run again to
    /// tell memory kept for reuse from memory leaked), and the calls made
    /// again, for their own rows.
    fn pressure_memory_row(
        &self,
        run: &RouteRun<'_>,
        options: &ConcurrencyOptions,
        pressure: &Pressure,
        phase: &PhaseMemory,
        heads: &PressureHeads,
    ) -> (CaseRecord, Vec<Pressure>) {
        let seen = pressure
            .calls
            .iter()
            .fold(PhaseEvidence::default(), |seen, call| {
                seen.or(call.accounting_seen)
            });
        // Memory that stayed: kept by the provider and reused, or
        // leaked? The concurrent calls once more tell.
        let mut repeated = Vec::new();
        let memory = phase.finish_repeating(run.route, seen, run.deadline, || {
            if let Ok(again) = drive(
                run.route,
                run.provider,
                run.profile,
                run.capabilities,
                options,
            ) {
                repeated.push(again);
            }
        });
        let row = self.in_level_record(CaseRecord::judged(
            run.name,
            heads.origin.clone(),
            RowHead {
                layout: format!("{}: the devices' memory over every call", heads.summary),
                ..heads.base.clone()
            },
            &Oracle.judge_phase_memory(&memory),
        ));
        (row, repeated)
    }

    /// The one row of a concurrent run in which no call failed: every
    /// call's outcome and coverage summed, or a skip saying why none ran.
    fn pressure_pass_row(
        &self,
        run: &RouteRun<'_>,
        pressure: &Pressure,
        heads: PressureHeads,
    ) -> CaseRecord {
        // One record for every call: a rule counts as checked where any
        // call checked it, and never otherwise.
        let outcome = CaseOutcome::summed(pressure.calls.iter().map(|call| &call.outcome))
            .unwrap_or_else(|| CaseOutcome::Skipped {
                reason: pressure
                    .calls
                    .iter()
                    .find_map(|call| match &call.outcome {
                        CaseOutcome::Skipped { reason } => Some(reason.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "no concurrent call could run on this route".to_owned()),
            });
        let mut coverage = Coverage::default();
        for call in &pressure.calls {
            coverage.extend(call.coverage.clone());
        }
        self.in_level_record(
            CaseRecord::new(
                run.name,
                heads.origin,
                RowHead {
                    layout: format!(
                        "{}: {} calls{}",
                        heads.summary,
                        pressure.calls.len(),
                        if pressure.options.repeats > heads.repeats {
                            format!(
                                " in {} repeats, those that judged the devices' memory among them",
                                pressure.options.repeats
                            )
                        } else {
                            String::new()
                        }
                    ),
                    ..heads.base
                },
                outcome,
            )
            .with_coverage(coverage),
        )
    }

    /// The rows of the listed failing calls: the first [`LISTED_CALLS`],
    /// and beyond them each call that broke a rule no earlier row showed.
    fn failing_call_rows(
        &self,
        run: &RouteRun<'_>,
        pressure: &Pressure,
        failing: &[&Call],
        heads: &PressureHeads,
    ) -> Vec<CaseRecord> {
        let mut rows = Vec::new();
        let mut rules_listed = BTreeSet::new();
        for (position, call) in failing.iter().enumerate() {
            let rules = broken_rules(call);
            let new_rule = rules.iter().any(|rule| !rules_listed.contains(rule));
            if position >= LISTED_CALLS && !new_rule {
                continue;
            }
            rules_listed.extend(rules);
            rows.push(self.failing_call_row(run, pressure, failing.len(), position, call, heads));
        }
        rows
    }

    /// The row of one failing call: replayed alone, then its own outcome
    /// with where it ran, what ran beside it and how to replay it.
    fn failing_call_row(
        &self,
        run: &RouteRun<'_>,
        pressure: &Pressure,
        failing_count: usize,
        position: usize,
        call: &Call,
        heads: &PressureHeads,
    ) -> CaseRecord {
        let alone = replay_alone(
            run.route,
            Arc::clone(run.provider),
            run.deadline,
            &call.recipe,
        );
        let cargo_test = self.cargo_test();
        let route = run.name;
        let account = pressure.account(
            call,
            &alone,
            |json| {
                format!(
                    "{REPLAY_ENV}={} {cargo_test} {route}:: (the case alone)",
                    shell_quote(json)
                )
            },
            |seed| {
                format!(
                    "{SEED_ENV}={seed} {ROUTES_ENV}={route} {cargo_test} {route}:: (the same concurrent schedule; the threads' timing varies)"
                )
            },
        );
        // The call's own outcome: what it broke and exactly what its
        // judgement checked, with where it ran and how to replay it.
        let outcome = self
            .in_level(call.outcome.clone())
            .annotated(|message| format!("{message}\n  {account}"));
        let layout = format!(
            "{}; thread {} call {} repeat {}; {}{}",
            heads.summary,
            call.thread,
            call.index + 1,
            call.repeat + 1,
            call.recipe.to_json(),
            if position == 0 && failing_count > 1 {
                format!("; {failing_count} failing calls in all")
            } else {
                String::new()
            }
        );
        CaseRecord::new(
            run.name,
            heads.origin.clone(),
            RowHead {
                dtype: call.recipe.dtype.clone(),
                shape: call.recipe.shape.clone(),
                layout,
                ..heads.base.clone()
            },
            outcome,
        )
        .with_replay(&call.recipe)
    }
}

/// What every row of one concurrent run shares: where the rows come from,
/// the one-line summary of what ran, and the head each row starts from.
struct PressureHeads {
    /// The concurrent run's origin, with its seed.
    origin: Origin,
    /// What ran: threads, calls, repeats, profile and seed.
    summary: String,
    /// The route's row head, its layout the summary.
    base: RowHead,
    /// The repeats the summary names (the memory check may add more).
    repeats: usize,
}

/// The rules a failing call broke (`None` standing for a call that could
/// not be set up).
fn broken_rules(call: &Call) -> Vec<Option<Rule>> {
    match &call.outcome {
        CaseOutcome::NotSetUp { .. } => vec![None],
        outcome => outcome
            .violations()
            .iter()
            .map(|violation| Some(violation.rule))
            .collect(),
    }
}
