//! A failing concurrent call in words: where it ran, what ran beside it,
//! what its other repeats said, and what replaying it alone on one thread
//! said, with the lines that replay it.

use std::sync::Arc;

use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{Route, RouteDeadline, Rule, Watchdog, describe_error};

use super::{Call, Pressure};
use crate::record::CaseOutcome;
use crate::runner::{case_outcome, run_recipe};

impl Pressure {
    /// A paragraph for a failing call: where it ran, what ran beside it,
    /// what its other repeats said, and how to replay it: `case_alone`
    /// writes the line that replays the call's recipe JSON alone (left out
    /// when it passed alone), `schedule` the one that reruns the schedule
    /// of a seed.
    pub fn account(
        &self,
        call: &Call,
        alone: &Alone,
        case_alone: impl Fn(&str) -> String,
        schedule: impl Fn(u64) -> String,
    ) -> String {
        let options = &self.options;
        let mut text = format!(
            "under concurrent calls: thread {} of {} (each thread its own runtime, one provider instance), call {} of {}, repeat {} of {}{}",
            call.thread,
            options.threads,
            call.index + 1,
            options.cases_per_thread,
            call.repeat + 1,
            options.repeats,
            if call.repeat >= self.planned {
                format!(
                    " (the {} planned, and more run to judge the devices' memory)",
                    self.planned
                )
            } else {
                String::new()
            }
        );
        let beside: Vec<String> = self
            .calls
            .iter()
            .filter(|other| {
                other.repeat == call.repeat
                    && other.thread != call.thread
                    && other.span.0 < call.span.1
                    && call.span.0 < other.span.1
            })
            .map(Call::describe)
            .collect();
        if beside.is_empty() {
            text.push_str("\n  no other call was in flight at the same time");
        } else {
            text.push_str(&format!(
                "\n  in flight at the same time: {}",
                beside.join(", ")
            ));
        }
        for other in self.calls.iter().filter(|other| {
            other.repeat != call.repeat && other.thread == call.thread && other.index == call.index
        }) {
            let verdict = match &other.outcome {
                outcome if outcome.failed() => "failed too".to_owned(),
                outcome if outcome.is_judged() => "passed (nondeterministic)".to_owned(),
                CaseOutcome::Skipped { reason } => format!("not run: {reason}"),
                _ => "not judged".to_owned(),
            };
            text.push_str(&format!(
                "\n  the same call in repeat {}: {verdict}",
                other.repeat + 1
            ));
        }
        text.push_str(&format!(
            "\n  replayed alone on one thread: {}",
            alone.text()
        ));
        let incomplete = call
            .outcome
            .violations()
            .iter()
            .any(|violation| violation.rule == Rule::Completion);
        if incomplete && matches!(alone, Alone::Passed) && !beside.is_empty() {
            text.push_str(
                "\n  the write still queued into its output may be another call's: one block handed to two calls in flight (a pool or cache that claims a block apart from checking it is free) returns it before the other call's copy lands",
            );
        }
        text.push_str("\n  replay: ");
        if !matches!(alone, Alone::Passed) {
            text.push_str(&case_alone(&call.recipe.to_json()));
            text.push_str("; ");
        }
        text.push_str(&schedule(options.seed));
        text
    }
}

/// What replaying a failing call alone, on one thread, said.
#[derive(Clone, Debug)]
pub(crate) enum Alone {
    /// It passed alone: the failure needs concurrent calls.
    Passed,
    /// It failed alone too.
    Failed,
    /// The replay could not run.
    NotRun(String),
}

impl Alone {
    fn text(&self) -> String {
        match self {
            Alone::Passed => {
                "passed (it fails only beside other calls: state shared between calls, or a race)"
                    .to_owned()
            }
            Alone::Failed => "failed again (it fails on its own too)".to_owned(),
            Alone::NotRun(why) => format!("could not run: {why}"),
        }
    }
}

/// Replay `recipe` once on a fresh runtime around `provider`.
pub(crate) fn replay_alone(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    deadline: &RouteDeadline,
    recipe: &Recipe,
) -> Alone {
    let outcome = Watchdog::new(route.clone(), provider, deadline.clone())
        .map(|mut watchdog| case_outcome(run_recipe(&mut watchdog, route, recipe)));
    match outcome {
        Ok(CaseOutcome::Passed { .. }) => Alone::Passed,
        Ok(CaseOutcome::Failed { .. }) => Alone::Failed,
        Ok(CaseOutcome::Skipped { reason }) => Alone::NotRun(format!("skipped: {reason}")),
        Ok(CaseOutcome::NotSetUp { message }) => Alone::NotRun(message),
        Err(error) => Alone::NotRun(describe_error(&error)),
    }
}
