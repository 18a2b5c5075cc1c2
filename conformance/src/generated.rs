//! The generated suite: proptest-drawn cases through a built-in provider,
//! shrunk to one minimal failing case with a command that replays it.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner,
};
use serde::Serialize;
use tenferro_mock_devices::providers::Fault;
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Capabilities, Profile, Recipe, recipe};
use tenferro_transfer_harness::{
    DEFAULT_DEADLINE, HarnessError, Judgement, Oracle, Route, Unchecked, Watchdog,
};

use crate::BuiltinProvider;
use crate::report::ViolationRow;
use crate::suite::provider_for;

/// Environment variable holding a recipe (one line of JSON) that the
/// generated suite replays instead of generating cases.
pub const REPLAY_ENV: &str = "TRANSFER_CONFORMANCE_REPLAY";
/// Environment variable fixing the generator's seed.
pub const SEED_ENV: &str = "TRANSFER_CONFORMANCE_SEED";
/// Environment variable naming the built-in provider that a replay under
/// `cargo test --test generated` runs (unset: every built-in provider).
pub const PROVIDER_ENV: &str = "TRANSFER_CONFORMANCE_PROVIDER";
/// Environment variable listing, comma-separated, the faults that a replay
/// under `cargo test --test generated` injects, so that it reproduces a
/// failure found under `--inject`.
pub const INJECT_ENV: &str = "TRANSFER_CONFORMANCE_INJECT";

/// How to run the generated suite.
#[derive(Clone, Debug)]
pub struct GeneratedOptions {
    /// The profile.
    pub profile: Profile,
    /// The generator's seed; `None` draws one (and reports it).
    pub seed: Option<u64>,
    /// Faults to inject into the provider.
    pub inject: Vec<Fault>,
    /// Where proptest keeps failing seeds, relative to the working directory
    /// (under `cargo test`, the calling crate); `None` keeps none.
    pub regressions: Option<&'static str>,
    /// The per-case deadline.
    pub deadline: Duration,
}

impl GeneratedOptions {
    /// `profile`, a drawn seed, no faults, no regression file.
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            seed: None,
            inject: Vec::new(),
            regressions: None,
            deadline: DEFAULT_DEADLINE,
        }
    }

    /// The seed from [`SEED_ENV`] when it is set.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidCase`] if the variable is not a number.
    pub fn with_env_seed(mut self) -> Result<Self, HarnessError> {
        if let Ok(text) = std::env::var(SEED_ENV) {
            self.seed = Some(text.parse().map_err(|_| HarnessError::InvalidCase {
                reason: format!("{SEED_ENV}={text} is not an unsigned integer"),
            })?);
        }
        Ok(self)
    }
}

