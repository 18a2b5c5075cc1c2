//! How the self-test exercises one provider on one route: over every dtype
//! and fixed shape (the large one excepted) it applies to, each case in
//! the sequence of calls its [`Exercised`] names, judged as one.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use tenferro_mock_devices::{FaultPlan, PRESET_DTYPES};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_harness::{Case, HarnessError, Judgement, Route, Rule, Watchdog};

use super::catalogue::Exercised;
use super::run::Tally;
use crate::fixed_shapes;
use crate::runner::{CaseHook, CaseRun, JudgedAs, merged, merged_as, run_case, run_cases};

/// Threads of a [`Exercised::ConcurrentTwins`] round.
const THREADS: usize = 4;

/// Rounds of a [`Exercised::ConcurrentTwins`] case, at most: a race shows
/// in the first almost always; the later ones run only while none did.
const ROUNDS: u64 = 3;

/// How one provider is exercised: the rules that must fire, the cases it
/// applies to, the deadline, the device fault plan of each case, and the
/// sequence of calls each case is.
pub(super) struct Exercise<'a> {
    pub(super) expected: &'a [Rule],
    pub(super) applies: &'a dyn Fn(&Case, &Route) -> bool,
    pub(super) deadline: Duration,
    pub(super) plan: Option<&'a FaultPlan>,
    pub(super) expects_error: bool,
    pub(super) exercised: Exercised,
}

impl Exercise<'static> {
    /// A correct provider's exercise, `exercised` so: every case, under the
    /// self-test's deadline, no device fault, and no rule may fire.
    pub(super) fn clean(exercised: Exercised) -> Self {
        Exercise {
            expected: &[],
            applies: &super::catalogue::always,
            deadline: super::catalogue::SELFTEST_DEADLINE,
            plan: None,
            expects_error: false,
            exercised,
        }
    }
}

/// The recipe of the patterned `case` with seeded values: another input of
/// its dtype, shape and layout.
fn seeded(case: &Case, seed: u64) -> Result<Case, HarnessError> {
    Recipe {
        seed,
        specials: 16,
        ..Recipe::fixed(
            case.dtype(),
            case.shape().to_vec(),
            case.layout().clone(),
            ValueSource::Seeded,
        )
    }
    .case()
}

/// The twin of the patterned `case`.
fn twin(case: &Case) -> Result<Case, HarnessError> {
    Recipe::fixed(
        case.dtype(),
        case.shape().to_vec(),
        case.layout().clone(),
        ValueSource::Patterned,
    )
    .twin(0x7477_696e)
    .case()
}

/// Run one provider on one route over every dtype and fixed shape (the
/// large one excepted) that the exercise applies to.
pub(super) fn exercise(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    plan: &Exercise<'_>,
    tally: &mut Tally,
    disagreements: &mut usize,
) {
    let built =
        Watchdog::new(route.clone(), Arc::clone(&provider), plan.deadline).and_then(|watchdog| {
            match plan.exercised {
                Exercised::ConcurrentTwins => {
                    Crew::new(route, &provider, plan.deadline).map(|crew| (watchdog, Some(crew)))
                }
                _ => Ok((watchdog, None)),
            }
        });
    let (mut watchdog, crew) = match built {
        Ok(built) => built,
        Err(error) => {
            tally.could_not_run(format!(
                "route {} could not be built: {error}",
                route.label()
            ));
            return;
        }
    };
    watchdog.keep_outputs(plan.exercised == Exercised::Held);
    let hook = plan.plan.map(|plan| plan as &dyn CaseHook);
    for dtype in PRESET_DTYPES {
        for shape in fixed_shapes(false) {
            let Ok(case) = Case::patterned(dtype, shape.shape.clone(), shape.layout.clone()) else {
                continue;
            };
            if !(plan.applies)(&case, route) {
                continue;
            }
            let context = format!("{} {dtype:?} {}", route.label(), shape.name);
            let Some(run) = exercised_run(
                &mut watchdog,
                crew.as_ref(),
                route,
                &case,
                plan.exercised,
                hook,
            ) else {
                continue;
            };
            tally.run(plan, run, &context, disagreements);
        }
    }
    if plan.exercised == Exercised::Held
        && let Err(error) = watchdog.release_outputs()
    {
        tally.could_not_run(format!(
            "the held outputs of {} could not be released: {error}",
            route.label()
        ));
    }
}

/// `case` on `watchdog` (and `crew`, for concurrent rounds) in the sequence of
/// calls `exercised` names, judged as one; `None` where the case has no
/// such sequence (no sibling of other values can be drawn).
fn exercised_run(
    watchdog: &mut Watchdog,
    crew: Option<&Crew>,
    route: &Route,
    case: &Case,
    exercised: Exercised,
    hook: Option<&dyn CaseHook>,
) -> Option<CaseRun> {
    let inside = JudgedAs::Inside;
    Some(match exercised {
        Exercised::Plainly => run_case(watchdog, route, case, inside, hook),
        Exercised::Held => {
            // Held first, then a case of the same size with other values:
            // a provider that hands out the live allocation of the first
            // writes into it.
            let sibling = seeded(case, 7).ok()?;
            if sibling.values() == case.values() {
                return None;
            }
            match run_case(watchdog, route, case, inside, hook) {
                Err(error) if !error.is_skip() => Err(error),
                _ => run_case(watchdog, route, &sibling, inside, hook),
            }
        }
        Exercised::Together => {
            let cases = [case.clone(), seeded(case, 7).ok()?];
            merged(&cases, run_cases(watchdog, route, &cases, inside, hook))
        }
        Exercised::Twins => {
            let twin = twin(case).ok()?;
            let first = run_case(watchdog, route, case, inside, hook);
            let second = run_case(watchdog, route, &twin, inside, hook);
            merged_as(vec![
                ("the case".to_owned(), first),
                ("its twin, right after it".to_owned(), second),
            ])
        }
        Exercised::ConcurrentTwins => crew?.rounds(case),
    })
}

