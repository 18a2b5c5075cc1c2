//! Sequences against state: a provider is an object with memory (a cache,
//! a pool, staging buffers kept between calls), so some cases are made to
//! meet what an earlier call left behind.
//!
//! For each dtype of a route, one record holds:
//! - **twins**: each small fixed case, right after it its twin (the same
//!   dtype and shape, a few interior elements changed, special values
//!   among them), and the twin of the case before it once another case ran
//!   in between; a provider that answers from what it kept of an earlier
//!   input returns the wrong values, and the `values` failure names that
//!   input;
//! - **inputs of mixed sizes in one run**: the small fixed cases of the
//!   dtype moved by one program, each output held by the runtime until the
//!   program ends and read again then.
//!
//! A failing record replays as one run of the pair that failed (the case
//! and its twin moved together), which meets the same state.

use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{Judgement, Route, Watchdog, describe_error};

use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};
use crate::runner::{CaseRun, JudgedAs, input_label, run_cases};

/// The largest case twinned, in elements: twins are about state, not size.
pub const TWIN_MAX_ELEMENTS: usize = 1 << 12;

/// The most inputs of the run of mixed sizes.
const MIXED_INPUTS: usize = 4;

/// The seeds of a case's two twins: right after it, and after the next.
const TWIN_SEEDS: [u64; 2] = [0x7477_696e, 0x0061_6674_6572];

/// One record per dtype of `recipes` (in their order): its twins and its
/// inputs of mixed sizes in one run, every input judged on every rule.
pub(crate) fn state_pass(
    rig: &mut Watchdog,
    route: &Route,
    recipes: &[Recipe],
    name: &str,
    head: &RowHead,
) -> Vec<CaseRecord> {
    let mut dtypes: Vec<&str> = Vec::new();
    for recipe in recipes {
        if !dtypes.contains(&recipe.dtype.as_str()) {
            dtypes.push(&recipe.dtype);
        }
    }
    dtypes
        .into_iter()
        .filter_map(|dtype| {
            let small: Vec<&Recipe> = recipes
                .iter()
                .filter(|recipe| recipe.dtype == dtype && recipe.with.is_empty())
                .filter(|recipe| {
                    recipe
                        .case()
                        .is_ok_and(|case| !case.is_empty() && case.len() <= TWIN_MAX_ELEMENTS)
                })
                .collect();
            (!small.is_empty()).then(|| dtype_record(rig, route, &small, name, head, dtype))
        })
        .collect()
}

/// What the runs of one dtype found, gathered into one record.
#[derive(Default)]
struct Gathered {
    parts: Vec<(String, Judgement)>,
    not_run: Option<String>,
    /// The first run that failed, as one recipe that replays it.
    replay: Option<Recipe>,
}

impl Gathered {
    /// Run the inputs of `run` in one run; `label` says where in the
    /// sequence it stands; `replay` replays it (with what it met).
    fn run(
        &mut self,
        rig: &mut Watchdog,
        route: &Route,
        run: &Recipe,
        label: &str,
        replay: Recipe,
    ) {
        let cases = match run.cases() {
            Ok(cases) => cases,
            Err(error) => {
                self.not_run.get_or_insert(describe_error(&error));
                return;
            }
        };
        let total = cases.len();
        for (index, result) in run_cases(rig, route, &cases, JudgedAs::Inside, None)
            .into_iter()
            .enumerate()
        {
            let input = if total > 1 {
                format!("{label}, {}", input_label(index, total, &cases[index]))
            } else {
                label.to_owned()
            };
            match result {
                CaseRun::Judged(judgement, _) => {
                    if !judgement.passed() && self.replay.is_none() {
                        self.replay = Some(replay.clone());
                    }
                    self.parts.push((input, judgement));
                }
                CaseRun::Skipped(_) => {}
                CaseRun::NotRun(error) => {
                    self.not_run
                        .get_or_insert(format!("{input}: {}", describe_error(&error)));
                }
            }
        }
    }
}

fn dtype_record(
    rig: &mut Watchdog,
    route: &Route,
    small: &[&Recipe],
    name: &str,
    head: &RowHead,
    dtype: &str,
) -> CaseRecord {
    let mut gathered = Gathered::default();
    let words = |recipe: &Recipe| {
        format!(
            "{} {:?} {}",
            recipe.dtype,
            recipe.shape,
            recipe.layout.label()
        )
    };
    for (index, recipe) in small.iter().enumerate() {
        let twin = recipe.twin(TWIN_SEEDS[0]);
        let pair = (*recipe).clone().moved_with(vec![twin.clone()]);
        gathered.run(
            rig,
            route,
            recipe,
            &format!("{} (before its twin)", words(recipe)),
            pair.clone(),
        );
        gathered.run(
            rig,
            route,
            &twin,
            &format!("the twin of {}, right after it", words(recipe)),
            pair,
        );
        if let Some(previous) = index.checked_sub(1).map(|index| small[index]) {
            let late = previous.twin(TWIN_SEEDS[1]);
            let pair = previous.clone().moved_with(vec![late.clone()]);
            gathered.run(
                rig,
                route,
                &late,
                &format!(
                    "the twin of {}, after {} ran in between",
                    words(previous),
                    words(recipe)
                ),
                pair,
            );
        }
    }
    // The small cases of the dtype in one run: mixed sizes, each output
    // held by the runtime while the later ones move.
    let mut mixed: Vec<Recipe> = Vec::new();
    for recipe in small {
        if mixed.len() < MIXED_INPUTS && !mixed.iter().any(|kept| kept.shape == recipe.shape) {
            mixed.push((*recipe).clone());
        }
    }
    if mixed.len() > 1 {
        let first = mixed.remove(0);
        let run = first.moved_with(mixed);
        gathered.run(
            rig,
            route,
            &run,
            "inputs of mixed sizes in one run",
            run.clone(),
        );
    }
    let judged = match (gathered.not_run, gathered.parts.is_empty()) {
        (Some(message), _) => Err(CaseOutcome::NotSetUp { message }),
        (None, true) => Err(CaseOutcome::Skipped {
            reason: "no twin or run of several inputs could run on this route".to_owned(),
        }),
        (None, false) => Ok(Judgement::merged(gathered.parts)),
    };
    let head = RowHead {
        dtype: dtype.to_owned(),
        layout: format!(
            "state: {} cases each followed by its twin, again after another case, and {} sizes in one run",
            small.len(),
            small.len().min(MIXED_INPUTS)
        ),
        ..head.clone()
    };
    let record = match judged {
        Ok(judgement) => CaseRecord::judged(name, Origin::State, head, &judgement),
        Err(outcome) => CaseRecord::new(name, Origin::State, head, outcome),
    };
    match &gathered.replay {
        Some(recipe) => record.with_replay(recipe),
        None => record,
    }
}
