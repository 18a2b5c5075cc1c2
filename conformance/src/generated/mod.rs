//! The generated suite: proptest-drawn cases through a built-in provider,
//! shrunk to one minimal failing case with a command that replays it.

use crate::allocator::{largest_case_bytes, settle_large_blocks};
use crate::coverage::Coverage;
use crate::record::CaseOutcome;
use crate::runner::{case_outcome, replay_recipe, run_recipe_covered};
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::test_runner::{
    Config, FileFailurePersistence, Reason, RngAlgorithm, TestCaseError, TestError, TestRng,
    TestRunner,
};
use serde::Serialize;
use tenferro_mock_devices::providers::Fault;
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Capabilities, Profile, Recipe, ViewKinds, recipe};
use tenferro_transfer_harness::{
    DEFAULT_DEADLINE, HarnessError, Route, RouteDeadline, Settings, Watchdog,
};

use crate::BuiltinProvider;
use crate::report::{ViolationRow, violation_rows};
use crate::suite::provider_for;

mod found;

pub(crate) use found::{FailedCase, Found};

pub use tenferro_transfer_harness::settings::{INJECT_ENV, PROVIDER_ENV, REPLAY_ENV, SEED_ENV};

/// How to run the generated suite.
#[derive(Clone, Debug)]
pub struct GeneratedOptions {
    /// The profile.
    pub profile: Profile,
    /// The generator's seed; `None` draws one (and reports it).
    pub seed: Option<u64>,
    /// Faults to inject into the provider.
    pub inject: Vec<Fault>,
    /// The file where proptest keeps the seeds of failing cases and from
    /// which it replays them first next time (a relative path is taken
    /// from the working directory: under `cargo test`, the calling
    /// crate); `None` keeps none.
    pub regressions: Option<std::path::PathBuf>,
    /// The per-case deadline: a `Duration` (`.into()`), or the route's
    /// shared [`RouteDeadline`] so that a hang is judged once per route.
    pub deadline: RouteDeadline,
}

impl GeneratedOptions {
    /// `profile`, a drawn seed, no faults, no regression file.
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            seed: None,
            inject: Vec::new(),
            regressions: None,
            deadline: DEFAULT_DEADLINE.into(),
        }
    }

    /// The seed from [`SEED_ENV`] when it is set.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Settings`] if a setting is not one the suite knows
    /// (the seed not a number, say).
    pub fn with_env_seed(mut self) -> Result<Self, HarnessError> {
        if let Some(seed) = Settings::current()?.seed {
            self.seed = Some(seed);
        }
        Ok(self)
    }
}

/// The shrunk failing case.
#[derive(Clone, Debug, Serialize)]
pub struct GeneratedFailure {
    /// The minimal recipe that still fails; when the failure did not
    /// reproduce, the first case that failed.
    pub minimal: Recipe,
    /// Its violations (never empty): the replay's, or, when the failure did
    /// not reproduce, those it had when it failed.
    pub violations: Vec<ViolationRow>,
    /// When the minimal case passed on replay: the sentence that says so
    /// ("nondeterministic: failed on case X, passed on replay").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nondeterministic: Option<String>,
    /// When the minimal case failed again only on the provider that ran
    /// the earlier cases, and passed on a fresh one: the sentence that
    /// says so ("depends on the provider's state: ...").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on_state: Option<String>,
    /// A CLI command that replays exactly that case.
    pub replay_command: String,
    /// The same for `cargo test --test generated`, through [`REPLAY_ENV`],
    /// [`PROVIDER_ENV`] and (for injected faults) [`INJECT_ENV`].
    pub replay_env: String,
}

/// What a generated run did.
#[derive(Clone, Debug, Serialize)]
pub struct GeneratedReport {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Profile name.
    pub profile: Profile,
    /// The generator's seed.
    pub seed: u64,
    /// Cases run, shrinking included.
    pub cases: u64,
    /// Wall time.
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
    /// The shrunk failure, if any case failed.
    pub failure: Option<GeneratedFailure>,
}

fn seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

