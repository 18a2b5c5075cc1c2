//! The one runner: every path of the suite (the CLI's fixed cases, a
//! `ProviderSuite`'s fixed, generated, outside-capability and concurrent
//! cases, the self-test, the fuzzers and every replay) runs a case on a
//! route's watchdog and judges it here, so they cannot drift apart in how they
//! treat a case the route cannot run, a harness error or a panic.
//!
//! The [`Watchdog`] runs the provider under the deadline and catches
//! its panics; the runner arms a hook (a simulated device's fault plan,
//! which only the self-test and the fuzzer hand it) for the one call, judges the outcome inside or outside the declared
//! capabilities, and returns a typed [`CaseRun`] (a `Result`). A panic of the harness
//! itself (the oracle, say) is the harness's error with the reason, not
//! an unwinding test.
//!
//! The judging runs on the watchdog's worker, where the outcome was made
//! ([`Watchdog::run_together_then`]): the outcome is dropped there, and only
//! the judgement and what the caller keeps of the outcome cross back.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{
    Case, HarnessError, Judgement, Oracle, Outcome, OutsideCase, Route, RuntimeVerdict, Watchdog,
    abandoned_reason, describe_error, not_reached_reason, panic_message,
};

use crate::coverage::Coverage;
use crate::held::sibling;
use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};

/// How a case is judged.
#[derive(Clone, Copy, Debug)]
pub(crate) enum JudgedAs<'a> {
    /// Inside the declared capabilities: by every rule.
    Inside,
    /// Just outside them: a typed `Err` is the answer
    /// (`capability-honesty`).
    Outside(&'a OutsideCase),
}

/// A judged case: the oracle's judgement of the provider's call, and what
/// its caller kept of the outcome it judged (nothing, unless it asked:
/// [`run_cases_keeping`]).
pub(crate) type Judged<K = ()> = (Judgement, K);

/// One case's run: judged, or the harness's typed error where it was not.
/// An error that [is a skip](HarnessError::is_skip)
/// ([`HarnessError::Unavailable`]: the route cannot run the case here, a
/// call abandoned after a hang, an input its run never reached) carries
/// the reason; any other means the harness could not run or judge the case.
pub(crate) type CaseRun<K = ()> = Result<Judged<K>, HarnessError>;

/// A skip with `reason`: the route cannot run the case here. Never a pass.
pub(crate) fn skipped(reason: String) -> HarnessError {
    HarnessError::Unavailable { reason }
}

/// The record of a run: its outcome through the one conversion
/// ([`case_outcome`]), with the coverage of a judged case.
pub(crate) fn into_record<K>(
    run: CaseRun<K>,
    case: &Case,
    route: &str,
    origin: Origin,
    head: RowHead,
) -> CaseRecord {
    match run {
        Ok((judgement, _)) => CaseRecord::judged(route, origin, head, &judgement)
            .with_coverage(Coverage::of(case, &judgement)),
        other => CaseRecord::new(route, origin, head, case_outcome(other)),
    }
}

/// The one conversion from a run of the runner to a case's outcome: a
/// judged case passed or failed, checked exactly where the oracle judged;
/// a case the route cannot run here skipped with the reason; a case the
/// harness could not run not set up, with the error and its causes.
pub(crate) fn case_outcome<K>(run: CaseRun<K>) -> CaseOutcome {
    match run {
        Ok((judgement, _)) => CaseOutcome::judged(&judgement),
        Err(HarnessError::Unavailable { reason }) => CaseOutcome::Skipped { reason },
        Err(error) => CaseOutcome::NotSetUp {
            message: describe_error(&error),
        },
    }
}

/// Something armed on a route's devices for one case and disarmed after
/// it: a simulated device's fault plan, which the self-test and the fuzzer
/// hand to [`run_case`]. The runner names no device; the hook knows its own.
pub(crate) trait CaseHook {
    /// Arm it on `route`'s devices, before the case.
    fn arm(&self, route: &Route);
    /// Disarm it, after the case.
    fn disarm(&self, route: &Route);
}

/// Run `case` on `watchdog` (whose route is `route`), with `hook` armed on the
/// route's devices for this call only, and judge it as `judged_as`.
pub(crate) fn run_case(
    watchdog: &mut Watchdog,
    route: &Route,
    case: &Case,
    judged_as: JudgedAs<'_>,
    hook: Option<&dyn CaseHook>,
) -> CaseRun {
    run_cases(watchdog, route, std::slice::from_ref(case), judged_as, hook)
        .pop()
        .unwrap_or_else(|| {
            Err(HarnessError::InvalidCase {
                reason: "a run of one input gave no outcome".to_owned(),
            })
        })
}

