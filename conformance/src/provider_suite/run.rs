//! The run of a `ProviderSuite`: every declared route, built and gated,
//! its fixed cases and size classes, the generated run, the concurrent
//! calls and the cases just outside its capabilities, each through the
//! runner (`crate::runner`) into a typed record (`crate::record`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::settings::ROUTES_ENV;
use tenferro_transfer_harness::strategy::{Capabilities, Profile, Recipe, ValueSource};
use tenferro_transfer_harness::{
    Case, HarnessError, INSIDE_CAPABILITIES, Layout, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS,
    MAX_EXCEEDED_RANK, OutsideCase, RUNS_ELEMENTS, Route, RouteDeadline, Rule, Settings,
    SettingsError, Watchdog, describe_error, panic_message,
};

use super::{DeclaredRoute, ProviderFactory, ProviderSuite, RouteRun};
use crate::fixed_pass::FixedPass;
use crate::generated::drawn_seed;
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{Report, RowHead};
use crate::runner::{CaseRun, JudgedAs, into_record, replay_recipe, run_case};
use crate::{LARGE_ELEMENTS, fixed_shapes, size_classes};

/// What a route's setup produced: everything its phases take.
struct RouteSetup<'s> {
    /// The route's declared name.
    name: &'s str,
    /// The built route's label (`host->sim0`).
    label: String,
    route: Route,
    provider: Arc<dyn TransferProvider>,
    /// The route's provider factory, for a fresh provider.
    factory: &'s ProviderFactory,
    /// The profile in force (the settings', else the declared one).
    profile: Profile,
    /// Shared by every phase: once the provider has hung, later cases do
    /// not each wait a whole deadline.
    deadline: RouteDeadline,
    /// The watchdog of the fixed, state, held, replayed and outside cases.
    watchdog: Watchdog,
    /// The route's declared capabilities.
    capabilities: &'s Capabilities,
    /// The cases just outside them.
    outside: Vec<OutsideCase>,
    /// Why `capability-honesty` is not checked on a case inside them.
    honesty_unchecked: String,
}

/// What a run of the suite takes from the settings, read once at its
/// start and passed down to every route.
pub(super) struct RunSettings<'s> {
    /// The profile in force: the settings', else the declared one.
    pub(super) profile: Profile,
    /// The seed in force, where one is set: the settings', else the
    /// declared one. Without one, each route draws its own.
    pub(super) seed: Option<u64>,
    /// The recipe to replay instead of the whole run.
    pub(super) replay: Option<&'s str>,
    /// The routes to run ([`ROUTES_ENV`]); empty: every declared route.
    pub(super) routes: Vec<String>,
}

impl ProviderSuite {
    /// Run every declared route as `settings` say (read once, at the start
    /// of the run); settings the suite does not know fail the setup of
    /// every route, naming the setting.
    pub(super) fn run_routes(&self, settings: Result<RunSettings<'_>, SettingsError>) -> Report {
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
            if let Some(record) = settings
                .as_ref()
                .ok()
                .and_then(|settings| self.unselected(declared, &settings.routes))
            {
                records.push(record);
                continue;
            }
            let route_records =
                catch_unwind(AssertUnwindSafe(|| self.run_route(declared, &settings)))
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

    /// The one record of a route that [`ROUTES_ENV`] (`selected`) does not
    /// run: a skip where it selects other declared routes, a failure where
    /// it names a route the suite does not declare (a typo must not pass
    /// for a run); `None` where the route runs.
    fn unselected(&self, declared: &DeclaredRoute, selected: &[String]) -> Option<CaseRecord> {
        if selected.is_empty() {
            return None;
        }
        let names = self.route_names();
        let setting = format!("{ROUTES_ENV}={}", selected.join(","));
        let undeclared: Vec<&str> = selected
            .iter()
            .map(String::as_str)
            .filter(|name| !names.contains(name))
            .collect();
        if !undeclared.is_empty() {
            return Some(self.setup_record(
                &declared.name,
                String::new(),
                format!(
                    "{setting} names {}, which this suite does not declare (it declares {})",
                    undeclared.join(", "),
                    names.join(", ")
                ),
            ));
        }
        (!selected.contains(&declared.name)).then(|| {
            CaseRecord::new(
                &declared.name,
                Origin::Route,
                self.head(&declared.name, String::new()),
                CaseOutcome::Skipped {
                    reason: format!("not run: {setting} selects other routes"),
                },
            )
        })
    }

    /// A record of route `route` (labelled `label`) that could not be set
    /// up: it fails every rule test of the route with `message`.
    pub(super) fn setup_record(&self, route: &str, label: String, message: String) -> CaseRecord {
        CaseRecord::new(
            route,
            Origin::Route,
            self.head(route, label),
            CaseOutcome::NotSetUp { message },
        )
    }

    pub(super) fn head(&self, route: &str, label: String) -> RowHead {
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

    pub(super) fn case_head(&self, route: &str, label: &str, case: &Case) -> RowHead {
        RowHead {
            dtype: format!("{:?}", case.dtype()),
            shape: case.shape().to_vec(),
            layout: case.layout_label(),
            ..self.head(route, label.to_owned())
        }
    }

    /// What a run takes from `settings`: the profile and seed in force
    /// (the settings', else the declared ones) and the recipe to replay.
    pub(super) fn run_settings<'s>(
        &self,
        settings: &Settings,
        replay: Option<&'s str>,
    ) -> RunSettings<'s> {
        RunSettings {
            profile: settings.profile.unwrap_or(self.profile),
            seed: settings.seed.or(self.seed),
            replay,
            routes: settings.routes.clone(),
        }
    }

