//! One provider instance driven from several threads at once, each thread
//! with its own runtime, over and over: values must not cross between
//! calls, no call may leak, and a call must get the same verdict every time
//! it is made.
//!
//! The threads call the provider in lock-step rounds (a barrier before
//! every round), so that their calls really overlap; every call records
//! where it started and ended on one shared clock, so a failure can name
//! the calls that were in flight beside it. Each thread holds its recent
//! small outputs while the others call, and reads them again after each of
//! its calls and once every thread's calls have returned: a call that
//! writes into an output another caller still holds breaks `output-stable`
//! there. The cases are drawn from the
//! seed, thread by thread, so the schedule of a run is reproducible; only
//! the timing of the threads is not.
//!
//! [`ProviderSuite`](crate::ProviderSuite) runs this on every declared
//! route; [`run_concurrent`] runs it on a built-in provider.

mod account;
#[cfg(test)]
mod tests;
mod twins;

#[cfg(test)]
use account::Alone;
pub(crate) use account::replay_alone;
pub use twins::TWIN_ROUND_EVERY;
use twins::{name_crossed, same_shape_rounds, twin_round};

use crate::coverage::Coverage;
use crate::runner::{case_outcome, run_recipe_covered};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use serde::Serialize;
use tenferro_mock_devices::providers::Fault;
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Capabilities, Profile, Recipe, recipe};
use tenferro_transfer_harness::{
    DEFAULT_DEADLINE, HarnessError, Oracle, Outcome, PhaseEvidence, QUEUE_STALL, Route,
    RouteDeadline, SpyRecord, Watchdog, describe_error, panic_message,
};

use crate::BuiltinProvider;
use crate::generated::{seed_rng, shell_quote};
use crate::held::HELD_MAX_ELEMENTS;
use crate::record::CaseOutcome;
use crate::suite::provider_for;

/// How hard to push one provider instance.
#[derive(Clone, Debug)]
pub struct ConcurrencyOptions {
    /// Threads, each with its own runtime around the one provider.
    pub threads: usize,
    /// Calls each thread makes per repeat.
    pub cases_per_thread: usize,
    /// How many times the whole concurrent set runs, each time with fresh
    /// runtimes around the same provider.
    pub repeats: usize,
    /// Faults injected into the shared provider (built-in providers only).
    pub inject: Vec<Fault>,
    /// The seed the threads draw their cases from.
    pub seed: u64,
    /// The per-call deadline: a `Duration` (`.into()`), or the route's
    /// shared [`RouteDeadline`] so that a hang is judged once per route.
    pub deadline: RouteDeadline,
}

impl Default for ConcurrencyOptions {
    fn default() -> Self {
        Self {
            threads: 4,
            cases_per_thread: 24,
            repeats: 3,
            inject: Vec::new(),
            seed: 0,
            deadline: DEFAULT_DEADLINE.into(),
        }
    }
}

impl ConcurrencyOptions {
    /// What a [`ProviderSuite`](crate::ProviderSuite) runs in `profile`:
    /// four threads, two repeats, and 80 (`quick`), 256 (`default`) or
    /// 2,048 (`deep`) calls per thread and repeat. `quick` makes 640
    /// concurrent calls, on top of the fixed and generated ones: a fault
    /// that fires once in a few hundred calls is met.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::concurrency::ConcurrencyOptions;
    /// use tenferro_transfer_conformance::harness::strategy::Profile;
    ///
    /// let quick = ConcurrencyOptions::for_profile(Profile::Quick);
    /// assert_eq!(quick.threads * quick.cases_per_thread * quick.repeats, 640);
    /// ```
    pub fn for_profile(profile: Profile) -> Self {
        let cases_per_thread = match profile {
            Profile::Quick => 80,
            Profile::Default => 256,
            _ => 2048,
        };
        Self {
            threads: 4,
            cases_per_thread,
            repeats: 2,
            ..Self::default()
        }
    }
}

/// What one concurrent run found.
#[derive(Clone, Debug, Serialize)]
pub struct ConcurrencyReport {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Threads.
    pub threads: usize,
    /// Calls made over all threads and repeats.
    pub cases: usize,
    /// The first few failing calls: thread, call, repeat, what was wrong,
    /// the calls in flight beside it, and how to replay it.
    pub failures: Vec<String>,
    /// Whether every call made in more than one repeat got the same verdict
    /// each time.
    pub identical_repeats: bool,
}

impl ConcurrencyReport {
    /// No violation, and identical verdicts on every repeat.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.identical_repeats
    }
}