/// The shrunk failing case.
#[derive(Clone, Debug, Serialize)]
pub struct GeneratedFailure {
    /// The minimal recipe that still fails.
    pub minimal: Recipe,
    /// Its violations.
    pub violations: Vec<ViolationRow>,
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

fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0_u8; 32];
    for (chunk, salt) in bytes.chunks_exact_mut(8).zip(0_u64..) {
        chunk.copy_from_slice(&(seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

fn drawn_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

fn judge(rig: &mut Watchdog, route: &Route, recipe: &Recipe) -> Result<Judgement, String> {
    let case = recipe.case().map_err(|error| error.to_string())?;
    let outcome = rig.run(&case).map_err(|error| error.to_string())?;
    Ok(Oracle.judge(&case, route, &outcome))
}

pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What [`generate`] found: how many cases it ran, and the shrunk failure.
pub(crate) struct Generation {
    /// The generator's seed.
    pub seed: u64,
    /// Cases run, shrinking included.
    pub cases: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// The minimal failing recipe and its violations.
    pub failure: Option<(Recipe, Vec<ViolationRow>)>,
    /// Rules left unchecked on every generated case, with the first reason.
    pub unchecked: Vec<Unchecked>,
}

/// Run proptest-drawn recipes inside `capabilities` through `provider` on
/// `route`, shrinking the first failure to a minimal recipe.
///
/// # Errors
///
/// Returns the harness's error if the rig cannot be built.
pub(crate) fn generate(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    capabilities: &Capabilities,
    options: &GeneratedOptions,
) -> Result<Generation, HarnessError> {
    let rig = RefCell::new(Watchdog::new(route.clone(), provider, options.deadline)?);
    let seed = options.seed.unwrap_or_else(drawn_seed);
    let config = Config {
        cases: options.profile.cases(),
        failure_persistence: options.regressions.map(|path| {
            Box::new(FileFailurePersistence::Direct(path))
                as Box<dyn proptest::test_runner::FailurePersistence>
        }),
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, seed_rng(seed));
    let strategy = recipe(options.profile, capabilities);
    let cases = std::cell::Cell::new(0_u64);
    let unchecked: RefCell<Option<Vec<Unchecked>>> = RefCell::new(None);
    let start = Instant::now();
    let result = runner.run(&strategy, |recipe| {
        cases.set(cases.get() + 1);
        let judgement =
            judge(&mut rig.borrow_mut(), route, &recipe).map_err(TestCaseError::fail)?;
        let mut everywhere = unchecked.borrow_mut();
        match everywhere.as_mut() {
            None => *everywhere = Some(judgement.unchecked.clone()),
            Some(kept) => kept.retain(|item| {
                judgement
                    .unchecked
                    .iter()
                    .any(|other| other.rule == item.rule)
            }),
        }
        if judgement.passed() {
            Ok(())
        } else {
            Err(TestCaseError::fail(judgement.violations[0].message.clone()))
        }
    });
    let elapsed = start.elapsed();
    let failure = match result {
        Ok(()) => None,
        Err(TestError::Fail(_, minimal)) => {
            let violations = match judge(&mut rig.borrow_mut(), route, &minimal) {
                Ok(judgement) => judgement
                    .violations
                    .iter()
                    .map(ViolationRow::from)
                    .collect(),
                Err(message) => vec![ViolationRow {
                    rule: "setup".into(),
                    message,
                }],
            };
            Some((minimal, violations))
        }
        Err(TestError::Abort(reason)) => Some((
            Recipe {
                dtype: "F32".into(),
                shape: vec![],
                layout: tenferro_transfer_harness::Layout::Owned,
                seed: 0,
                specials: 0,
            },
            vec![ViolationRow {
                rule: "setup".into(),
                message: format!("proptest aborted: {reason}"),
            }],
        )),
    };
    Ok(Generation {
        seed,
        cases: cases.get(),
        elapsed,
        failure,
        unchecked: unchecked.take().unwrap_or_default(),
    })
}

/// Run the generated suite against one built-in provider.
///
/// # Errors
///
/// Returns the harness's error if the route or rig cannot be built.
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
    let capabilities = Capabilities {
        views: route.source().stages_views(),
        ..Capabilities::all()
    };
    let generation = generate(
        &route,
        provider_for(provider, &route, &options.inject)?,
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
        failure: generation.failure.map(|(minimal, violations)| {
            let json = minimal.to_json();
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
                minimal,
                violations,
            }
        }),
    })
}

/// Run one recipe through a built-in provider: what `replay` does.
///
/// # Errors
///
/// Returns the harness's error if the route, rig or case cannot be built.
pub fn replay(
    provider: &BuiltinProvider,
    inject: &[Fault],
    recipe: &Recipe,
) -> Result<Judgement, HarnessError> {
    let route = provider.route()?;
    let mut rig = Watchdog::new(
        route.clone(),
        provider_for(provider, &route, inject)?,
        DEFAULT_DEADLINE,
    )?;
    let case = recipe.case()?;
    let outcome = rig.run(&case)?;
    Ok(Oracle.judge(&case, &route, &outcome))
}