impl GeneratedReport {
    /// Cases per second.
    pub fn cases_per_second(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// A readable account: counts, and for a failure the minimal case, the
    /// seed and the replay commands.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} on {}: {} profile, seed {}, {} cases in {:.2} s ({:.0} cases/s): ",
            self.provider,
            self.route,
            self.profile,
            self.seed,
            self.cases,
            self.elapsed.as_secs_f64(),
            self.cases_per_second()
        );
        match &self.failure {
            None => out.push_str("pass\n"),
            Some(failure) => {
                out.push_str("FAIL\n");
                for note in [&failure.nondeterministic, &failure.depends_on_state]
                    .into_iter()
                    .flatten()
                {
                    out.push_str(&format!("  {note}\n"));
                }
                out.push_str(&format!("  minimal case: {}\n", failure.minimal.to_json()));
                for violation in &failure.violations {
                    out.push_str(&format!("  {}: {}\n", violation.rule, violation.message));
                }
                out.push_str(&format!(
                    "  replay: {}\n  replay under cargo test: {}\n",
                    failure.replay_command, failure.replay_env
                ));
            }
        }
        out
    }
}

/// `path` as the `&'static str` proptest's file persistence takes: each
/// distinct path is leaked once per process (a few bytes per route), never
/// once per run.
fn static_path(path: &std::path::Path) -> &'static str {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    static PATHS: OnceLock<Mutex<BTreeMap<std::path::PathBuf, &'static str>>> = OnceLock::new();
    let mut paths = PATHS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    paths
        .entry(path.to_path_buf())
        .or_insert_with(|| Box::leak(path.to_string_lossy().into_owned().into_boxed_str()))
}