    /// One route's run, phase by phase: set up (route, provider, watchdog,
    /// capabilities), then either the replayed case alone, or the fixed
    /// cases, the state rows, the held pass, the generated run, the
    /// concurrent calls and the cases just outside the capabilities. A
    /// setup that fails is the route's one record.
    fn run_route(
        &self,
        declared: &DeclaredRoute,
        settings: &Result<RunSettings<'_>, SettingsError>,
    ) -> Vec<CaseRecord> {
        let name = declared.name.as_str();
        let settings = match settings {
            Ok(settings) => settings,
            Err(error) => {
                return vec![self.setup_record(name, String::new(), error.to_string())];
            }
        };
        let mut set_up = match self.set_up_route(declared, settings.profile) {
            Ok(set_up) => set_up,
            Err(record) => return vec![*record],
        };
        let mut rows = match settings.replay {
            Some(json) => vec![self.replayed_row(&mut set_up, json)],
            None => self.passes(&mut set_up, settings),
        };
        // Every row judged inside the capabilities says why honesty went
        // unchecked on this route, whichever pass made it: decided here
        // alone.
        for row in &mut rows {
            if row.outcome.why_unchecked(Rule::CapabilityHonesty) == Some(INSIDE_CAPABILITIES) {
                row.outcome
                    .explain_unchecked(Rule::CapabilityHonesty, &set_up.honesty_unchecked);
            }
        }
        rows
    }

    /// Every pass of a route that was set up: its fixed cases (with the
    /// state and held passes), the generated row, the concurrent calls and
    /// the cases just outside the capabilities.
    fn passes(&self, set_up: &mut RouteSetup<'_>, settings: &RunSettings<'_>) -> Vec<CaseRecord> {
        let name = set_up.name;
        let seed = settings.seed.unwrap_or_else(drawn_seed);
        let mut rows = self.fixed_rows(set_up);
        let run = RouteRun {
            name,
            route: &set_up.route,
            provider: &set_up.provider,
            factory: set_up.factory,
            profile: set_up.profile,
            seed,
            capabilities: set_up.capabilities,
            deadline: &set_up.deadline,
        };
        rows.push(self.generated_row(&run));
        rows.extend(self.pressure_rows(&run));
        rows.extend(self.outside_rows(set_up));
        rows
    }

