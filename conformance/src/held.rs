//! The pass that holds outputs alive (`output-stable`): a route's fixed
//! cases run again in pairs of the same dtype and length (the case, then
//! one of the same size with other values), both moved in one run, so the
//! runtime holds the provider's first output while the second moves, and
//! the program reads it again at the end, as any program that moves two
//! inputs to a device does. Each run's outputs are then held as the caller
//! would hold them, and read again after every later run and at the end.
//! Then, for each dtype, the largest case of at most
//! [`STACKED_MAX_ELEMENTS`] is moved [`HOLD_SAME_SIZE`] times more, one
//! input a run, every output held: a provider whose blocks of a size run
//! out hands out one the caller still holds (a ring of staging outputs, a
//! caching allocator that counts a held block as free) only when that
//! many outputs of the size are held.
//! The same case then moves once more as one run of [`STACKED_RUN_INPUTS`]
//! inputs of its size: the runtime holds every provider output of a run
//! in its slots until the program ends, so a ring of blocks shows there
//! even on a device whose kernels write fresh memory (where the outputs
//! the caller holds across runs are the kernels', not the provider's).
//! Last, the largest case above [`HELD_MAX_ELEMENTS`] of one dtype moves
//! in a pair and twice more, held: a pool of large blocks kept apart from
//! the small ones breaks there alone. The first of those two runs reads
//! its output only after the second, its destination's queues stalled as
//! the call returns ([`Watchdog::defer_output_reads`]), as a caller that
//! collects a result later reads it: the destination engine's kernel over
//! the provider's output is still queued while the next call writes.
//! Every input is judged on every rule; the memory the devices keep over
//! the pass is judged as a whole (`no-leak`): outputs held on purpose are
//! no leak, and once they are released nothing of the pass may remain.

use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_harness::{
    Case, HOLD_SAME_SIZE, HeldOutputs, Judgement, Oracle, PhaseEvidence, PhaseMemory, Route,
    Watchdog, describe_error,
};

use crate::coverage::Coverage;
use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};
use crate::runner::{JudgedAs, input_label, run_cases_keeping};

/// The largest case the pass holds for every dtype, in elements: a few
/// outputs of it are held at once, and the pass's memory must stay within
/// a few large cases. Above it, only the largest case of one dtype is
/// held, three outputs of it at once.
pub const HELD_MAX_ELEMENTS: usize = 1 << 16;

/// The largest case the pass moves [`HOLD_SAME_SIZE`] times, holding every
/// output, in elements.
pub const STACKED_MAX_ELEMENTS: usize = 1 << 12;

/// The inputs of the held pass's long run of one size: 65 provider
/// outputs of a size held by the runtime at once, more than a ring of
/// staging blocks of a size is likely to keep (and more than the
/// [`HOLD_SAME_SIZE`] the caller holds across runs). A run holds them at
/// the cost of one transfer each, where holding them across runs costs a
/// read of every held output after every call.
pub const STACKED_RUN_INPUTS: usize = 65;

/// The recipe of the input moved after `recipe` in the held pass: the same
/// dtype, shape and layout, with other values.
pub(crate) fn sibling(recipe: &Recipe) -> Recipe {
    Recipe {
        values: ValueSource::Seeded,
        seed: recipe.seed.wrapping_add(1),
        specials: 16,
        ..recipe.clone().untwinned()
    }
}

/// The `depth`-th input moved after `recipe`'s pair in the stacked runs:
/// as [`sibling`], with values of its own.
fn stacked(recipe: &Recipe, depth: u64) -> Recipe {
    Recipe {
        seed: recipe.seed.wrapping_add(2 + depth),
        ..sibling(recipe)
    }
}

/// The largest of `recipes` above [`HELD_MAX_ELEMENTS`], of the first
/// dtype that has one: the held pass moves its pair and one more of its
/// size, so `output-stable` is checked on a large block too.
fn largest_beyond_held(recipes: &[Recipe]) -> Option<&Recipe> {
    let elements = |recipe: &Recipe| recipe.shape.iter().product::<usize>();
    let dtype = &recipes
        .iter()
        .find(|recipe| elements(recipe) > HELD_MAX_ELEMENTS)?
        .dtype;
    recipes
        .iter()
        .filter(|recipe| recipe.dtype == *dtype && elements(recipe) > HELD_MAX_ELEMENTS)
        .max_by_key(|recipe| elements(recipe))
}

