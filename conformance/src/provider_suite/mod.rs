//! `ProviderSuite`: what a provider crate declares about its provider (the
//! routes it serves, its capabilities, a profile and a pinned level), and
//! the run that judges it on the fixed cases and size classes, the
//! generated cases, concurrent and repeated calls, and the cases just
//! outside its capabilities.
//!
//! Past 600 lines because the builder and `run_route` read together (every
//! declaration is consumed there); the generated row, the pressure rows,
//! the verdicts, the shared run and the fuzzer have files of their own.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{
    Capabilities, PROFILE_ENV, Profile, Recipe, ValueSource,
};
use tenferro_transfer_harness::{
    Case, DEFAULT_DEADLINE, HarnessError, Judgement, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS,
    MAX_EXCEEDED_RANK, OutsideCase, Route, Rule, Unchecked, Violation, Watchdog, panic_message,
};

mod fuzz;
mod generated_row;
mod pressure_rows;
mod shared_run;
mod verdict;

pub use fuzz::{FuzzFailure, FuzzStats, MAX_FUZZ_CALLS, SuiteFuzzer};
pub use shared_run::{NEXTEST_RUN_ID_ENV, REPORT_FILE_ENV};
pub use verdict::{NO_SKIP_ENV, RuleVerdict};

use crate::generated::{GeneratedOptions, REPLAY_ENV, drawn_seed};
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{Report, RowHead};
use crate::runner::{CaseRun, JudgedAs, run_case};
use crate::{LARGE_ELEMENTS, Level, fixed_shapes, size_classes};
use verdict::check_rule;

/// What the phases of one route's run share.
struct RouteRun<'a> {
    /// The route's declared name.
    name: &'a str,
    route: &'a Route,
    provider: &'a Arc<dyn TransferProvider>,
    profile: Profile,
    /// The seed of the generated and the concurrent cases.
    seed: u64,
    /// Why `capability-honesty` is not checked on a case inside the
    /// capabilities.
    honesty_unchecked: &'a str,
    /// The route's declared capabilities.
    capabilities: &'a Capabilities,
}

/// The error a provider factory may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

type RouteFactory = Box<dyn Fn() -> Result<Route, HarnessError> + Send + Sync>;
type ProviderFactory =
    Box<dyn Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> + Send + Sync>;

/// One route a provider declares it serves.
struct DeclaredRoute {
    name: String,
    route: RouteFactory,
    provider: ProviderFactory,
    /// Capabilities of this route alone; `None` uses the suite's.
    capabilities: Option<Capabilities>,
}

/// A provider under test, as its crate declares it.
///
/// Declaring never fails: a route or provider that cannot be built is a
/// failed `setup` row of the report, so [`ProviderSuite::run`] always
/// returns a [`Report`] and never panics.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_conformance::prelude::*;
///
/// let suite = ProviderSuite::new("my-upload", Level::V1)
///     .route("upload", Route::host_to_sim, |route| {
///         let Some(device) = route.destination().downcast::<SimDevice>() else {
///             return Err("upload serves a simulated destination".into());
///         };
///         Ok(Arc::new(SimUpload::new(device.clone())) as Arc<dyn TransferProvider>)
///     })
///     .capabilities(Capabilities::all().dtypes([DType::F32]).max_elements(64))
///     .profile(Profile::Quick)
///     .seed(7);
/// let report = suite.run();
/// // SimUpload serves every dtype, so declaring only F32 is dishonest.
/// assert_eq!(
///     suite.check(&report, "upload", Rule::CapabilityHonesty).verdict_name(),
///     "fail"
/// );
/// assert!(suite.check(&report, "upload", Rule::Values).is_pass());
/// ```
pub struct ProviderSuite {
    name: String,
    level: Level,
    profile: Profile,
    capabilities: Capabilities,
    deadline: Duration,
    seed: Option<u64>,
    routes: Vec<DeclaredRoute>,
    /// The package and test target of the macro's tests, for replay lines.
    invocation: Option<(String, String)>,
    /// What replay lines add to `cargo test`.
    replay_args: String,
    /// Mistakes in the declaration (a `capabilities_for` of no route),
    /// reported as failed setup rows of every route.
    declaration_errors: Vec<String>,
    /// Where proptest keeps the seeds of failing generated cases.
    regressions: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for ProviderSuite {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ProviderSuite")
            .field("name", &self.name)
            .field("level", &self.level)
            .field("profile", &self.profile)
            .field("capabilities", &self.capabilities)
            .field("routes", &self.route_names())
            .finish_non_exhaustive()
    }
}

