//! The one runner: every path of the suite (the CLI's fixed cases, a
//! `ProviderSuite`'s fixed, generated, outside-capability and concurrent
//! cases, the self-test, the fuzzers and every replay) runs a case on a
//! route's rig and judges it here, so they cannot drift apart in how they
//! treat a case the route cannot run, a harness error or a panic.
//!
//! The rig ([`Watchdog`]) runs the provider under the deadline and catches
//! its panics; the runner adds the fault plan of a simulated device for
//! the one call, judges the outcome inside or outside the declared
//! capabilities, and returns a typed [`CaseRun`]. A panic of the harness
//! itself (the oracle, say) is a [`CaseRun::NotRun`] with the reason, not
//! an unwinding test.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tenferro_mock_devices::{FaultPlan, SimDevice};
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{
    Case, HarnessError, Judgement, Oracle, Outcome, OutsideCase, Route, Watchdog, panic_message,
};

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
    /// The judgement, or the reason the case has none, in words.
    pub(crate) fn judgement(self) -> Result<Judgement, String> {
        match self {
            CaseRun::Judged(judgement, _) => Ok(judgement),
            CaseRun::Skipped(reason) => Err(format!("not run here: {reason}")),
            CaseRun::NotRun(error) => Err(error.to_string()),
        }
    }

    /// The judgement and the outcome it judged, or the harness's error (a
    /// skip is [`HarnessError::Unavailable`]).
    pub(crate) fn into_outcome(self) -> Result<(Judgement, Outcome), HarnessError> {
        match self {
            CaseRun::Judged(judgement, outcome) => Ok((judgement, *outcome)),
            CaseRun::Skipped(reason) => Err(HarnessError::Unavailable { reason }),
            CaseRun::NotRun(error) => Err(error),
        }
    }

    /// The judgement, or the harness's error (a skip is
    /// [`HarnessError::Unavailable`]).
    pub(crate) fn into_result(self) -> Result<Judgement, HarnessError> {
        match self {
            CaseRun::Judged(judgement, _) => Ok(judgement),
            CaseRun::Skipped(reason) => Err(HarnessError::Unavailable { reason }),
            CaseRun::NotRun(error) => Err(error),
        }
    }
}

/// Install `plan` on every simulated endpoint of `route` (an empty plan
/// removes the faults); endpoints of other devices are left alone.
pub fn install(route: &Route, plan: &FaultPlan) {
    for endpoint in [route.source(), route.destination()] {
        if let Some(device) = endpoint.downcast::<SimDevice>() {
            device.install_faults(plan.clone());
        }
    }
}

/// Run `case` on `rig` (whose route is `route`), with `faults` installed
/// on the route's simulated devices for this call only, and judge it as
/// `judged_as`.
pub(crate) fn run_case(
    rig: &mut Watchdog,
    route: &Route,
    case: &Case,
    judged_as: JudgedAs<'_>,
    faults: Option<&FaultPlan>,
) -> CaseRun {
    if let Some(plan) = faults {
        install(route, plan);
    }
    let outcome = rig.run(case);
    if faults.is_some() {
        install(route, &FaultPlan::new());
    }
    let outcome = match outcome {
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