pub(crate) fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0_u8; 32];
    for (chunk, salt) in bytes.chunks_exact_mut(8).zip(0_u64..) {
        chunk.copy_from_slice(&(seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

pub(crate) fn drawn_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

/// What became of `recipe`'s case, through the runner's one conversion:
/// judged, skipped where the route cannot run it here, or not set up; and
/// the coverage of its inputs.
fn outcome_of(watchdog: &mut Watchdog, route: &Route, recipe: &Recipe) -> (CaseOutcome, Coverage) {
    let (run, coverage) = run_recipe_covered(watchdog, route, recipe, drop);
    (case_outcome(run), coverage)
}

pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What [`generate`] found: how many cases it ran, and the shrunk failure.
pub(crate) struct Generation {
    /// The generator's seed.
    pub seed: u64,
    /// Cases run, shrinking included (the replay of the minimal case is
    /// not counted).
    pub cases: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// The failure, if any case failed.
    pub failure: Option<Found>,
    /// Every judged case summed up ([`CaseOutcome::summed`]): a rule is
    /// checked where any case checked it. `None` when no case was judged.
    pub summed: Option<CaseOutcome>,
    /// Every judged case, by kind and rules judged (the coverage map).
    pub coverage: Coverage,
    /// Why the first skipped case was skipped (a case the route cannot run
    /// here is a skip, never a failure).
    pub skipped: Option<String>,
}

/// What builds a fresh provider for a route: the route's factory.
pub(crate) type FreshProvider<'a> = &'a dyn Fn() -> Result<Arc<dyn TransferProvider>, String>;

/// Run proptest-drawn recipes inside `capabilities` through `provider` on
/// `route`, shrinking the first failure to a minimal recipe.
///
/// Every failing case is recorded with its violations as it fails, so a
/// failure is never lost: when the minimal case passes on replay, the
/// result is [`Found::Nondeterministic`] with the first failing case. A
/// minimal case that fails again is replayed once more on a provider from
/// `fresh`, as its replay line will run it: passing there, it is
/// [`Found::StateDependent`].
///
/// # Errors
///
/// Returns the harness's error if the watchdog cannot be built.
pub(crate) fn generate(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    fresh: FreshProvider<'_>,
    capabilities: &Capabilities,
    options: &GeneratedOptions,
) -> Result<Generation, HarnessError> {
    let mut watchdog = Watchdog::new(route.clone(), provider, options.deadline.clone())?;
    watchdog.keep_plans(options.profile.plans_kept());
    let watchdog = RefCell::new(watchdog);
    let seed = options.seed.unwrap_or_else(drawn_seed);
    let mut runner = TestRunner::new_with_rng(proptest_config(options), seed_rng(seed));
    // Views only where the source can stage them (CUDA memory, say,
    // cannot be carved into views by tenferro-gpu 0.9).
    let capabilities = staged_views(capabilities, route);
    let strategy = recipe(options.profile, &capabilities);
    let drawn = Drawn::default();
    settle_large_blocks(largest_case_bytes(options.profile, &capabilities));
    let start = Instant::now();
    let result = runner.run(&strategy, |recipe| drawn.judge(&watchdog, route, recipe));
    let failure = match result {
        Ok(()) => None,
        Err(TestError::Fail(_, minimal)) => drawn.replayed(&watchdog, route, minimal, fresh),
        Err(TestError::Abort(reason)) => aborted(&reason),
    };
    Ok(Generation {
        seed,
        cases: drawn.cases.get(),
        elapsed: start.elapsed(),
        failure,
        summed: drawn.summed.take(),
        coverage: drawn.coverage.take(),
        skipped: drawn.skipped.take(),
    })
}

/// Proptest's configuration for a generated run: the profile's number of
/// cases, the regression file if any, and a bound on shrinking.
fn proptest_config(options: &GeneratedOptions) -> Config {
    Config {
        cases: options.profile.cases(),
        failure_persistence: options.regressions.as_deref().map(|path| {
            Box::new(FileFailurePersistence::Direct(static_path(path)))
                as Box<dyn proptest::test_runner::FailurePersistence>
        }),
        max_shrink_iters: 4096,
        ..Config::default()
    }
}

/// What a generated run keeps across the cases proptest draws: the count,
/// the summed outcome, the coverage, the first skip's reason, and the first
/// and latest failing cases (proptest's minimal case is the last one that
/// failed while shrinking).
#[derive(Default)]
struct Drawn {
    cases: Cell<u64>,
    summed: RefCell<Option<CaseOutcome>>,
    coverage: RefCell<Coverage>,
    skipped: RefCell<Option<String>>,
    first: RefCell<Option<FailedCase>>,
    latest: RefCell<Option<FailedCase>>,
}

impl Drawn {
    /// Judge one drawn `recipe` on `watchdog` and tally it; a failing case is
    /// recorded with its violations before proptest is told it failed.
    fn judge(
        &self,
        watchdog: &RefCell<Watchdog>,
        route: &Route,
        recipe: Recipe,
    ) -> Result<(), TestCaseError> {
        self.cases.set(self.cases.get() + 1);
        let (judged, covered) = outcome_of(&mut watchdog.borrow_mut(), route, &recipe);
        self.coverage.borrow_mut().extend(covered);
        if let CaseOutcome::Skipped { reason } = &judged {
            self.skipped
                .borrow_mut()
                .get_or_insert_with(|| reason.clone());
        }
        let mut sum = self.summed.borrow_mut();
        *sum = CaseOutcome::summed(sum.iter().chain([&judged]));
        drop(sum);
        match FailedCase::new(recipe, judged) {
            None => Ok(()),
            Some(failed) => {
                let message = failed.first_message();
                self.first
                    .borrow_mut()
                    .get_or_insert_with(|| failed.clone());
                *self.latest.borrow_mut() = Some(failed);
                Err(TestCaseError::fail(message))
            }
        }
    }

    /// The failure proptest shrank to `minimal`, replayed on `watchdog`: it
    /// reproduced (on a fresh provider too, or only on the one that ran
    /// the earlier cases), or it did not and the first failing case stands.
    fn replayed(
        &self,
        watchdog: &RefCell<Watchdog>,
        route: &Route,
        minimal: Recipe,
        fresh: FreshProvider<'_>,
    ) -> Option<Found> {
        let (replayed, _) = outcome_of(&mut watchdog.borrow_mut(), route, &minimal);
        let original = self.first.take();
        let shrunk = self.latest.take().filter(|failed| failed.recipe == minimal);
        match (FailedCase::new(minimal.clone(), replayed), original) {
            (Some(reproduced), _) => {
                Some(self.on_fresh_provider(&mut watchdog.borrow_mut(), route, reproduced, fresh))
            }
            (None, Some(original)) => Some(Found::Nondeterministic {
                minimal: Box::new(shrunk.unwrap_or_else(|| original.clone())),
                original,
            }),
            // Proptest reported a failure the closure never saw (only
            // a persisted regression could): keep it as a failure.
            (None, None) => FailedCase::new(
                minimal,
                CaseOutcome::NotSetUp {
                    message: "proptest reported a failing case that passed when judged".into(),
                },
            )
            .map(Found::Reproduced),
        }
    }
}

impl Drawn {
    /// `failed`, which failed again on the provider that ran the earlier
    /// cases, run once more on a fresh provider (as its replay line runs
    /// it in a fresh process): it fails there too, or the failure depends
    /// on the provider's state. Where the factory cannot build another
    /// provider, the replay on the same one stands.
    fn on_fresh_provider(
        &self,
        watchdog: &mut Watchdog,
        route: &Route,
        failed: FailedCase,
        fresh: FreshProvider<'_>,
    ) -> Found {
        let Ok(provider) = fresh() else {
            return Found::Reproduced(failed);
        };
        watchdog.replace_provider(provider);
        let (alone, _) = outcome_of(watchdog, route, &failed.recipe);
        match FailedCase::new(failed.recipe.clone(), alone) {
            Some(again) => Found::Reproduced(again),
            None => Found::StateDependent {
                failed,
                earlier: self.cases.get(),
            },
        }
    }
}

/// A run proptest aborted, as a failure of an empty F32 case that was not
/// set up.
fn aborted(reason: &Reason) -> Option<Found> {
    FailedCase::new(
        Recipe::fixed(
            tenferro_tensor::DType::F32,
            vec![],
            tenferro_transfer_harness::Layout::Owned,
            tenferro_transfer_harness::strategy::ValueSource::Seeded,
        ),
        CaseOutcome::NotSetUp {
            message: format!("proptest aborted: {reason}"),
        },
    )
    .map(Found::Reproduced)
}

/// `capabilities` without views where the route's source cannot stage
/// them (CUDA memory, say, cannot be carved into views by tenferro-gpu
/// 0.9): what the generated and the concurrent cases are drawn from.
pub(crate) fn staged_views(capabilities: &Capabilities, route: &Route) -> Capabilities {
    if route.source().stages_views() {
        capabilities.clone()
    } else {
        capabilities.clone().views(ViewKinds::NONE)
    }
}

/// Run the generated suite against one built-in provider.
///
/// # Errors
///
/// Returns the harness's error if the route or watchdog cannot be built.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::generated::{run_generated, GeneratedOptions};
/// use tenferro_transfer_conformance::builtin_provider;
/// use tenferro_transfer_conformance::harness::strategy::Profile;
///
/// let options = GeneratedOptions { seed: Some(7), ..GeneratedOptions::new(Profile::Quick) };
/// let report = run_generated(builtin_provider("sim-peer").unwrap(), &options).unwrap();
/// assert!(report.failure.is_none(), "{}", report.to_text());
/// ```
pub fn run_generated(
    provider: &BuiltinProvider,
    options: &GeneratedOptions,
) -> Result<GeneratedReport, HarnessError> {
    let route = provider.route()?;
    // Views of CUDA memory are a known limit of tenferro-gpu's download.
    let capabilities = staged_views(&Capabilities::all(), &route);
    let fresh =
        || provider_for(provider, &route, &options.inject).map_err(|error| error.to_string());
    let generation = generate(
        &route,
        provider_for(provider, &route, &options.inject)?,
        &fresh,
        &capabilities,
        options,
    )?;
    let inject: String = options
        .inject
        .iter()
        .map(|fault| format!(" --inject {}", fault.name()))
        .collect();
    let inject_env = match options.inject.as_slice() {
        [] => String::new(),
        faults => format!(
            " {INJECT_ENV}={}",
            faults
                .iter()
                .map(|fault| fault.name())
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    Ok(GeneratedReport {
        provider: provider.name.to_owned(),
        route: route.label(),
        profile: options.profile,
        seed: generation.seed,
        cases: generation.cases,
        elapsed: generation.elapsed,
        failure: generation.failure.map(|found| {
            let shown = found.shown().clone();
            let json = shown.recipe.to_json();
            GeneratedFailure {
                replay_command: format!(
                    "cargo run --release -- replay --provider {}{inject} {}",
                    provider.name,
                    shell_quote(&json)
                ),
                replay_env: format!(
                    "{REPLAY_ENV}={} {PROVIDER_ENV}={}{inject_env} cargo test --test generated",
                    shell_quote(&json),
                    provider.name
                ),
                nondeterministic: found.nondeterminism(),
                depends_on_state: found.state_dependence(),
                minimal: shown.recipe,
                violations: violation_rows(&shown.outcome),
            }
        }),
    })
}

/// Run one recipe through a built-in provider: what `replay` does. The
/// case's outcome: passed, failed with its violations, skipped where the
/// route cannot run it here, or not set up.
///
/// # Errors
///
/// Returns the harness's error if the route or watchdog cannot be built.
pub fn replay(
    provider: &BuiltinProvider,
    inject: &[Fault],
    recipe: &Recipe,
) -> Result<CaseOutcome, HarnessError> {
    let route = provider.route()?;
    let mut watchdog = Watchdog::new(
        route.clone(),
        provider_for(provider, &route, inject)?,
        DEFAULT_DEADLINE,
    )?;
    // Read beside the call, and handed over unread, as the fixed pass
    // runs its cases.
    Ok(case_outcome(replay_recipe(&mut watchdog, &route, recipe)))
}