impl ProviderSuite {
    /// A provider called `name`, pinned to `level`, with every preset dtype,
    /// views and any size declared, the `quick` profile and the default
    /// deadline. Add its routes with [`ProviderSuite::route`].
    pub fn new(name: impl Into<String>, level: Level) -> Self {
        Self {
            name: name.into(),
            level,
            profile: Profile::Quick,
            capabilities: Capabilities::all(),
            deadline: DEFAULT_DEADLINE,
            seed: None,
            routes: Vec::new(),
            invocation: None,
            replay_args: String::new(),
            declaration_errors: Vec::new(),
            regressions: None,
        }
    }

    /// Declare a route the provider serves: `name` (a Rust identifier: the
    /// macro names the route's tests after it), how to build the route, and
    /// how to build the provider for it.
    pub fn route<R, P>(mut self, name: &str, route: R, provider: P) -> Self
    where
        R: Fn() -> Result<Route, HarnessError> + Send + Sync + 'static,
        P: Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> + Send + Sync + 'static,
    {
        self.routes.push(DeclaredRoute {
            name: name.to_owned(),
            route: Box::new(route),
            provider: Box::new(provider),
            capabilities: None,
        });
        self
    }

    /// Declare what the provider serves on every route that does not
    /// declare its own ([`capabilities_for`](Self::capabilities_for)).
    /// Cases inside are judged by every rule; cases just outside each
    /// declared limit must be refused with a typed `Err`
    /// (`capability-honesty`).
    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Declare what the provider serves on the route called `route` (an
    /// upload may take views that its download cannot produce, say). A
    /// name that no route declared so far carries is a failure of every
    /// rule test, naming it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let suite = ProviderSuite::new("sim", Level::V1)
    ///     .route("upload", Route::host_to_sim, |route| {
    ///         let Some(device) = route.destination().downcast::<SimDevice>() else { return Err("no device".into()) };
    ///         Ok(Arc::new(SimUpload::new(device.clone())) as Arc<dyn TransferProvider>)
    ///     })
    ///     .capabilities(Capabilities::all().max_elements(4096))
    ///     .capabilities_for("upload", Capabilities::all().views(ViewKinds::NONE));
    /// assert_eq!(suite.route_capabilities("upload").unwrap().views, ViewKinds::NONE);
    /// ```
    pub fn capabilities_for(mut self, route: &str, capabilities: Capabilities) -> Self {
        match self.routes.iter_mut().find(|declared| declared.name == route) {
            Some(declared) => declared.capabilities = Some(capabilities),
            None => self.declaration_errors.push(format!(
                "capabilities_for names route `{route}`, which is not declared before it; declared routes: {}",
                self.route_names().join(", ")
            )),
        }
        self
    }

    /// The generated-case profile (`quick` by default);
    /// `TRANSFER_CONFORMANCE_PROFILE` overrides it at run time.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// The per-case deadline.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Fix the generator's seed (drawn and reported when unset);
    /// `TRANSFER_CONFORMANCE_SEED` overrides it at run time.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pinned level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The capabilities declared for every route without its own.
    pub fn declared_capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// The capabilities the route called `route` is judged by: its own,
    /// else the suite's; `None` for a route not declared.
    pub fn route_capabilities(&self, route: &str) -> Option<&Capabilities> {
        self.routes
            .iter()
            .find(|declared| declared.name == route)
            .map(|declared| declared.capabilities.as_ref().unwrap_or(&self.capabilities))
    }

    /// The declared route names, in declaration order.
    pub fn route_names(&self) -> Vec<&str> {
        self.routes
            .iter()
            .map(|route| route.name.as_str())
            .collect()
    }

    /// Run every declared route: inside the capabilities, the fixed cases,
    /// the size classes (above 1 Mi elements, a large view, every rank,
    /// every special float value in both signs), the generated cases and
    /// the concurrent and repeated calls (one provider instance, a runtime
    /// per thread); and the cases just outside the capabilities. With
    /// `TRANSFER_CONFORMANCE_REPLAY` set, runs only that recipe.
    ///
    /// Never panics: a route, provider or case that cannot be set up is a
    /// failed `setup` row, a provider's panic or hang a violation.
    pub fn run(&self) -> Report {
        match std::env::var(REPLAY_ENV) {
            Ok(json) => self.replay(&json),
            Err(_) => self.run_routes(None),
        }
    }

    /// Run only the case of `recipe` (one line of JSON, as a failure
    /// prints it) on every declared route, judged inside or outside the
    /// capabilities as it falls: what `TRANSFER_CONFORMANCE_REPLAY` does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let suite = ProviderSuite::new("sim-upload", Level::V1).route("upload", Route::host_to_sim, |route| {
    ///     let Some(device) = route.destination().downcast::<SimDevice>() else { return Err("no device".into()) };
    ///     Ok(Arc::new(SimUpload::new(device.clone())) as Arc<dyn TransferProvider>)
    /// });
    /// let report = suite.replay(r#"{"dtype":"C64","shape":[1,1],"layout":{"kind":"owned"},"seed":0,"specials":0}"#);
    /// assert_eq!((report.summary.passed, report.summary.failed), (1, 0));
    /// ```
    pub fn replay(&self, recipe: &str) -> Report {
        self.run_routes(Some(recipe))
    }

    fn run_routes(&self, replay: Option<&str>) -> Report {
        let mut records = Vec::new();
        if self.routes.is_empty() {
            records.push(self.setup_record(
                "?",
                String::new(),
                format!(
                    "provider `{}` declares no route; add one with ProviderSuite::route",
                    self.name
                ),
            ));
        }
        for declared in &self.routes {
            for error in &self.declaration_errors {
                records.push(self.setup_record(&declared.name, String::new(), error.clone()));
            }
            let route_records = catch_unwind(AssertUnwindSafe(|| self.run_route(declared, replay)))
                .unwrap_or_else(|payload| {
                    vec![self.setup_record(
                        &declared.name,
                        String::new(),
                        format!(
                            "the suite itself panicked (a harness bug; please report it): {}",
                            panic_message(payload.as_ref())
                        ),
                    )]
                });
            records.extend(route_records);
        }
        Report::from_records(records)
    }

    /// A record of route `route` (labelled `label`) that could not be set
    /// up: it fails every rule test of the route with `message`.
    fn setup_record(&self, route: &str, label: String, message: String) -> CaseRecord {
        CaseRecord::new(
            route,
            Origin::Route,
            self.head(route, label),
            CaseOutcome::NotSetUp { message },
        )
    }

    fn head(&self, route: &str, label: String) -> RowHead {
        RowHead {
            provider: self.name.clone(),
            route: if label.is_empty() {
                route.to_owned()
            } else {
                format!("{route} ({label})")
            },
            dtype: "*".to_owned(),
            shape: Vec::new(),
            layout: String::new(),
        }
    }

    fn case_head(&self, route: &str, label: &str, case: &Case) -> RowHead {
        RowHead {
            dtype: format!("{:?}", case.dtype()),
            shape: case.shape().to_vec(),
            layout: case.layout_label(),
            ..self.head(route, label.to_owned())
        }
    }

    /// The profile in force: the environment's, else the declared one.
    fn profile_in_force(&self) -> Result<Profile, HarnessError> {
        match std::env::var(PROFILE_ENV) {
            Ok(_) => Profile::from_env(),
            Err(_) => Ok(self.profile),
        }
    }

    fn run_route(&self, declared: &DeclaredRoute, replay: Option<&str>) -> Vec<CaseRecord> {
        let name = declared.name.as_str();
        let setup = |label: String, message: String| vec![self.setup_record(name, label, message)];
        if !is_identifier(name) {
            return setup(
                String::new(),
                format!(
                    "route name `{name}` is not a Rust identifier (the macro names tests after it)"
                ),
            );
        }
        let route = match guarded(|| {
            (declared.route)().and_then(|route| {
                route.gate()?;
                Ok(route)
            })
        }) {
            Ok(Ok(route)) => route,
            // A device that is not here (no GPU, no driver, a vendor's
            // device the adapter says is absent): every rule of the route
            // is a skip with the reason, as in the CLI; where the user
            // requires the device, the error is a failure instead.
            Ok(Err(HarnessError::Unavailable { reason })) => {
                return vec![CaseRecord::new(
                    name,
                    Origin::Route,
                    self.head(name, String::new()),
                    CaseOutcome::Skipped {
                        reason: format!("the route cannot run here: {reason}"),
                    },
                )];
            }
            Ok(Err(error)) => {
                return setup(
                    String::new(),
                    format!("the route could not be built: {error}"),
                );
            }
            Err(panic) => {
                return setup(
                    String::new(),
                    format!("building the route panicked: {panic}"),
                );
            }
        };
        let label = route.label();
        let provider = match guarded(|| (declared.provider)(&route)) {
            Ok(Ok(provider)) => provider,
            Ok(Err(error)) => {
                return setup(label, format!("the provider could not be built: {error}"));
            }
            Err(panic) => return setup(label, format!("building the provider panicked: {panic}")),
        };
        let profile = match self.profile_in_force() {
            Ok(profile) => profile,
            Err(error) => return setup(label, error.to_string()),
        };
        let mut rig = match Watchdog::new(route.clone(), Arc::clone(&provider), self.deadline) {
            Ok(rig) => rig,
            Err(error) => return setup(label, format!("the rig could not be built: {error}")),
        };
        let capabilities = declared.capabilities.as_ref().unwrap_or(&self.capabilities);
        if capabilities.dtypes.is_empty() {
            return setup(
                label,
                "the declared capabilities name no dtype, so no case can be drawn; declare at least one with Capabilities::dtypes".to_owned(),
            );
        }
        let outside = match capabilities.outside_cases() {
            Ok(outside) => outside,
            Err(error) => return setup(label, error.to_string()),
        };
        let honesty_unchecked = if outside.is_empty() {
            format!(
                "the declared capabilities cover every case the suite can draw (every preset dtype, every kind of view, a maximum rank of at least {MAX_EXCEEDED_RANK}, {MAX_EXCEEDED_ELEMENTS} elements and {MAX_EXCEEDED_BYTES} bytes), so there is nothing to refuse"
            )
        } else {
            "the case is inside the declared capabilities".to_owned()
        };
        if let Some(json) = replay {
            let parsed = json.parse::<Recipe>().and_then(|recipe| {
                let case = recipe.case()?;
                let outside = OutsideCase::of(recipe.clone(), capabilities)?;
                Ok((recipe, case, outside))
            });
            let row = match parsed {
                Ok((recipe, case, outside)) => {
                    let head = self.case_head(name, &label, &case);
                    let (judged_as, honesty) = match &outside {
                        Some(outside) => (JudgedAs::Outside(outside), None),
                        None => (JudgedAs::Inside, Some(honesty_unchecked.as_str())),
                    };
                    let run = run_case(&mut rig, &route, &case, judged_as, None);
                    self.case_record(name, Origin::Replayed, head, run, honesty)
                        .with_replay(&recipe)
                }
                Err(error) => self.setup_record(
                    name,
                    label.clone(),
                    format!("the replayed recipe is not valid: {error}"),
                ),
            };
            return vec![row];
        }
        let seed = match (GeneratedOptions {
            seed: self.seed,
            ..GeneratedOptions::new(profile)
        })
        .with_env_seed()
        {
            Ok(options) => options.seed.unwrap_or_else(drawn_seed),
            Err(error) => return setup(label, error.to_string()),
        };
        let mut rows = Vec::new();
        for recipe in fixed_recipes(capabilities, profile) {
            let case = match recipe.case() {
                Ok(case) if capabilities.admits(&case) => case,
                Ok(_) => continue,
                Err(error) => {
                    rows.push(CaseRecord::new(
                        name,
                        Origin::Fixed,
                        self.head(name, label.clone()),
                        CaseOutcome::NotSetUp {
                            message: error.to_string(),
                        },
                    ));
                    continue;
                }
            };
            let head = self.case_head(name, &label, &case);
            let run = run_case(&mut rig, &route, &case, JudgedAs::Inside, None);
            rows.push(
                self.case_record(name, Origin::Fixed, head, run, Some(&honesty_unchecked))
                    .with_replay(&recipe),
            );
        }
        let run = RouteRun {
            name,
            route: &route,
            provider: &provider,
            profile,
            seed,
            honesty_unchecked: &honesty_unchecked,
            capabilities,
        };
        rows.push(self.generated_row(&run));
        rows.extend(self.pressure_rows(&run));
        for outside in &outside {
            let head = RowHead {
                layout: format!("{} [outside: {}]", outside.case.layout_label(), outside.why),
                ..self.case_head(name, &label, &outside.case)
            };
            let run = run_case(
                &mut rig,
                &route,
                &outside.case,
                JudgedAs::Outside(outside),
                None,
            );
            let origin = Origin::Outside {
                why: outside.why.clone(),
            };
            rows.push(
                self.case_record(name, origin, head, run, None)
                    .with_replay(&outside.recipe),
            );
        }
        rows
    }

    /// `violations` split into those of rules of the pinned level, and the
    /// rules outside it, reported as not checked.
    fn within_level(&self, violations: Vec<Violation>) -> (Vec<Violation>, Vec<Unchecked>) {
        let level = self.level;
        let (kept, dropped): (Vec<_>, Vec<_>) = violations
            .into_iter()
            .partition(|violation| level.includes(violation.rule));
        let unchecked = dropped
            .into_iter()
            .map(|violation| Unchecked {
                rule: violation.rule,
                reason: format!("not part of the pinned level {level}"),
            })
            .collect();
        (kept, unchecked)
    }

    /// The record of one run of the runner: a judged case as
    /// [`judged_record`](Self::judged_record) makes it, a skip with the
    /// reason where the route cannot run the case here (a layout the device
    /// does not stage, say), a failed setup where the harness could not
    /// run it.
    fn case_record(
        &self,
        route: &str,
        origin: Origin,
        head: RowHead,
        run: CaseRun,
        honesty_unchecked: Option<&str>,
    ) -> CaseRecord {
        match run {
            CaseRun::Judged(judgement, _) => {
                self.judged_record(route, origin, head, judgement, honesty_unchecked)
            }
            CaseRun::Skipped(reason) => {
                CaseRecord::new(route, origin, head, CaseOutcome::Skipped { reason })
            }
            CaseRun::NotRun(error) => CaseRecord::new(
                route,
                origin,
                head,
                CaseOutcome::NotSetUp {
                    message: error.to_string(),
                },
            ),
        }
    }

    /// A record of a judgement, with the rules outside the pinned level
    /// reported as not checked, and `capability-honesty` marked unchecked
    /// (for `honesty_unchecked`'s reason) on a case inside the capabilities.
    fn judged_record(
        &self,
        route: &str,
        origin: Origin,
        head: RowHead,
        mut judgement: Judgement,
        honesty_unchecked: Option<&str>,
    ) -> CaseRecord {
        let (kept, unchecked) = self.within_level(std::mem::take(&mut judgement.violations));
        judgement.violations = kept;
        judgement.unchecked.extend(unchecked);
        if let Some(reason) = honesty_unchecked
            && !judgement
                .unchecked
                .iter()
                .any(|item| item.rule == Rule::CapabilityHonesty)
        {
            judgement.unchecked.push(Unchecked {
                rule: Rule::CapabilityHonesty,
                reason: reason.to_owned(),
            });
        }
        CaseRecord::judged(route, origin, head, judgement)
    }

    /// The verdict of `rule` on the route called `route` in `report` (a
    /// report of this suite's [`run`](Self::run)): what one macro-generated
    /// `#[test]` asserts.
    pub fn check(&self, report: &Report, route: &str, rule: Rule) -> RuleVerdict {
        if !self.routes.iter().any(|declared| declared.name == route) {
            return RuleVerdict::Fail(format!(
                "provider `{}` declares no route `{route}`; declared routes: {}",
                self.name,
                self.route_names().join(", ")
            ));
        }
        if !self.level.includes(rule) {
            return RuleVerdict::Skip(format!(
                "rule {rule} is not part of the pinned level {}",
                self.level
            ));
        }
        check_rule(report, route, rule, self.level, &self.cargo_test())
    }

    /// Record where the suite's tests live, so that its replay lines name
    /// them: `cargo test -p <package> --test <target>`, which runs as
    /// pasted at the root of a workspace too. The
    /// [`conformance_tests!`](crate::conformance_tests) macro calls it with
    /// the caller's `CARGO_PKG_NAME` and `module_path!()`.
    #[doc(hidden)]
    pub fn invoked_from(mut self, package: &str, module_path: &str) -> Self {
        let target = module_path.split("::").next().unwrap_or(module_path);
        self.invocation = Some((package.to_owned(), target.to_owned()));
        self
    }

    /// Keep the seeds of failing generated cases in `dir`, one file per
    /// test target and route (`<dir>/<target>-<route>.txt`), and replay
    /// them first on the next run: proptest's regression files. The
    /// [`conformance_tests!`](crate::conformance_tests) macro keeps them in
    /// `proptest-regressions/` of your crate; commit them, as proptest
    /// advises, so that CI replays them too.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let suite = ProviderSuite::new("p", Level::V1)
    ///     .invoked_from("my-crate", "conformance")
    ///     .regressions_dir("proptest-regressions");
    /// assert_eq!(
    ///     suite.regressions_file("upload").unwrap(),
    ///     std::path::Path::new("proptest-regressions/conformance-upload.txt")
    /// );
    /// ```
    pub fn regressions_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.regressions = Some(dir.into());
        self
    }