/// The recipes the stacked runs move: for each dtype, the largest of
/// `recipes` with at least one and at most [`STACKED_MAX_ELEMENTS`]
/// elements (the first of those of that size).
fn stacked_recipes(recipes: &[Recipe]) -> Vec<&Recipe> {
    let elements = |recipe: &Recipe| recipe.shape.iter().product::<usize>();
    let mut chosen: Vec<&Recipe> = Vec::new();
    for recipe in recipes {
        if !(1..=STACKED_MAX_ELEMENTS).contains(&elements(recipe)) {
            continue;
        }
        match chosen.iter_mut().find(|other| other.dtype == recipe.dtype) {
            Some(other) if elements(other) < elements(recipe) => *other = recipe,
            Some(_) => {}
            None => chosen.push(recipe),
        }
    }
    chosen
}

/// The two records of a held pass: every input judged on every rule (the
/// held outputs read again among them), and the memory the devices kept
/// over the pass.
pub(crate) fn held_pass(
    watchdog: &mut Watchdog,
    route: &Route,
    recipes: &[Recipe],
    name: &str,
    head: &RowHead,
) -> [CaseRecord; 2] {
    let phase = PhaseMemory::start(route);
    let pass = hold_pairs(watchdog, route, recipes);
    let HeldPass {
        mut found,
        mut parts,
        coverage,
        runs,
        stacked_runs,
        long_runs,
        not_run,
        accounting_seen,
        released,
    } = pass;
    // Memory that stayed after the pass: kept by the provider and reused,
    // or leaked? The pass once more tells.
    let memory = phase.finish_repeating(
        route,
        accounting_seen,
        &watchdog.route_deadline().clone(),
        || {
            let _ = hold_pairs(watchdog, route, recipes);
        },
    );
    let stable: Result<Judgement, String> = match released {
        Ok(last) => {
            found.reread += last.reread;
            found.changed.extend(last.changed);
            match not_run.first() {
                Some(first) if parts.is_empty() => {
                    Err(format!("no case of the held pass could run: {first}"))
                }
                _ => {
                    // Output-stable over the whole pass, at the end; every
                    // other rule on each input.
                    parts.push((
                        "the outputs held over the pass".to_owned(),
                        Oracle.judge_held(&found),
                    ));
                    Ok(Judgement::merged(parts))
                }
            }
        }
        Err(error) => Err(describe_error(&error)),
    };
    let held_head = RowHead {
        layout: format!(
            "held: {runs} runs of two inputs of the same size, {stacked_runs} of one and {long_runs} of {STACKED_RUN_INPUTS}, up to {HOLD_SAME_SIZE} outputs of a size held and read again after every later transfer"
        ),
        ..head.clone()
    };
    let memory_head = RowHead {
        layout: "held: the devices' memory over the held pass".to_owned(),
        ..head.clone()
    };
    [
        match stable {
            Ok(judgement) => CaseRecord::judged(name, Origin::Held, held_head, &judgement)
                .with_coverage(coverage),
            Err(message) => CaseRecord::new(
                name,
                Origin::Held,
                held_head,
                CaseOutcome::NotSetUp { message },
            ),
        },
        CaseRecord::judged(
            name,
            Origin::Held,
            memory_head,
            &Oracle.judge_phase_memory(&memory),
        ),
    ]
}

/// What one held pass found.
struct HeldPass {
    /// The held outputs read again, and those that changed.
    found: HeldOutputs,
    /// Every input's judgement, labelled.
    parts: Vec<(String, Judgement)>,
    /// The inputs judged, for the coverage map.
    coverage: Coverage,
    /// Runs of two inputs made.
    runs: usize,
    /// Runs of one input made, stacking outputs of a size.
    stacked_runs: usize,
    /// Runs of [`STACKED_RUN_INPUTS`] inputs of one size made.
    long_runs: usize,
    /// Why inputs could not run.
    not_run: Vec<String>,
    /// Whether the source's accounting showed the staged inputs of some
    /// run, and the destination's the held outputs.
    accounting_seen: PhaseEvidence,
    /// The held outputs' last reading, as they were released.
    released: Result<HeldOutputs, tenferro_transfer_harness::HarnessError>,
}