/// One call of a concurrent run.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    /// Which repeat of the set, from 0.
    pub repeat: usize,
    /// Which thread, from 0.
    pub thread: usize,
    /// Which call of the thread, from 0: calls with the same index ran in
    /// the same round.
    pub index: usize,
    /// The case.
    pub recipe: Recipe,
    /// Where the call started and ended on the run's shared clock.
    pub span: (u64, u64),
    /// What became of the call, through the runner's one conversion:
    /// judged, skipped where the route cannot run it here, or not set up.
    pub outcome: CaseOutcome,
    /// Whether the devices' accounting showed the call's staged inputs and
    /// output while they were alive: the evidence a phase's memory check
    /// needs.
    pub accounting_seen: PhaseEvidence,
    /// The call's inputs judged, by kind and rules judged.
    pub coverage: Coverage,
}

impl Call {
    /// Whether the call broke a rule or could not be set up (a skip is
    /// neither).
    pub fn failed(&self) -> bool {
        self.outcome.failed()
    }

    /// `thread 2, call 17`, with its case.
    fn describe(&self) -> String {
        format!(
            "thread {} call {} ({} {:?} {})",
            self.thread,
            self.index + 1,
            self.recipe.dtype,
            self.recipe.shape,
            layout_name(&self.recipe)
        )
    }
}

fn layout_name(recipe: &Recipe) -> &'static str {
    match recipe.layout {
        tenferro_transfer_harness::Layout::Owned => "owned",
        _ => "view",
    }
}

/// What a concurrent call keeps of its outcome (of its run's last input):
/// the provider calls the Spy saw, and whether the source's accounting
/// showed the staged inputs.
pub(crate) struct CallKept {
    /// The provider calls.
    pub calls: Vec<SpyRecord>,
    /// [`Outcome::source_saw_input`].
    pub source_saw_input: Option<bool>,
}

impl CallKept {
    fn of(outcome: Outcome) -> Self {
        Self {
            calls: outcome.calls,
            source_saw_input: outcome.source_saw_input,
        }
    }

    /// What the devices' accounting was shown to see of the call.
    fn evidence(&self) -> PhaseEvidence {
        PhaseEvidence::new(
            self.source_saw_input == Some(true),
            self.calls
                .first()
                .and_then(|call| call.destination_saw_output)
                == Some(true),
        )
    }
}

/// Every call of a concurrent run, and how it was run.
#[derive(Clone, Debug)]
pub(crate) struct Pressure {
    /// The options it ran with.
    pub options: ConcurrencyOptions,
    /// Every call made, repeat by repeat, thread by thread. A repeat stops
    /// after the first round in which a call failed.
    pub calls: Vec<Call>,
    /// The repeats planned; those after them were added
    /// ([`Pressure::extend`]) to judge the devices' memory.
    pub planned: usize,
}

impl Pressure {
    /// The failing calls, in order.
    pub fn failures(&self) -> impl Iterator<Item = &Call> {
        self.calls.iter().filter(|call| call.failed())
    }

    /// Add the calls of `later`, a run of the same schedule again, as the
    /// repeats after this run's.
    pub fn extend(&mut self, later: Pressure) {
        let offset = self.options.repeats;
        self.calls.extend(later.calls.into_iter().map(|call| Call {
            repeat: call.repeat + offset,
            ..call
        }));
        self.options.repeats += later.options.repeats;
    }

    /// Whether every call made in several repeats got the same verdict in
    /// each (a repeat in which it was not run, or not judged, has none).
    pub fn identical_repeats(&self) -> bool {
        let mut verdicts: HashMap<(usize, usize), bool> = HashMap::new();
        // A call that was not run (after a hang) or not judged has no
        // verdict to compare.
        self.calls
            .iter()
            .filter(|call| call.outcome.failed() || call.outcome.is_judged())
            .all(|call| {
                *verdicts
                    .entry((call.thread, call.index))
                    .or_insert(call.failed())
                    == call.failed()
            })
    }
}

/// The cases thread `thread` makes, drawn from the seed.
fn thread_cases(
    profile: Profile,
    capabilities: &Capabilities,
    options: &ConcurrencyOptions,
    thread: usize,
) -> Result<Vec<Recipe>, HarnessError> {
    let strategy = recipe(profile, capabilities);
    let salt = (thread as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut runner = TestRunner::new_with_rng(Config::default(), seed_rng(options.seed ^ salt));
    (0..options.cases_per_thread)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .map(|tree| tree.current())
                .map_err(|reason| HarnessError::InvalidCase {
                    reason: format!("cannot draw a concurrent case: {reason}"),
                })
        })
        .collect()
}