    /// The route built and gated, its provider, the profile in force, the
    /// watchdog and what the capabilities leave outside; or the route's one
    /// record: a skip where a device is not here, else a failed setup.
    fn set_up_route<'s>(
        &'s self,
        declared: &'s DeclaredRoute,
        profile: Profile,
    ) -> Result<RouteSetup<'s>, Box<CaseRecord>> {
        let name = declared.name.as_str();
        let setup =
            |label: String, message: String| Box::new(self.setup_record(name, label, message));
        if !is_identifier(name) {
            return Err(setup(
                String::new(),
                format!(
                    "route name `{name}` is not a Rust identifier (the macro names tests after it)"
                ),
            ));
        }
        let route = self.built_route(declared)?;
        let label = route.label();
        let provider = match guarded(|| (declared.provider)(&route)) {
            Ok(Ok(provider)) => provider,
            Ok(Err(error)) => {
                return Err(setup(
                    label,
                    format!(
                        "the provider could not be built: {}",
                        describe_error(&*error)
                    ),
                ));
            }
            Err(panic) => {
                return Err(setup(
                    label,
                    format!("building the provider panicked: {panic}"),
                ));
            }
        };
        let deadline = RouteDeadline::new(self.deadline);
        let watchdog = Watchdog::new(route.clone(), Arc::clone(&provider), deadline.clone())
            .map_err(|error| {
                setup(
                    label.clone(),
                    format!(
                        "the watchdog could not be built: {}",
                        describe_error(&error)
                    ),
                )
            })?;
        let capabilities = declared.capabilities.as_ref().unwrap_or(&self.capabilities);
        if capabilities.dtypes.is_empty() {
            return Err(setup(
                label,
                "the declared capabilities name no dtype, so no case can be drawn; declare at least one with Capabilities::dtypes".to_owned(),
            ));
        }
        let outside = capabilities
            .outside_cases()
            .map_err(|error| setup(label.clone(), describe_error(&error)))?;
        let honesty_unchecked = if outside.is_empty() {
            format!(
                "the declared capabilities cover every case the suite can draw (every preset dtype, every kind of view, a maximum rank of at least {MAX_EXCEEDED_RANK}, {MAX_EXCEEDED_ELEMENTS} elements and {MAX_EXCEEDED_BYTES} bytes), so there is nothing to refuse"
            )
        } else {
            INSIDE_CAPABILITIES.to_owned()
        };
        Ok(RouteSetup {
            name,
            label,
            route,
            provider,
            factory: &declared.provider,
            profile,
            deadline,
            watchdog,
            capabilities,
            outside,
            honesty_unchecked,
        })
    }

    /// The declared route, built and gated, counting memory where the
    /// level does; or its one record: a skip where a device is not here
    /// (no GPU, no driver, a vendor's device the adapter says is absent),
    /// as in the CLI, a failure where the user requires the device or the
    /// route cannot be built.
    fn built_route(&self, declared: &DeclaredRoute) -> Result<Route, Box<CaseRecord>> {
        let name = declared.name.as_str();
        let setup = |message: String| Box::new(self.setup_record(name, String::new(), message));
        let counts_memory = self.level.counts_memory();
        match guarded(|| {
            (declared.route)().and_then(|route| {
                route.gate()?;
                Ok(route.counting_memory(counts_memory))
            })
        }) {
            Ok(Ok(route)) => Ok(route),
            // The route itself says its device is not here: no endpoint
            // names the device's kind, so only a setting that requires
            // every device makes it a failure.
            Ok(Err(HarnessError::Unavailable { reason })) => {
                match Settings::current()
                    .ok()
                    .and_then(|settings| settings.requiring_every_device())
                {
                    Some(setting) => Err(setup(format!(
                        "{setting} requires every device, but the route cannot run here: {reason}"
                    ))),
                    None => Err(Box::new(CaseRecord::new(
                        name,
                        Origin::Route,
                        self.head(name, String::new()),
                        CaseOutcome::Skipped {
                            reason: format!("the route cannot run here: {reason}"),
                        },
                    ))),
                }
            }
            Ok(Err(error @ HarnessError::DeviceRequired { .. })) => {
                Err(setup(describe_error(&error)))
            }
            Ok(Err(error)) => Err(setup(format!(
                "the route could not be built: {}",
                describe_error(&error)
            ))),
            Err(panic) => Err(setup(format!("building the route panicked: {panic}"))),
        }
    }

    /// The replayed recipe: every input it moves in one run (the case and
    /// those moved `with` it), judged inside the capabilities; or its case
    /// alone, judged outside them, where it falls outside.
    fn replayed_row(&self, set_up: &mut RouteSetup<'_>, json: &str) -> CaseRecord {
        let parsed = json.parse::<Recipe>().and_then(|recipe| {
            let case = recipe.case()?;
            let outside = OutsideCase::of(recipe.clone(), set_up.capabilities)?;
            Ok((recipe, case, outside))
        });
        match parsed {
            Ok((recipe, case, outside)) => {
                let head = self.case_head(set_up.name, &set_up.label, &case);
                let run = match &outside {
                    Some(outside) => {
                        // Read beside the call, as the fixed pass reads its
                        // cases.
                        set_up.watchdog.watch_inputs(true);
                        run_case(
                            &mut set_up.watchdog,
                            &set_up.route,
                            &case,
                            JudgedAs::Outside(outside),
                            None,
                        )
                    }
                    None => replay_recipe(&mut set_up.watchdog, &set_up.route, &recipe),
                };
                self.case_record(&case, set_up.name, Origin::Replayed, head, run)
                    .with_replay(&recipe)
            }
            Err(error) => self.setup_record(
                set_up.name,
                set_up.label.clone(),
                format!("the replayed recipe is not valid: {error}"),
            ),
        }
    }

    /// The fixed cases inside the capabilities, each followed by its twin
    /// (the state rows: what a provider kept from one call must not answer
    /// the next), then, from level v2, the pass that holds their outputs
    /// as the caller holds them (a later transfer must not write into
    /// them).
    fn fixed_rows(&self, set_up: &mut RouteSetup<'_>) -> Vec<CaseRecord> {
        let (name, label) = (set_up.name, set_up.label.clone());
        let mut rows = Vec::new();
        let mut pass = FixedPass::default();
        for recipe in fixed_recipes(set_up.capabilities, set_up.profile) {
            let case = match recipe.case() {
                Ok(case) if set_up.capabilities.admits(&case) => case,
                Ok(_) => continue,
                Err(error) => {
                    rows.push(CaseRecord::new(
                        name,
                        Origin::Fixed,
                        self.head(name, label.clone()),
                        CaseOutcome::NotSetUp {
                            message: describe_error(&error),
                        },
                    ));
                    continue;
                }
            };
            let head = self.case_head(name, &label, &case);
            let run = pass.run(&mut set_up.watchdog, &set_up.route, &recipe, &case);
            rows.push(
                self.case_record(&case, name, Origin::Fixed, head, run)
                    .with_replay(&recipe),
            );
        }
        let head = self.head(name, label);
        let hold = self.level.includes(Rule::OutputStable);
        let end = pass.finish(&mut set_up.watchdog, &set_up.route, name, &head, hold);
        rows.extend(
            end.state
                .into_iter()
                .chain(end.held)
                .map(|record| self.in_level_record(record)),
        );
        rows
    }

    /// The cases just outside each declared limit: each must be refused
    /// with a typed `Err` (`capability-honesty`).
    fn outside_rows(&self, set_up: &mut RouteSetup<'_>) -> Vec<CaseRecord> {
        let mut rows = Vec::new();
        for outside in &set_up.outside {
            let head = RowHead {
                layout: format!("{} [outside: {}]", outside.case.layout_label(), outside.why),
                ..self.case_head(set_up.name, &set_up.label, &outside.case)
            };
            let run = run_case(
                &mut set_up.watchdog,
                &set_up.route,
                &outside.case,
                JudgedAs::Outside(outside),
                None,
            );
            let origin = Origin::Outside {
                why: outside.why.clone(),
            };
            rows.push(
                self.case_record(&outside.case, set_up.name, origin, head, run)
                    .with_replay(&outside.recipe),
            );
        }
        rows
    }

    /// `record` with only the rules of the pinned level judged.
    pub(super) fn in_level_record(&self, mut record: CaseRecord) -> CaseRecord {
        record.outcome = self.in_level(record.outcome);
        let level = self.level;
        record.coverage =
            std::mem::take(&mut record.coverage).restricted(|rule| level.includes(rule));
        record
    }

    /// `outcome` with only the rules of the pinned level judged: a rule
    /// outside it is reported as not checked, its violations dropped.
    pub(super) fn in_level(&self, outcome: CaseOutcome) -> CaseOutcome {
        let level = self.level;
        outcome.restricted(
            |rule| level.includes(rule),
            &format!("not part of the pinned level {level}"),
        )
    }

    /// The record of one run of the runner, through the one conversion
    /// (`runner::into_record`): judged, skipped with the reason where the
    /// route cannot run the case here (a layout the device does not stage,
    /// say), not set up where the harness could not run it. Rules outside
    /// the pinned level are not checked.
    pub(super) fn case_record(
        &self,
        case: &Case,
        route: &str,
        origin: Origin,
        head: RowHead,
        run: CaseRun,
    ) -> CaseRecord {
        self.in_level_record(into_record(run, case, route, origin, head))
    }
}

/// The recipes of the fixed cases for every dtype `capabilities` declare:
/// the fixed shapes (with the million-element one outside the `quick`
/// profile), the size classes every profile reaches, for a float dtype
/// every special value in both signs, and a vector of runs of one value
/// ([`Case::runs`], up to [`RUNS_ELEMENTS`] as far as the declared maximum
/// elements and bytes go), where a copy that compresses what it sends changes strategy.
/// The run keeps those inside the
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
        // Cut to the declared maximum of elements, and of bytes for this
        // dtype (the whole case would fall outside them and be dropped).
        let runs = RUNS_ELEMENTS.min(capabilities.max_elements_of(dtype));
        if runs > 0 {
            recipes.push(Recipe::fixed(
                dtype,
                vec![runs],
                Layout::Owned,
                ValueSource::Runs,
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
pub(super) fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|payload: Box<dyn Any + Send>| panic_message(payload.as_ref()))
}