    /// [`regressions_dir`](Self::regressions_dir), unless one is set: what
    /// the macro calls with `<your crate>/proptest-regressions`.
    #[doc(hidden)]
    pub fn default_regressions_dir(self, dir: &str) -> Self {
        match self.regressions {
            Some(_) => self,
            None => self.regressions_dir(dir),
        }
    }

    /// The file where the generated cases of route `route` keep their
    /// failing seeds, if a [`regressions_dir`](Self::regressions_dir) is
    /// set.
    pub fn regressions_file(&self, route: &str) -> Option<std::path::PathBuf> {
        let dir = self.regressions.as_ref()?;
        Some(match &self.invocation {
            Some((_, target)) => dir.join(format!("{target}-{route}.txt")),
            None => dir.join(format!("{route}.txt")),
        })
    }

    /// Arguments the replay lines add to `cargo test` (for example
    /// `--features my-feature` when the suite's tests need a feature: the
    /// macro can name the package and the test target, not the features
    /// the caller built with).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::prelude::*;
    ///
    /// let suite = ProviderSuite::new("p", Level::V1)
    ///     .invoked_from("my-crate", "conformance")
    ///     .replay_args("--features gpu");
    /// assert_eq!(suite.cargo_test(), "cargo test -p my-crate --test conformance --features gpu");
    /// ```
    pub fn replay_args(mut self, args: &str) -> Self {
        self.replay_args = args.trim().to_owned();
        self
    }