/// Drive `provider` on `route` from `options.threads` threads at once,
/// `options.repeats` times, with cases of `profile` inside `capabilities`.
///
/// Never deadlocks on a failure: every thread takes part in every round's
/// two barriers, whatever its calls do, and all threads stop after the
/// same round.
///
/// # Errors
///
/// A setup error when the cases cannot be drawn.
pub(crate) fn drive(
    route: &Route,
    provider: &Arc<dyn TransferProvider>,
    profile: Profile,
    capabilities: &Capabilities,
    options: &ConcurrencyOptions,
) -> Result<Pressure, HarnessError> {
    let threads = options.threads.max(1);
    // Views only where the source can stage them.
    let capabilities = &crate::generated::staged_views(capabilities, route);
    let mut plans: Vec<Vec<Recipe>> = (0..threads)
        .map(|thread| thread_cases(profile, capabilities, options, thread))
        .collect::<Result<_, _>>()?;
    same_shape_rounds(&mut plans);
    let mut calls = Vec::new();
    for repeat in 0..options.repeats {
        let clock = AtomicU64::new(0);
        let barrier = Barrier::new(threads);
        let stop = AtomicBool::new(false);
        let shared = Shared {
            route,
            provider,
            deadline: &options.deadline,
            repeat,
            clock: &clock,
            barrier: &barrier,
            stop: &stop,
        };
        let plans_ref: &[Vec<Recipe>] = &plans;
        let per_thread: Vec<Vec<Call>> = std::thread::scope(|scope| {
            let workers: Vec<_> = plans
                .iter()
                .enumerate()
                .map(|(thread, plan)| {
                    let shared = &shared;
                    scope.spawn(move || shared.run_thread(thread, plan, plans_ref))
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().unwrap_or_default())
                .collect()
        });
        calls.extend(per_thread.into_iter().flatten());
    }
    Ok(Pressure {
        options: ConcurrencyOptions {
            threads,
            ..options.clone()
        },
        calls,
        planned: options.repeats,
    })
}

/// What every thread of one repeat shares.
struct Shared<'a> {
    route: &'a Route,
    provider: &'a Arc<dyn TransferProvider>,
    deadline: &'a RouteDeadline,
    repeat: usize,
    clock: &'a AtomicU64,
    barrier: &'a Barrier,
    stop: &'a AtomicBool,
}

impl Shared<'_> {
    /// One thread's calls through its own runtime, in lock-step with the
    /// other threads.
    ///
    /// Each round is: barrier, call, flag a failure, barrier, read the
    /// flag. Every flag is set between the two barriers of a round and
    /// read after the second, so all threads read the same value and stop
    /// after the same round.
    fn run_thread(&self, thread: usize, plan: &[Recipe], plans: &[Vec<Recipe>]) -> Vec<Call> {
        let mut watchdog = Watchdog::new(
            self.route.clone(),
            Arc::clone(self.provider),
            self.deadline.clone(),
        );
        // Each thread holds its recent outputs and reads them again after
        // each of its calls: a call that writes into a block another call's
        // output still holds shows there, whichever thread made it.
        if let Ok(watchdog) = &mut watchdog {
            watchdog.keep_outputs_up_to(HELD_MAX_ELEMENTS);
        }
        let mut calls = Vec::with_capacity(plan.len());
        for (index, recipe) in plan.iter().enumerate() {
            if thread == 0 {
                // An adapter's stall that panics does not keep this thread
                // from its barrier (`Endpoint::stall_queues` catches it):
                // the round runs unstalled.
                stall_round(self.route, index);
            }
            self.barrier.wait();
            let started = self.clock.fetch_add(1, Ordering::SeqCst);
            let (outcome, accounting_seen, coverage) = match &mut watchdog {
                Ok(watchdog) => catch_unwind(AssertUnwindSafe(|| {
                    let (mut run, coverage) = run_recipe_covered(watchdog, self.route, recipe, CallKept::of);
                    if twin_round(index) {
                        name_crossed(&mut run, thread, index, plans);
                    }
                    let seen = match &run {
                        Ok((_, kept)) => kept.evidence(),
                        Err(_) => PhaseEvidence::default(),
                    };
                    (case_outcome(run), seen, coverage)
                }))
                .unwrap_or_else(|payload| {
                    let outcome = CaseOutcome::NotSetUp {
                        message: format!(
                            "the concurrent run itself panicked (a harness bug; please report it): {}",
                            panic_message(payload.as_ref())
                        ),
                    };
                    (outcome, PhaseEvidence::default(), Coverage::default())
                }),
                Err(error) => (
                    CaseOutcome::NotSetUp {
                        message: format!(
                            "the thread's runtime could not be built: {}",
                            describe_error(error)
                        ),
                    },
                    PhaseEvidence::default(),
                    Coverage::default(),
                ),
            };
            let finished = self.clock.fetch_add(1, Ordering::SeqCst);
            let call = Call {
                repeat: self.repeat,
                thread,
                index,
                recipe: recipe.clone(),
                span: (started, finished),
                outcome,
                accounting_seen,
                coverage,
            };
            if call.failed() {
                self.stop.store(true, Ordering::SeqCst);
            }
            calls.push(call);
            self.barrier.wait();
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
        }
        // Every thread's calls have returned (the last barrier): what the
        // held outputs show now is the thread's last call's to answer for.
        if let (Ok(watchdog), Some(last)) = (&mut watchdog, calls.last_mut()) {
            let held = watchdog.release_outputs().unwrap_or_default();
            if !held.changed.is_empty() {
                let violations = Oracle.judge_held(&held).violations().to_vec();
                last.outcome = last.outcome.clone().with_violations(violations);
            }
        }
        calls
    }
}