/// Run every pair of `recipes` in one run each, then the stacked runs,
/// holding their outputs, then release them.
fn hold_pairs(watchdog: &mut Watchdog, route: &Route, recipes: &[Recipe]) -> HeldPass {
    let phase = PhaseMemory::start(route);
    watchdog.keep_outputs(true);
    let mut pass = HeldPass {
        found: HeldOutputs::default(),
        parts: Vec::new(),
        coverage: Coverage::default(),
        runs: 0,
        stacked_runs: 0,
        long_runs: 0,
        not_run: Vec::new(),
        accounting_seen: PhaseEvidence::default(),
        released: Ok(HeldOutputs::default()),
    };
    for recipe in recipes {
        // The case, then one of the same dtype and length with other
        // values, in one run: a provider that hands out a live allocation
        // of that size writes into the first while the runtime holds it.
        let pair = recipe.clone().moved_with(vec![sibling(recipe)]);
        if pass.run(watchdog, route, &pair, HELD_MAX_ELEMENTS) {
            pass.runs += 1;
        }
    }
    for recipe in stacked_recipes(recipes) {
        for depth in 0..HOLD_SAME_SIZE as u64 {
            if pass.run(
                watchdog,
                route,
                &stacked(recipe, depth),
                STACKED_MAX_ELEMENTS,
            ) {
                pass.stacked_runs += 1;
            }
        }
        // The same size again, every output in one run: the runtime holds
        // them all until the program ends and reads them again then.
        let mut inputs = (HOLD_SAME_SIZE..HOLD_SAME_SIZE + STACKED_RUN_INPUTS)
            .map(|depth| stacked(recipe, depth as u64));
        if let Some(first) = inputs.next()
            && pass.run(
                watchdog,
                route,
                &first.moved_with(inputs.collect()),
                STACKED_MAX_ELEMENTS,
            )
        {
            pass.long_runs += 1;
        }
    }
    // Above the held size, one case of one dtype: its pair, then one more
    // of its size, held (a pool of large blocks apart from the small ones
    // breaks there alone), its outputs read only after one more run of its
    // size: the destination engine's kernel over it is still queued while
    // that run's call writes (a block freed in stream order and written
    // again without waiting for that kernel breaks there).
    if let Some(recipe) = largest_beyond_held(recipes) {
        let pair = recipe.clone().moved_with(vec![sibling(recipe)]);
        if pass.run(watchdog, route, &pair, usize::MAX) {
            pass.runs += 1;
        }
        watchdog.defer_output_reads(true);
        if pass.run(watchdog, route, &stacked(recipe, 0), usize::MAX) {
            pass.stacked_runs += 1;
        }
        watchdog.defer_output_reads(false);
        if pass.run(watchdog, route, &stacked(recipe, 1), usize::MAX) {
            pass.stacked_runs += 1;
        }
    }
    pass.accounting_seen = pass
        .accounting_seen
        .or(PhaseEvidence::new(false, phase.shows_held_outputs(route)));
    pass.released = watchdog.release_outputs();
    watchdog.keep_outputs(false);
    pass
}

impl HeldPass {
    /// Move the inputs of `recipe` in one run, its outputs held, and judge
    /// each; `false` when it was not run (larger than `max_elements`, or
    /// not a valid case).
    fn run(
        &mut self,
        watchdog: &mut Watchdog,
        route: &Route,
        recipe: &Recipe,
        max_elements: usize,
    ) -> bool {
        let cases: Vec<Case> = match recipe.cases() {
            Ok(cases) if cases[0].len() <= max_elements => cases,
            Ok(_) => return false,
            Err(error) => {
                self.not_run.push(describe_error(&error));
                return false;
            }
        };
        let total = cases.len();
        for (index, run) in
            run_cases_keeping(watchdog, route, &cases, JudgedAs::Inside, None, |outcome| {
                (outcome.held, outcome.source_saw_input)
            })
            .into_iter()
            .enumerate()
        {
            match run {
                Ok((judgement, (held, source_saw_input))) => {
                    self.accounting_seen = self
                        .accounting_seen
                        .or(PhaseEvidence::new(source_saw_input == Some(true), false));
                    if let Some(held) = held {
                        self.found.reread += held.reread;
                        self.found.changed.extend(held.changed);
                    }
                    self.coverage.add(&cases[index], &judgement);
                    self.parts
                        .push((input_label(index, total, &cases[index]), judgement));
                }
                Err(skip) if skip.is_skip() => {}
                Err(error) => self.not_run.push(describe_error(&error)),
            }
        }
        true
    }
}