    /// The `cargo test` command that runs this suite's tests: with the
    /// package and test target when the macro recorded them, and the
    /// [`replay_args`](ProviderSuite::replay_args).
    pub fn cargo_test(&self) -> String {
        let mut command = match &self.invocation {
            Some((package, target)) => format!("cargo test -p {package} --test {target}"),
            None => "cargo test".to_owned(),
        };
        if !self.replay_args.is_empty() {
            command.push(' ');
            command.push_str(&self.replay_args);
        }
        command
    }

    /// Assert `rule` on `route`: panics with the failing cases on a fail;
    /// on a skip, writes the reason to stderr past the test harness's
    /// capture (so `cargo test` shows it), and panics instead when
    /// `TRANSFER_CONFORMANCE_NO_SKIP=1`. What the macro's tests call.
    #[doc(hidden)]
    #[track_caller]
    pub fn assert_rule(&self, report: &Report, route: &str, rule: Rule) {
        match self.check(report, route, rule) {
            RuleVerdict::Pass { .. } => {}
            RuleVerdict::Skip(reason) => {
                // Named as the test is named (`upload::no_leak`).
                let text = format!(
                    "{}::{} skipped: {reason}",
                    route,
                    rule.id().replace('-', "_")
                );
                if std::env::var(NO_SKIP_ENV).is_ok_and(|value| value == "1") {
                    panic!("{text} ({NO_SKIP_ENV}=1 turns skips into failures)");
                }
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{text}");
            }
            RuleVerdict::Fail(text) => panic!("{text}"),
        }
    }
}

