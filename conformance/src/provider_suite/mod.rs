//! `ProviderSuite`: what a provider crate declares about its provider (the
//! routes it serves, its capabilities, a profile and a pinned level), and
//! the run that judges it on the fixed cases and size classes, the
//! generated cases, concurrent and repeated calls, and the cases just
//! outside its capabilities.
//!
//! This file holds the declaration (the builder) and the rule checks; the
//! run itself (`run`), the generated row, the pressure rows, the verdicts,
//! the shared run and the fuzzer have files of their own.

use std::sync::Arc;
use std::time::Duration;

use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::strategy::{Capabilities, Profile};
use tenferro_transfer_harness::{
    DEFAULT_DEADLINE, HarnessError, Route, RouteDeadline, Rule, Settings,
};

mod fuzz;
mod generated_row;
mod pressure_rows;
mod run;
mod shared_run;
mod verdict;

pub use fuzz::{FuzzFailure, FuzzStats, MAX_FUZZ_CALLS, SuiteFuzzer};
pub use shared_run::{NEXTEST_RUN_ID_ENV, REPORT_FILE_ENV};
pub use tenferro_transfer_harness::settings::NO_SKIP_ENV;
pub use verdict::RuleVerdict;

use crate::Level;
use crate::report::Report;
use verdict::check_rule;

/// What the phases of one route's run share.
struct RouteRun<'a> {
    /// The route's declared name.
    name: &'a str,
    route: &'a Route,
    provider: &'a Arc<dyn TransferProvider>,
    /// The route's provider factory, for a fresh provider.
    factory: &'a ProviderFactory,
    profile: Profile,
    /// The seed of the generated and the concurrent cases.
    seed: u64,
    /// The route's declared capabilities.
    capabilities: &'a Capabilities,
    /// The route's deadline, shared by every phase: once the provider has
    /// hung, later cases do not each wait a whole deadline.
    deadline: &'a RouteDeadline,
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
/// let suite = ProviderSuite::new("my-copy", Level::V1)
///     .route("upload", Route::host_to_host, |_route| {
///         Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
///     })
///     .capabilities(Capabilities::all().dtypes([DType::F32]).max_elements(64))
///     .profile(Profile::Quick)
///     .seed(7);
/// let report = suite.run();
/// // HostProvider serves every dtype, so declaring only F32 is dishonest.
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
    /// let suite = ProviderSuite::new("host", Level::V1)
    ///     .route("upload", Route::host_to_host, |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>))
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
        // Read once; every route's rule tests fail on settings the suite
        // does not know, naming the setting.
        self.run_routes(
            Settings::current()
                .map(|settings| self.run_settings(settings, settings.replay.as_deref())),
        )
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
    /// let suite = ProviderSuite::new("host-copy", Level::V1).route("upload", Route::host_to_host, |_| {
    ///     Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
    /// });
    /// let report = suite.replay(r#"{"dtype":"C64","shape":[1,1],"layout":{"kind":"owned"},"seed":0,"specials":0}"#);
    /// assert_eq!((report.summary().passed, report.summary().failed), (1, 0));
    /// ```
    pub fn replay(&self, recipe: &str) -> Report {
        self.run_routes(
            Settings::current().map(|settings| self.run_settings(settings, Some(recipe))),
        )
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
                if Settings::current().is_ok_and(|settings| settings.no_skip) {
                    panic!("{text} ({NO_SKIP_ENV}=1 turns skips into failures)");
                }
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{text}");
            }
            RuleVerdict::Fail(text) => panic!("{text}"),
        }
    }
}
