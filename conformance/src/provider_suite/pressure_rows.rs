//! The rows of the concurrent and repeated calls: one provider instance,
//! several threads each with its own runtime, judged by the existing rules
//! (`values`, `no-leak`, ...).

use std::collections::BTreeSet;
use std::sync::Arc;

use tenferro_transfer_harness::{Judgement, Violation};

use super::{ProviderSuite, RouteRun};
use crate::concurrency::{Call, ConcurrencyOptions, Pressure, drive, replay_alone};
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{RowHead, SETUP};

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
            deadline: self.deadline,
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
        let pressure = match drive(
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
        let failing: Vec<&Call> = pressure.failures().collect();
        if failing.is_empty() {
            return vec![self.judged_record(
                run.name,
                origin,
                RowHead {
                    layout: format!("{summary}: {} calls", pressure.calls.len()),
                    ..base
                },
                Judgement {
                    unchecked: unchecked_everywhere(&pressure),
                    ..Judgement::default()
                },
                Some(run.honesty_unchecked),
            )];
        }
        let mut rules_listed = BTreeSet::new();
        let mut rows = Vec::new();
        for (position, call) in failing.iter().enumerate() {
            let rules = broken_rules(call);
            let new_rule = rules.iter().any(|rule| !rules_listed.contains(rule));
            if position >= LISTED_CALLS && !new_rule {
                continue;
            }
            rules_listed.extend(rules);
            let alone = replay_alone(
                run.route,
                Arc::clone(run.provider),
                self.deadline,
                &call.recipe,
            );
            let account = pressure.account(call, &alone, run.name);
            let outcome = match &call.judged {
                Ok(judgement) => {
                    let violations: Vec<Violation> = judgement
                        .violations
                        .iter()
                        .map(|violation| Violation {
                            rule: violation.rule,
                            message: format!("{}\n  {account}", violation.message),
                        })
                        .collect();
                    let (violations, unchecked) = self.within_level(violations);
                    CaseOutcome::judged(Judgement {
                        violations,
                        unchecked,
                        ..Judgement::default()
                    })
                }
                Err(message) => CaseOutcome::NotSetUp {
                    message: format!("{message}\n  {account}"),
                },
            };
            let layout = format!(
                "{summary}; thread {} call {} repeat {}; {}{}",
                call.thread,
                call.index + 1,
                call.repeat + 1,
                call.recipe.to_json(),
                if position == 0 && failing.len() > 1 {
                    format!("; {} failing calls in all", failing.len())
                } else {
                    String::new()
                }
            );
            rows.push(CaseRecord::new(
                run.name,
                origin.clone(),
                RowHead {
                    dtype: call.recipe.dtype.clone(),
                    shape: call.recipe.shape.clone(),
                    layout,
                    ..base.clone()
                },
                outcome,
            ));
        }
        rows
    }
}

/// The rule ids a failing call broke (`setup` when it could not run).
fn broken_rules(call: &Call) -> Vec<String> {
    match &call.judged {
        Ok(judgement) => judgement
            .rules()
            .iter()
            .map(|rule| rule.id().to_owned())
            .collect(),
        Err(_) => vec![SETUP.to_owned()],
    }
}

/// The rules left unchecked on every call, with the first call's reason.
fn unchecked_everywhere(pressure: &Pressure) -> Vec<tenferro_transfer_harness::Unchecked> {
    let mut judgements = pressure
        .calls
        .iter()
        .filter_map(|call| call.judged.as_ref().ok());
    let Some(first) = judgements.next() else {
        return Vec::new();
    };
    let mut kept = first.unchecked.clone();
    for judgement in judgements {
        kept.retain(|item| {
            judgement
                .unchecked
                .iter()
                .any(|other| other.rule == item.rule)
        });
    }
    kept
}