/// The recipes of the fixed cases for every dtype `capabilities` declare:
/// the fixed shapes (with the million-element one outside the `quick`
/// profile), the size classes every profile reaches, and for a float dtype
/// every special value in both signs. The run keeps those inside the
/// capabilities; each is replayed alone from its recipe.
fn fixed_recipes(capabilities: &Capabilities, profile: Profile) -> Vec<Recipe> {
    let include_large = profile != Profile::Quick && capabilities.max_elements >= LARGE_ELEMENTS;
    let mut shapes = fixed_shapes(include_large);
    shapes.extend(size_classes(capabilities));
    let mut recipes = Vec::new();
    for dtype in PRESET_DTYPES {
        if !capabilities.dtypes.contains(&dtype) {
            continue;
        }
        for shape in &shapes {
            recipes.push(Recipe::fixed(
                dtype,
                shape.shape.clone(),
                shape.layout.clone(),
                ValueSource::Patterned,
            ));
        }
        if let Ok(Some(case)) = Case::special_values(dtype) {
            recipes.push(Recipe::fixed(
                dtype,
                case.shape().to_vec(),
                case.layout().clone(),
                ValueSource::SpecialValues,
            ));
        }
    }
    recipes
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Run `f`, turning a panic into its message.
fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|payload: Box<dyn Any + Send>| panic_message(payload.as_ref()))
}
