//! Fuzzing a vendor's own provider: [`ProviderSuite::fuzzer`] turns the
//! suite a provider crate already declares into a [`SuiteFuzzer`], whose
//! [`run`](SuiteFuzzer::run) decodes fuzz input bytes into one of the
//! suite's routes and a sequence of cases (the call order matters for a
//! provider that keeps state between calls), runs them through the real
//! runtime around the provider, and returns every broken rule as an error:
//! a crash under libFuzzer, a failing test under `cargo test`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Capabilities, Recipe};
use tenferro_transfer_harness::{
    Case, HarnessError, Judgement, OutsideCase, Route, Violation, Watchdog,
};

use super::ProviderSuite;
use crate::generated::{REPLAY_ENV, shell_quote};
use crate::runner::{JudgedAs, merged, run_cases};

/// The most cases one fuzz input runs, in order, on one watchdog.
pub const MAX_FUZZ_CALLS: usize = 4;

/// What a fuzz input found wrong: each is a crash.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FuzzFailure {
    /// The provider broke a rule of the suite's level on a decoded case.
    #[error("{}", broke_text(.provider, .route, *.call, .calls, .violations, .cargo_test))]
    Broke {
        /// The suite's provider name.
        provider: String,
        /// The route's declared name.
        route: String,
        /// Which call of the input broke it (0-based).
        call: usize,
        /// The input's calls, in order, as recipe JSON; `calls[call]` is
        /// the failing case ([`FuzzFailure::recipe`]).
        calls: Vec<String>,
        /// What was broken.
        violations: Vec<Violation>,
        /// The `cargo test` command that runs the suite's tests
        /// ([`ProviderSuite::cargo_test`]), for the replay line.
        cargo_test: Box<str>,
    },
    /// The route or its provider could not be built, or a case could not
    /// be run: the fuzz target cannot do its work.
    #[error("route `{route}` could not be set up: {message}")]
    Setup {
        /// The route's declared name.
        route: String,
        /// What failed.
        message: String,
    },
}

impl FuzzFailure {
    /// The failing case's recipe as JSON (what `TRANSFER_CONFORMANCE_REPLAY`
    /// replays), for a broken rule.
    pub fn recipe(&self) -> Option<&str> {
        match self {
            Self::Broke { call, calls, .. } => calls.get(*call).map(String::as_str),
            Self::Setup { .. } => None,
        }
    }
}

fn broke_text(
    provider: &str,
    route: &str,
    call: usize,
    calls: &[String],
    violations: &[Violation],
    cargo_test: &str,
) -> String {
    let recipe = calls.get(call).map(String::as_str).unwrap_or("?");
    let mut text = format!("provider `{provider}` broke the contract on route `{route}`");
    if calls.len() > 1 {
        text.push_str(&format!(
            " at call {} of {} (calls in order: {})",
            call + 1,
            calls.len(),
            calls.join(", ")
        ));
    }
    text.push_str(&format!(": case {recipe}"));
    for violation in violations {
        text.push_str(&format!("\n  {}: {}", violation.rule, violation.message));
    }
    text.push_str(&format!(
        "\nreplay the case alone: {REPLAY_ENV}={} {cargo_test} {route}::",
        shell_quote(recipe)
    ));
    text.push_str(
        "\nreplay the input as it was: SuiteFuzzer::run on the crash file's bytes (see docs/fuzzing.md)",
    );
    text
}

/// How many inputs a fuzzer ran and skipped.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct FuzzStats {
    /// Inputs run through a provider.
    pub inputs: u64,
    /// Cases judged.
    pub cases: u64,
    /// Inputs whose route's device is not here, and cases its source
    /// cannot stage (skipped, never a pass).
    pub unavailable: u64,
}

struct RouteRig {
    route: Route,
    watchdog: Watchdog,
}

/// A [`ProviderSuite`] as a fuzz target: see [`ProviderSuite::fuzzer`].
///
/// Watchdogs are built on first use and kept between inputs (a runtime per
/// input would cost most of the time), one per route.
pub struct SuiteFuzzer {
    suite: ProviderSuite,
    watchdogs: HashMap<usize, RouteRig>,
    stats: FuzzStats,
    /// Cases run on the calling thread, without a deadline
    /// ([`SuiteFuzzer::inline`]).
    inline: bool,
}

impl fmt::Debug for SuiteFuzzer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SuiteFuzzer")
            .field("suite", &self.suite)
            .field("stats", &self.stats)
            .field("inline", &self.inline)
            .finish_non_exhaustive()
    }
}