/// Before round `round` starts (every thread is at its barrier or on its
/// way there, none calling), stall the queues of the route's destination
/// (every round of twins) or source (one other round in three), where
/// they can stall
/// ([`Endpoint::stall_queues`](tenferro_transfer_harness::Endpoint::stall_queues)):
/// the round's calls then overlap with queued work on one device held
/// back, as a busy device holds it, and a provider that reuses memory
/// another queue has not yet read, or reads memory not yet written, meets
/// it. Twins, calls of one size at once, meet the same blocks of a pool.
/// The other rounds run at the devices' own pace.
fn stall_round(route: &Route, round: usize) {
    if twin_round(round) {
        route.destination().stall_queues(QUEUE_STALL);
    } else if round.is_multiple_of(3) {
        route.source().stall_queues(QUEUE_STALL);
    }
}

/// Drive one instance of `builtin` from `options.threads` threads at once,
/// each thread with its own runtime, with cases of the `quick` profile.
///
/// # Errors
///
/// A setup error when the route or provider cannot be built or the cases
/// cannot be drawn.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::builtin_provider;
/// use tenferro_transfer_conformance::concurrency::{run_concurrent, ConcurrencyOptions};
///
/// let options = ConcurrencyOptions { threads: 2, cases_per_thread: 4, ..ConcurrencyOptions::default() };
/// let report = run_concurrent(builtin_provider("sim-peer").unwrap(), &options).unwrap();
/// assert!(report.passed(), "{report:?}");
/// ```
pub fn run_concurrent(
    builtin: &BuiltinProvider,
    options: &ConcurrencyOptions,
) -> Result<ConcurrencyReport, HarnessError> {
    let route = builtin.route()?;
    let provider = provider_for(builtin, &route, &options.inject)?;
    // `drive` draws views only where the source stages them.
    let pressure = drive(
        &route,
        &provider,
        Profile::Quick,
        &Capabilities::all(),
        options,
    )?;
    let failures = pressure
        .failures()
        .take(5)
        .map(|call| {
            let alone = replay_alone(
                &route,
                Arc::clone(&provider),
                &options.deadline,
                &call.recipe,
            );
            let what = match &call.outcome {
                CaseOutcome::NotSetUp { message } => format!("setup: {message}"),
                outcome => outcome
                    .violations()
                    .iter()
                    .map(|violation| format!("{}: {}", violation.rule, violation.message))
                    .collect::<Vec<_>>()
                    .join("\n  "),
            };
            format!(
                "{what}\n  {}",
                pressure.account(
                    call,
                    &alone,
                    |json| {
                        format!(
                            "cargo run --release -- replay --provider {} {} (the case alone)",
                            builtin.name,
                            shell_quote(json)
                        )
                    },
                    |seed| {
                        format!(
                            "run_concurrent with seed {seed} (the same concurrent schedule; the threads' timing varies)"
                        )
                    },
                )
            )
        })
        .collect();
    Ok(ConcurrencyReport {
        provider: builtin.name.to_owned(),
        route: route.label(),
        threads: pressure.options.threads,
        cases: pressure.calls.len(),
        failures,
        identical_repeats: pressure.identical_repeats(),
    })
}