/// Move every input of `cases` in one run on `watchdog` ([`Watchdog::run_together`]),
/// with `hook` armed for the run, and judge each as `judged_as`: one
/// [`CaseRun`] per input, in order. An input the run never reached is
/// skipped with the reason. The outcomes are judged and dropped on the
/// watchdog's worker, where they were made; a caller that needs more of
/// an outcome than its judgement asks [`run_cases_keeping`].
pub(crate) fn run_cases(
    watchdog: &mut Watchdog,
    route: &Route,
    cases: &[Case],
    judged_as: JudgedAs<'_>,
    hook: Option<&dyn CaseHook>,
) -> Vec<CaseRun> {
    run_cases_keeping(watchdog, route, cases, judged_as, hook, drop)
}

/// As [`run_cases`], with what `keep` takes of each judged outcome.
pub(crate) fn run_cases_keeping<K: Send + 'static>(
    watchdog: &mut Watchdog,
    route: &Route,
    cases: &[Case],
    judged_as: JudgedAs<'_>,
    hook: Option<&dyn CaseHook>,
    keep: fn(Outcome) -> K,
) -> Vec<CaseRun<K>> {
    // What the worker judges by: its own copy of an outside case.
    let judging = match judged_as {
        JudgedAs::Inside => None,
        JudgedAs::Outside(outside) => Some(Arc::new(outside.clone())),
    };
    if let Some(hook) = hook {
        hook.arm(route);
    }
    // The hook is still armed while the worker judges: judging reads the
    // outcome and the devices' descriptions, and a fault plan (the only
    // hook) changes neither.
    let runs = watchdog.run_together_then(cases, move |route, case, outcome| {
        judge(case, route, outcome, judging.as_deref(), keep)
    });
    if let Some(hook) = hook {
        hook.disarm(route);
    }
    match runs {
        Ok(runs) => runs,
        Err(HarnessError::Unavailable { reason }) => {
            cases.iter().map(|_| Err(skipped(reason.clone()))).collect()
        }
        Err(error) => {
            let message = describe_error(&error);
            let mut runs = vec![Err(error)];
            runs.extend(cases.iter().skip(1).map(|_| {
                Err(HarnessError::InvalidCase {
                    reason: message.clone(),
                })
            }));
            runs
        }
    }
}

/// Judge one input's outcome, inside the capabilities or (`outside`) just
/// outside them, keeping what `keep` takes of it.
fn judge<K>(
    case: &Case,
    route: &Route,
    outcome: Outcome,
    outside: Option<&OutsideCase>,
    keep: fn(Outcome) -> K,
) -> CaseRun<K> {
    match &outcome.runtime {
        // A case that overran the short deadline of a route whose provider
        // has hung: not proven to hang, so skipped with the reason.
        RuntimeVerdict::Abandoned { limit, hung_on } => {
            return Err(skipped(abandoned_reason(*limit, hung_on)));
        }
        // An input of a run that stopped before it moved.
        RuntimeVerdict::NotReached { stopped_at } => {
            return Err(skipped(not_reached_reason(stopped_at)));
        }
        _ => {}
    }
    let judged = catch_unwind(AssertUnwindSafe(|| match outside {
        None => Oracle.judge(case, route, &outcome),
        Some(outside) => Oracle.judge_outside(outside, route, &outcome),
    }));
    match judged {
        Ok(judgement) => Ok((judgement, keep(outcome))),
        Err(payload) => Err(HarnessError::InvalidCase {
            reason: format!(
                "judging the case panicked (a harness bug; please report it): {}",
                panic_message(payload.as_ref())
            ),
        }),
    }
}

/// The runs of the inputs of one run as one ([`merged_as`]), each labelled
/// with its place in the run.
pub(crate) fn merged<K>(cases: &[Case], runs: Vec<CaseRun<K>>) -> CaseRun<K> {
    let total = runs.len();
    merged_as(
        cases
            .iter()
            .enumerate()
            .map(|(index, case)| input_label(index, total, case))
            .zip(runs)
            .collect(),
    )
}

