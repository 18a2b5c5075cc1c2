//! The run of a `ProviderSuite`: every declared route, built and gated,
//! its fixed cases and size classes, the generated run, the concurrent
//! calls and the cases just outside its capabilities, each through the
//! runner (`crate::runner`) into a typed record (`crate::record`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_transfer_harness::strategy::{Capabilities, Profile, Recipe, ValueSource};
use tenferro_transfer_harness::{
    Case, HarnessError, INSIDE_CAPABILITIES, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS,
    MAX_EXCEEDED_RANK, OutsideCase, RouteDeadline, Rule, Settings, SettingsError, Watchdog,
    describe_error, panic_message,
};

use super::{DeclaredRoute, ProviderSuite, RouteRun};
use crate::generated::{GeneratedOptions, drawn_seed};
use crate::held::held_pass;
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{Report, RowHead};
use crate::runner::{CaseRun, JudgedAs, run_case};
use crate::sequences::StatePass;
use crate::{LARGE_ELEMENTS, fixed_shapes, size_classes};

impl ProviderSuite {
    /// Run every declared route; with `replay`, only that recipe (or, for
    /// settings the suite does not know, a failed setup of every route).
    pub(super) fn run_routes(&self, replay: Option<Result<&str, SettingsError>>) -> Report {
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
            let route_records = catch_unwind(AssertUnwindSafe(|| {
                self.run_route(declared, replay.clone())
            }))
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

    /// The profile in force: the settings', else the declared one.
    pub(super) fn profile_in_force(&self) -> Result<Profile, HarnessError> {
        Ok(Settings::current()?.profile.unwrap_or(self.profile))
    }

    fn run_route(
        &self,
        declared: &DeclaredRoute,
        replay: Option<Result<&str, SettingsError>>,
    ) -> Vec<CaseRecord> {
        let name = declared.name.as_str();
        let setup = |label: String, message: String| vec![self.setup_record(name, label, message)];
        let replay = match replay {
            Some(Err(error)) => return setup(String::new(), error.to_string()),
            Some(Ok(json)) => Some(json),
            None => None,
        };
        if !is_identifier(name) {
            return setup(
                String::new(),
                format!(
                    "route name `{name}` is not a Rust identifier (the macro names tests after it)"
                ),
            );
        }
        let counts_memory = self.level.counts_memory();
        let route = match guarded(|| {
            (declared.route)().and_then(|route| {
                route.gate()?;
                Ok(route.counting_memory(counts_memory))
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
            Ok(Err(error @ HarnessError::DeviceRequired { .. })) => {
                return setup(String::new(), describe_error(&error));
            }
            Ok(Err(error)) => {
                return setup(
                    String::new(),
                    format!("the route could not be built: {}", describe_error(&error)),
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
                return setup(
                    label,
                    format!(
                        "the provider could not be built: {}",
                        describe_error(&*error)
                    ),
                );
            }
            Err(panic) => return setup(label, format!("building the provider panicked: {panic}")),
        };
        let profile = match self.profile_in_force() {
            Ok(profile) => profile,
            Err(error) => return setup(label, describe_error(&error)),
        };
        let deadline = RouteDeadline::new(self.deadline);
        let mut rig = match Watchdog::new(route.clone(), Arc::clone(&provider), deadline.clone()) {
            Ok(rig) => rig,
            Err(error) => {
                return setup(
                    label,
                    format!("the rig could not be built: {}", describe_error(&error)),
                );
            }
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
            Err(error) => return setup(label, describe_error(&error)),
        };
        let honesty_unchecked = if outside.is_empty() {
            format!(
                "the declared capabilities cover every case the suite can draw (every preset dtype, every kind of view, a maximum rank of at least {MAX_EXCEEDED_RANK}, {MAX_EXCEEDED_ELEMENTS} elements and {MAX_EXCEEDED_BYTES} bytes), so there is nothing to refuse"
            )
        } else {
            INSIDE_CAPABILITIES.to_owned()
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
                    self.case_record(&case, name, Origin::Replayed, head, run, honesty)
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
            Err(error) => return setup(label, describe_error(&error)),
        };
        let mut rows = Vec::new();
        let mut held_recipes = Vec::new();
        let mut state = StatePass::default();
        for recipe in fixed_recipes(capabilities, profile) {
            let case = match recipe.case() {
                Ok(case) if capabilities.admits(&case) => {
                    held_recipes.push(recipe.clone());
                    case
                }
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
            let run = run_case(&mut rig, &route, &case, JudgedAs::Inside, None);
            rows.push(
                self.case_record(
                    &case,
                    name,
                    Origin::Fixed,
                    head,
                    run,
                    Some(&honesty_unchecked),
                )
                .with_replay(&recipe),
            );
            state.after_fixed(&mut rig, &route, &recipe);
        }
        // Twins and inputs of mixed sizes in one run: what a provider
        // kept from one call to the next must not answer the next.
        let head = self.head(name, label.clone());
        rows.extend(
            state
                .finish(&mut rig, &route, name, &head)
                .into_iter()
                .map(|record| {
                    let mut record = self.in_level_record(record);
                    record
                        .outcome
                        .explain_unchecked(Rule::CapabilityHonesty, &honesty_unchecked);
                    record
                }),
        );
        // Outputs held as the caller holds them (level v2 on): a later
        // transfer must not write into them.
        if self.level.includes(Rule::OutputStable) {
            let head = self.head(name, label.clone());
            rows.extend(
                held_pass(&mut rig, &route, &held_recipes, name, &head)
                    .map(|record| self.in_level_record(record)),
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
            deadline: &deadline,
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
                self.case_record(&outside.case, name, origin, head, run, None)
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
    /// (`CaseRun::into_record`): judged, skipped with the reason where the
    /// route cannot run the case here (a layout the device does not stage,
    /// say), not set up where the harness could not run it. Rules outside
    /// the pinned level are not checked, and `honesty_unchecked`, when
    /// given, says why `capability-honesty` was not checked on a case
    /// inside the capabilities.
    pub(super) fn case_record(
        &self,
        case: &Case,
        route: &str,
        origin: Origin,
        head: RowHead,
        run: CaseRun,
        honesty_unchecked: Option<&str>,
    ) -> CaseRecord {
        let mut record = self.in_level_record(run.into_record(case, route, origin, head));
        if let Some(reason) = honesty_unchecked {
            record
                .outcome
                .explain_unchecked(Rule::CapabilityHonesty, reason);
        }
        record
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
