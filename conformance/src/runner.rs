//! The one runner: every path of the suite (the CLI's fixed cases, a
//! `ProviderSuite`'s fixed, generated, outside-capability and concurrent
//! cases, the self-test, the fuzzers and every replay) runs a case on a
//! route's rig and judges it here, so they cannot drift apart in how they
//! treat a case the route cannot run, a harness error or a panic.
//!
//! The rig ([`Watchdog`]) runs the provider under the deadline and catches
//! its panics; the runner arms a hook (a simulated device's fault plan,
//! which only the self-test and the fuzzer hand it) for the one call, judges the outcome inside or outside the declared
//! capabilities, and returns a typed [`CaseRun`]. A panic of the harness
//! itself (the oracle, say) is a [`CaseRun::NotRun`] with the reason, not
//! an unwinding test.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{
    Case, HarnessError, Judgement, Oracle, Outcome, OutsideCase, Route, RuntimeVerdict, Watchdog,
    abandoned_reason, describe_error, panic_message,
};

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

/// One case's run, typed: judged, skipped with the reason, or not run.
#[derive(Debug)]
#[must_use]
pub(crate) enum CaseRun {
    /// The oracle's judgement of the provider's call, and the outcome it
    /// judged (the call, the runtime's verdict, the trace).
    Judged(Judgement, Box<Outcome>),
    /// The route cannot run the case here (a layout its source does not
    /// stage, a device that is absent): the reason. Never a pass.
    Skipped(String),
    /// The harness could not run or judge the case.
    NotRun(HarnessError),
}

impl CaseRun {
    /// The record of this run: its outcome through the one conversion
    /// ([`CaseOutcome::from`]), and the device failures the provider
    /// correctly passed on as a typed `Err`.
    pub(crate) fn into_record(self, route: &str, origin: Origin, head: RowHead) -> CaseRecord {
        let expected = match &self {
            CaseRun::Judged(judgement, _) => judgement.expected_errors().to_vec(),
            _ => Vec::new(),
        };
        CaseRecord::new(route, origin, head, CaseOutcome::from(self)).with_expected_errors(expected)
    }
}

/// The one conversion from a run of the runner to a case's outcome: a
/// judged case passed or failed, checked exactly where the oracle judged;
/// a case the route cannot run here skipped with the reason; a case the
/// harness could not run not set up, with the error and its causes.
impl From<CaseRun> for CaseOutcome {
    fn from(run: CaseRun) -> Self {
        match run {
            CaseRun::Judged(judgement, _) => CaseOutcome::judged(&judgement),
            CaseRun::Skipped(reason) => CaseOutcome::Skipped { reason },
            CaseRun::NotRun(error) => CaseOutcome::NotSetUp {
                message: describe_error(&error),
            },
        }
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

/// Run `case` on `rig` (whose route is `route`), with `hook` armed on the
/// route's devices for this call only, and judge it as `judged_as`.
pub(crate) fn run_case(
    rig: &mut Watchdog,
    route: &Route,
    case: &Case,
    judged_as: JudgedAs<'_>,
    hook: Option<&dyn CaseHook>,
) -> CaseRun {
    if let Some(hook) = hook {
        hook.arm(route);
    }
    let outcome = rig.run(case);
    if let Some(hook) = hook {
        hook.disarm(route);
    }
    let outcome = match outcome {
        // A case that overran the short deadline of a route whose provider
        // has hung: not proven to hang, so skipped with the reason.
        Ok(Outcome {
            runtime: RuntimeVerdict::Abandoned { limit, hung_on },
            ..
        }) => return CaseRun::Skipped(abandoned_reason(limit, &hung_on)),
        Ok(outcome) => outcome,
        Err(HarnessError::Unavailable { reason }) => return CaseRun::Skipped(reason),
        Err(error) => return CaseRun::NotRun(error),
    };
    let judged = catch_unwind(AssertUnwindSafe(|| match judged_as {
        JudgedAs::Inside => Oracle.judge(case, route, &outcome),
        JudgedAs::Outside(outside) => Oracle.judge_outside(outside, route, &outcome),
    }));
    match judged {
        Ok(judgement) => CaseRun::Judged(judgement, Box::new(outcome)),
        Err(payload) => CaseRun::NotRun(HarnessError::InvalidCase {
            reason: format!(
                "judging the case panicked (a harness bug; please report it): {}",
                panic_message(payload.as_ref())
            ),
        }),
    }
}

/// Build the case of `recipe` and [`run_case`] it inside the capabilities;
/// a recipe that does not build is [`CaseRun::NotRun`].
pub(crate) fn run_recipe(rig: &mut Watchdog, route: &Route, recipe: &Recipe) -> CaseRun {
    match recipe.case() {
        Ok(case) => run_case(rig, route, &case, JudgedAs::Inside, None),
        Err(error) => CaseRun::NotRun(error),
    }
}