/// Several runs, each with its label, as one: judged where any was judged
/// (every violation led by its label, see [`Judgement::merged`]), with the
/// outcome of the last judged; not run where any could not run; else
/// skipped. A single run is returned as it is.
pub(crate) fn merged_as<K>(parts: Vec<(String, CaseRun<K>)>) -> CaseRun<K> {
    if parts.len() == 1 {
        if let Some((_, only)) = parts.into_iter().next() {
            return only;
        }
        return Err(skipped("nothing ran".to_owned()));
    }
    let mut judged = Vec::new();
    let mut last = None;
    let mut first_skip = None;
    for (label, run) in parts {
        match run {
            Ok((judgement, outcome)) => {
                judged.push((label, judgement));
                last = Some(outcome);
            }
            Err(skip) if skip.is_skip() => {
                first_skip.get_or_insert(skip);
            }
            Err(error) => return Err(error),
        }
    }
    match last {
        Some(outcome) => Ok((Judgement::merged(judged), outcome)),
        None => Err(first_skip.unwrap_or_else(|| skipped("nothing ran".to_owned()))),
    }
}

/// `input 2 of 3 (F32 [3] owned)`: an input of a run, in words.
pub(crate) fn input_label(index: usize, total: usize, case: &Case) -> String {
    format!(
        "input {} of {total} moved in one run ({:?} {:?} {})",
        index + 1,
        case.dtype(),
        case.shape(),
        case.layout_label()
    )
}

/// Build the cases of `recipe` (its inputs moved in one run, see
/// [`Recipe::with`]) and run them inside the capabilities, as one
/// [`CaseRun`] ([`merged`]); a recipe that does not build is
/// the harness's error.
pub(crate) fn run_recipe(watchdog: &mut Watchdog, route: &Route, recipe: &Recipe) -> CaseRun {
    run_recipe_covered(watchdog, route, recipe, drop).0
}

/// What a run handed over unread right after a read run of `recipe`
/// moves: a case of its dtype, shape and layout with other values in
/// every element ([`sibling`]), not `recipe` itself. The read run's memory
/// was freed just before: a caching allocator hands the same block back,
/// still holding `recipe`'s values, and a provider that copies the input
/// before the writes queued into it land would copy exactly the values it
/// should. (Not a twin, whose few changed elements a cache that samples
/// its inputs answers wrongly: that is the state rows' finding.) A run of
/// several inputs is moved as it is.
pub(crate) fn unread_sibling(recipe: &Recipe) -> Recipe {
    if recipe.with.is_empty() {
        sibling(recipe)
    } else {
        recipe.clone()
    }
}

/// `recipe` replayed as the fixed pass may have run it: its inputs read
/// beside the call; then, where that broke no rule, a case of its kind
/// with other values ([`unread_sibling`]) with its inputs handed over unread
/// ([`Watchdog::hand_inputs_unread`]): a provider that copies an input
/// before the writes still queued into it land fails only there. The run
/// that broke a rule is the answer, else the first.
pub(crate) fn replay_recipe(watchdog: &mut Watchdog, route: &Route, recipe: &Recipe) -> CaseRun {
    watchdog.watch_inputs(true);
    let watched = run_recipe(watchdog, route, recipe);
    watchdog.watch_inputs(false);
    let passed = matches!(&watched, Ok((judgement, _)) if judgement.passed());
    if !passed {
        return watched;
    }
    watchdog.hand_inputs_unread(true);
    let unread = run_recipe(watchdog, route, &unread_sibling(recipe));
    watchdog.hand_inputs_unread(false);
    match unread {
        Ok((judgement, outcome)) if !judgement.passed() => Ok((judgement, outcome)),
        _ => watched,
    }
}

/// As [`run_recipe`], with the coverage of every input judged, keeping
/// what `keep` takes of each outcome ([`run_cases_keeping`]).
pub(crate) fn run_recipe_covered<K: Send + 'static>(
    watchdog: &mut Watchdog,
    route: &Route,
    recipe: &Recipe,
    keep: fn(Outcome) -> K,
) -> (CaseRun<K>, Coverage) {
    match recipe.cases() {
        Ok(cases) => {
            let runs = run_cases_keeping(watchdog, route, &cases, JudgedAs::Inside, None, keep);
            let mut coverage = Coverage::default();
            for (case, run) in cases.iter().zip(&runs) {
                if let Ok((judgement, _)) = run {
                    coverage.add(case, judgement);
                }
            }
            (merged(&cases, runs), coverage)
        }
        Err(error) => (Err(error), Coverage::default()),
    }
}