/// What the self-test judges of `provider` on `case`, exercised as
/// `exercised` on `route` with `deadline` per call: one case's report, as
/// the snapshots of every broken provider show it.
///
/// # Errors
///
/// Why the case could not be judged: a watchdog that could not be built, a case
/// the harness could not run, or one skipped.
pub fn judge_exercised(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    case: &Case,
    exercised: Exercised,
    deadline: Duration,
) -> Result<Judgement, String> {
    let mut watchdog = Watchdog::new(route.clone(), Arc::clone(&provider), deadline)
        .map_err(|error| error.to_string())?;
    let crew = match exercised {
        Exercised::ConcurrentTwins => {
            Some(Crew::new(route, &provider, deadline).map_err(|error| error.to_string())?)
        }
        _ => None,
    };
    watchdog.keep_outputs(exercised == Exercised::Held);
    match exercised_run(&mut watchdog, crew.as_ref(), route, case, exercised, None) {
        Some(Ok((judgement, _))) => Ok(judgement),
        Some(Err(HarnessError::Unavailable { reason })) => Err(format!("skipped: {reason}")),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("the case has no such sequence".to_owned()),
    }
}

/// Threads that each run a case through a runtime of their own around one
/// provider, all at once ([`Exercised::ConcurrentTwins`]).
struct Crew {
    jobs: Vec<Sender<Case>>,
    results: Receiver<(usize, CaseRun)>,
    threads: Vec<JoinHandle<()>>,
}

impl Crew {
    fn new(
        route: &Route,
        provider: &Arc<dyn TransferProvider>,
        deadline: Duration,
    ) -> Result<Self, HarnessError> {
        let barrier = Arc::new(Barrier::new(THREADS));
        let (report, results) = mpsc::channel();
        let mut jobs = Vec::with_capacity(THREADS);
        let mut threads = Vec::with_capacity(THREADS);
        for thread in 0..THREADS {
            let (job, queue) = mpsc::channel::<Case>();
            let label = route.label();
            let (route, provider, barrier, report) = (
                route.clone(),
                Arc::clone(provider),
                Arc::clone(&barrier),
                report.clone(),
            );
            let handle = std::thread::Builder::new()
                .name(format!("selftest-crew-{thread}"))
                .spawn(move || {
                    let mut watchdog = Watchdog::new(route.clone(), provider, deadline);
                    while let Ok(case) = queue.recv() {
                        // Every thread waits here, whatever its watchdog: the
                        // calls of a round start together.
                        barrier.wait();
                        let run = match &mut watchdog {
                            Ok(watchdog) => {
                                run_case(watchdog, &route, &case, JudgedAs::Inside, None)
                            }
                            Err(error) => Err(HarnessError::InvalidCase {
                                reason: format!("the thread's runtime could not be built: {error}"),
                            }),
                        };
                        if report.send((thread, run)).is_err() {
                            return;
                        }
                    }
                })
                .map_err(|source| HarnessError::Worker {
                    route: label,
                    source,
                })?;
            jobs.push(job);
            threads.push(handle);
        }
        Ok(Self {
            jobs,
            results,
            threads,
        })
    }

    /// Up to [`ROUNDS`] rounds of `case` on every thread at once, each
    /// thread with values of its own, until one broke a rule: every call
    /// judged as one.
    fn rounds(&self, case: &Case) -> CaseRun {
        let mut runs = Vec::new();
        for round in 0..ROUNDS {
            let inputs: Result<Vec<Case>, HarnessError> = (0..THREADS as u64)
                .map(|thread| seeded(case, 1 + round * THREADS as u64 + thread))
                .collect();
            let inputs = inputs?;
            for (job, input) in self.jobs.iter().zip(&inputs) {
                if job.send(input.clone()).is_err() {
                    return Err(HarnessError::InvalidCase {
                        reason: "a thread of the concurrent round is gone".to_owned(),
                    });
                }
            }
            let mut round_runs: Vec<Option<CaseRun>> = (0..THREADS).map(|_| None).collect();
            for _ in 0..THREADS {
                match self.results.recv() {
                    Ok((thread, run)) => round_runs[thread] = Some(run),
                    Err(_) => {
                        return Err(HarnessError::InvalidCase {
                            reason: "a thread of the concurrent round is gone".to_owned(),
                        });
                    }
                }
            }
            let broke = round_runs
                .iter()
                .flatten()
                .any(|run| matches!(run, Ok((judgement, _)) if !judgement.passed()));
            runs.extend(round_runs.into_iter().enumerate().map(|(thread, run)| {
                let run = run.unwrap_or_else(|| {
                    Err(HarnessError::InvalidCase {
                        reason: "a thread of the concurrent round did not answer".to_owned(),
                    })
                });
                (
                    format!(
                        "thread {thread} of {THREADS} sending its own values at once, round {}",
                        round + 1
                    ),
                    run,
                )
            }));
            if broke {
                break;
            }
        }
        merged_as(runs)
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        self.jobs.clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