impl ProviderSuite {
    /// This suite as a fuzz target: a vendor's
    /// `fuzz/fuzz_targets/transfer_contract.rs` is a few lines around
    /// [`SuiteFuzzer::run`] (docs/fuzzing.md shows them).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let mut fuzzer = ProviderSuite::new("host-copy", Level::V1)
    ///     .route("host", Route::host_to_host, |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>))
    ///     .fuzzer();
    /// // Any bytes decode into a route and cases; a correct provider passes.
    /// for input in [&b""[..], b"\x01\x02\x03\x04", b"fuzz me, a little longer input"] {
    ///     fuzzer.run(input).unwrap();
    /// }
    /// assert!(fuzzer.stats().cases >= 3);
    /// ```
    pub fn fuzzer(self) -> SuiteFuzzer {
        SuiteFuzzer {
            suite: self,
            watchdogs: HashMap::new(),
            stats: FuzzStats::default(),
            inline: false,
        }
    }
}

impl SuiteFuzzer {
    /// Run the cases on the calling thread (libFuzzer's), without the
    /// suite's deadline ([`Watchdog::inline`]), instead of handing each
    /// one to a worker thread under the deadline and back: that hand-off
    /// is a large part of a fuzz input's time (docs/performance.md,
    /// *Fuzzing*). A provider that hangs is then libFuzzer's to catch:
    /// run with `-timeout=<seconds>` (its default is 1,200), and its
    /// timeout file replays through a fuzzer without `inline`, under
    /// `cargo test`, where the deadline names the hung call. A provider's
    /// panic is caught and judged either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let mut fuzzer = ProviderSuite::new("host-copy", Level::V1)
    ///     .route("host", Route::host_to_host, |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>))
    ///     .fuzzer()
    ///     .inline();
    /// fuzzer.run(b"\x01\x02\x03\x04").unwrap();
    /// assert!(fuzzer.stats().cases >= 1);
    /// ```
    #[must_use]
    pub fn inline(mut self) -> Self {
        self.inline = true;
        self.watchdogs.clear();
        self
    }

    /// What the fuzzer has run so far.
    pub fn stats(&self) -> FuzzStats {
        self.stats
    }

    /// Decode `data` into one of the suite's routes and up to
    /// [`MAX_FUZZ_CALLS`] cases, run them in order on that route's watchdog, and
    /// judge each: inside the declared capabilities by every rule of the
    /// suite's level, just outside them by `capability-honesty`. A route
    /// whose device is not here is skipped (counted in
    /// [`FuzzStats::unavailable`]).
    ///
    /// # Errors
    ///
    /// [`FuzzFailure::Broke`] for the first call that broke a rule, with
    /// the case and the calls before it; [`FuzzFailure::Setup`] when the
    /// route or provider cannot be built or a case cannot be run.
    pub fn run(&mut self, data: &[u8]) -> Result<(), FuzzFailure> {
        let (index, recipes) = self.decode(data)?;
        let route_name = self.suite.routes[index].name.clone();
        let setup = |message: String| FuzzFailure::Setup {
            route: route_name.clone(),
            message,
        };
        if !self.ensure_watchdog(index, &setup)? {
            return Ok(());
        }
        let Some(RouteRig { route, watchdog }) = self.watchdogs.get_mut(&index) else {
            return Err(setup("the watchdog vanished".to_owned()));
        };
        self.stats.inputs += 1;
        let capabilities = self.suite.routes[index]
            .capabilities
            .as_ref()
            .unwrap_or(&self.suite.capabilities);
        for (call, recipe) in recipes.iter().enumerate() {
            let Some(judgement) = judge_call(watchdog, route, capabilities, recipe, &setup)? else {
                self.stats.unavailable += 1;
                continue;
            };
            self.stats.cases += 1;
            let violations: Vec<Violation> = judgement
                .violations()
                .iter()
                .filter(|violation| self.suite.level.includes(violation.rule))
                .cloned()
                .collect();
            if !violations.is_empty() {
                return Err(FuzzFailure::Broke {
                    provider: self.suite.name.clone(),
                    route: route_name,
                    call,
                    // Written only for a failure: the JSON of every
                    // input's recipes was a few per cent of its time.
                    calls: recipes.iter().map(Recipe::to_json).collect(),
                    violations,
                    cargo_test: self.suite.cargo_test().into(),
                });
            }
        }
        Ok(())
    }

