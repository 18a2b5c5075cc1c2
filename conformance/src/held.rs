//! The pass that holds outputs alive (`output-stable`): a route's fixed
//! cases run again in pairs of the same dtype and length (the case, then
//! one of the same size with other values), each output held as the
//! caller would hold it and read again after every later call and at the
//! end. The memory the devices keep over the pass is judged as a whole
//! (`no-leak`): outputs held on purpose are no leak, and once they are
//! released nothing of the pass may remain.

use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_harness::{
    HeldOutputs, Oracle, PhaseMemory, Route, Watchdog, describe_error,
};

use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};
use crate::runner::{CaseRun, JudgedAs, run_case};

/// The largest case the pass holds, in elements: a few outputs of it are
/// held at once, and the pass's memory must stay within a few large cases.
pub const HELD_MAX_ELEMENTS: usize = 1 << 16;

/// The two records of a held pass: what reading the held outputs again
/// found, and the memory the devices kept over the pass.
pub(crate) fn held_pass(
    rig: &mut Watchdog,
    route: &Route,
    recipes: &[Recipe],
    name: &str,
    head: &RowHead,
) -> [CaseRecord; 2] {
    let phase = PhaseMemory::start(route);
    rig.keep_outputs(true);
    let mut found = HeldOutputs::default();
    let mut calls = 0;
    let mut not_run: Vec<String> = Vec::new();
    for recipe in recipes {
        // The case, then one of the same dtype and length with other
        // values: a provider that hands out a live allocation of that size
        // writes into the first while the caller holds it.
        let sibling = Recipe {
            values: ValueSource::Seeded,
            seed: recipe.seed.wrapping_add(1),
            specials: 16,
            ..recipe.clone()
        };
        for recipe in [recipe, &sibling] {
            let case = match recipe.case() {
                Ok(case) if case.len() <= HELD_MAX_ELEMENTS => case,
                Ok(_) => continue,
                Err(error) => {
                    not_run.push(describe_error(&error));
                    continue;
                }
            };
            calls += 1;
            match run_case(rig, route, &case, JudgedAs::Inside, None) {
                CaseRun::Judged(_, outcome) => {
                    if let Some(held) = outcome.held {
                        found.reread += held.reread;
                        found.changed.extend(held.changed);
                    }
                }
                CaseRun::Skipped(_) => {}
                CaseRun::NotRun(error) => not_run.push(describe_error(&error)),
            }
        }
    }
    let accounting_seen = phase.shows_held_outputs(route);
    let released = rig.release_outputs();
    rig.keep_outputs(false);
    let memory = phase.finish(route, accounting_seen);
    let stable = match released {
        Ok(last) => {
            found.reread += last.reread;
            found.changed.extend(last.changed);
            match not_run.first() {
                Some(first) if found.reread == 0 => CaseOutcome::NotSetUp {
                    message: format!("no case of the held pass could run: {first}"),
                },
                _ => CaseOutcome::judged(&Oracle.judge_held(&found)),
            }
        }
        Err(error) => CaseOutcome::NotSetUp {
            message: describe_error(&error),
        },
    };
    let held_head = RowHead {
        layout: format!(
            "held: {calls} outputs held in pairs of the same size, read again after every later call"
        ),
        ..head.clone()
    };
    let memory_head = RowHead {
        layout: "held: the devices' memory over the held pass".to_owned(),
        ..head.clone()
    };
    [
        CaseRecord::new(name, Origin::Held, held_head, stable),
        CaseRecord::new(
            name,
            Origin::Held,
            memory_head,
            CaseOutcome::judged(&Oracle.judge_phase_memory(&memory)),
        ),
    ]
}