    /// The route index and the cases `data` decodes into; a
    /// [`FuzzFailure::Setup`] when the suite declares no route or the
    /// input does not decode into cases.
    fn decode(&self, data: &[u8]) -> Result<(usize, Vec<Recipe>), FuzzFailure> {
        if self.suite.routes.is_empty() {
            return Err(FuzzFailure::Setup {
                route: "?".to_owned(),
                message: format!(
                    "provider `{}` declares no route; add one with ProviderSuite::route",
                    self.suite.name
                ),
            });
        }
        let mut input = Unstructured::new(data);
        let index = input.choose_index(self.suite.routes.len()).unwrap_or(0);
        let calls = input.int_in_range(1..=MAX_FUZZ_CALLS).unwrap_or(1);
        let recipes: Vec<Recipe> = (0..calls)
            .map(|_| Recipe::arbitrary(&mut input))
            .collect::<Result<_, _>>()
            .map_err(|error| FuzzFailure::Setup {
                route: self.suite.routes[index].name.clone(),
                message: format!("the input did not decode into cases: {error}"),
            })?;
        Ok((index, recipes))
    }

    /// Builds the watchdog of route `index` unless it is built already:
    /// `Ok(false)` when the route's device is not here (counted in
    /// [`FuzzStats::unavailable`]), `setup`'s error when it cannot be built.
    fn ensure_watchdog(
        &mut self,
        index: usize,
        setup: &impl Fn(String) -> FuzzFailure,
    ) -> Result<bool, FuzzFailure> {
        if !self.watchdogs.contains_key(&index) {
            match self.build(index) {
                Ok(watchdog) => {
                    self.watchdogs.insert(index, watchdog);
                }
                Err(skip) if skip.is_skip() => {
                    self.stats.unavailable += 1;
                    return Ok(false);
                }
                Err(error) => return Err(setup(error.to_string())),
            }
        }
        Ok(true)
    }

    /// The watchdog of route `index`: the route (gated), its provider, and a
    /// watchdog with the suite's deadline (or none, inline).
    fn build(&self, index: usize) -> Result<RouteRig, HarnessError> {
        let declared = &self.suite.routes[index];
        let route = (declared.route)()?.counting_memory(self.suite.level.counts_memory());
        route.gate()?;
        let provider: Arc<dyn TransferProvider> =
            (declared.provider)(&route).map_err(|source| HarnessError::Adapter {
                context: format!("building the provider for route `{}`", declared.name),
                source,
            })?;
        let watchdog = if self.inline {
            Watchdog::inline(route.clone(), provider)?
        } else {
            Watchdog::new(route.clone(), provider, self.suite.deadline)?
        };
        Ok(RouteRig { route, watchdog })
    }
}

/// Runs one decoded call on `watchdog` and judges it: a case just outside
/// `capabilities` alone, by `capability-honesty`; one inside with those of
/// its inputs inside them too, by every rule. `Ok(None)` for a case the
/// route cannot run here; `setup`'s error when it cannot be run at all.
fn judge_call(
    watchdog: &mut Watchdog,
    route: &Route,
    capabilities: &Capabilities,
    recipe: &Recipe,
    setup: &impl Fn(String) -> FuzzFailure,
) -> Result<Option<Judgement>, FuzzFailure> {
    let single = recipe.clone().moved_with(Vec::new());
    let outside =
        OutsideCase::of(single, capabilities).map_err(|error| setup(error.to_string()))?;
    // A case just outside the capabilities runs alone; one inside
    // moves in one run with those of its inputs inside them too.
    let cases: Vec<Case> = recipe
        .cases()
        .map_err(|error| setup(error.to_string()))?
        .into_iter()
        .enumerate()
        .filter(|(index, case)| *index == 0 || (outside.is_none() && capabilities.admits(case)))
        .map(|(_, case)| case)
        .collect();
    let judged_as = match &outside {
        Some(outside) => JudgedAs::Outside(outside),
        None => JudgedAs::Inside,
    };
    let runs = run_cases(watchdog, route, &cases, judged_as, None);
    match merged(&cases, runs) {
        Ok((judgement, _)) => Ok(Some(judgement)),
        // A case the route cannot run here (a layout its source
        // does not stage): skipped, never a pass.
        Err(skip) if skip.is_skip() => Ok(None),
        Err(error) => Err(setup(error.to_string())),
    }
}
