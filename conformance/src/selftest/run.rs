//! Running the self-test: every broken provider, fault plan, honesty case
//! and reference provider on every route where it applies, tallied into the
//! kill matrix.

use std::collections::BTreeSet;
use std::sync::Arc;

use tenferro_mock_devices::SimDevice;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::{Capabilities, ViewKinds};
use tenferro_transfer_harness::{
    CapabilityGate, Endpoint, HostEndpoint, Judgement, Route, Rule, Watchdog,
};

use super::catalogue::{
    BrokenSpec, DeviceFaultSpec, Exercised, SELFTEST_DEADLINE, always, catalogue, device_faults,
};
use super::controls::{ControlSpec, controls};
use super::devices::on_devices;
use super::report::{CaseCheck, ProviderRow, SelfTestReport, SkippedProvider};
use super::schedule::{Exercise, exercise};
use crate::BuiltinProvider;
use crate::runner::{CaseRun, JudgedAs, run_case};

#[derive(Default)]
pub(super) struct Tally {
    caught: BTreeSet<Rule>,
    cases: usize,
    missed: usize,
    false_alarms: usize,
    expected_errors: usize,
    examples: Vec<String>,
}

impl Tally {
    /// Count a case (or a whole route) that could not run as missed: the
    /// self-test cannot claim a catch it never saw.
    pub(super) fn could_not_run(&mut self, example: String) {
        self.cases += 1;
        self.missed += 1;
        if self.examples.len() < 3 {
            self.examples.push(example);
        }
    }

    /// Tally one run of the runner: a judged case is recorded (a
    /// disagreement with the runtime counted), a case the route cannot run
    /// here (a view of CUDA memory) is neither caught nor missed, and one
    /// the harness could not run counts as missed.
    pub(super) fn run(
        &mut self,
        plan: &Exercise<'_>,
        run: CaseRun,
        context: &str,
        disagreements: &mut usize,
    ) {
        match run {
            Ok((judgement, _)) => {
                if self.record(plan, &judgement, context) {
                    *disagreements += 1;
                }
            }
            Err(skip) if skip.is_skip() => {}
            Err(error) => self.could_not_run(format!("could not run {context}: {error}")),
        }
    }

    fn record(&mut self, plan: &Exercise<'_>, judgement: &Judgement, context: &str) -> bool {
        let check = CaseCheck::of(plan.expected, plan.expects_error, judgement);
        self.cases += 1;
        if !judgement.expected_errors().is_empty() {
            self.expected_errors += 1;
        } else if check.missing_error {
            self.missed += 1;
            if self.examples.len() < 3 {
                self.examples.push(format!(
                    "the provider did not pass the injected device failure on as a typed Err on {context}"
                ));
            }
        }
        self.caught.extend(judgement.rules());
        if !check.missed.is_empty() {
            self.missed += 1;
            if self.examples.len() < 3 {
                let names: Vec<&str> = check.missed.iter().map(|rule| rule.id()).collect();
                self.examples
                    .push(format!("missed {} on {context}", names.join(", ")));
            }
        }
        if let Some(extra) = check.false_alarms.first() {
            self.false_alarms += 1;
            if self.examples.len() < 3 {
                self.examples.push(format!(
                    "false alarm {}: {} on {context}",
                    extra.rule, extra.message
                ));
            }
        }
        judgement.rules().contains(&Rule::RuntimeAgreement)
    }

    fn row(self, name: String, expected: Vec<Rule>) -> ProviderRow {
        ProviderRow {
            name,
            expected_rules: expected,
            caught_rules: self.caught.into_iter().collect(),
            cases: self.cases,
            missed: self.missed,
            false_alarms: self.false_alarms,
            expected_errors: self.expected_errors,
            examples: self.examples,
        }
    }
}

/// Whether the generic faults can rewrite `endpoint`'s memory: host or
/// simulated memory, which [`Broken`] knows how to rebuild.
fn generic_endpoint(endpoint: &Endpoint) -> bool {
    endpoint.downcast::<SimDevice>().is_some() || endpoint.downcast::<HostEndpoint>().is_some()
}

/// The capabilities the honesty rows declare: narrower than what the
/// reference providers serve.
fn narrow_capabilities() -> Capabilities {
    Capabilities::all()
        .dtypes([DType::F64])
        .views(ViewKinds::NONE)
        .max_elements(64)
}

/// A provider that declares [`narrow_capabilities`], built around a
/// reference provider, and the rules its out-of-capability cases must fire.
struct HonestySpec {
    name: &'static str,
    wrap: fn(Arc<dyn TransferProvider>) -> Arc<dyn TransferProvider>,
    expected: Vec<Rule>,
}

/// The honesty rows: a provider that serves more than it declares, one that
/// returns wrong data outside, one that panics outside, and one that
/// refuses outside with a typed `Err` (which must pass).
fn honesty_specs() -> Vec<HonestySpec> {
    vec![
        HonestySpec {
            name: "serves-undeclared",
            wrap: |inner| inner,
            expected: vec![Rule::CapabilityHonesty],
        },
        HonestySpec {
            name: "wrong-data-outside",
            wrap: |inner| Arc::new(Broken::new(inner, vec![Fault::OneUlp])),
            expected: vec![Rule::CapabilityHonesty],
        },
        HonestySpec {
            name: "panics-outside",
            wrap: |inner| Arc::new(Broken::new(inner, vec![Fault::Panic])),
            expected: vec![Rule::NoPanic, Rule::CapabilityHonesty],
        },
        HonestySpec {
            name: "gated",
            wrap: |inner| Arc::new(CapabilityGate::new(inner, narrow_capabilities())),
            expected: Vec::new(),
        },
    ]
}

/// Run `provider` on the cases just outside [`narrow_capabilities`].
fn exercise_outside(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    expected: &[Rule],
    tally: &mut Tally,
    disagreements: &mut usize,
) {
    let plan = Exercise {
        expected,
        applies: &always,
        deadline: SELFTEST_DEADLINE,
        plan: None,
        expects_error: false,
        exercised: Exercised::Plainly,
    };
    let (mut watchdog, outside) = match (
        Watchdog::new(route.clone(), provider, plan.deadline),
        narrow_capabilities().outside_cases(),
    ) {
        (Ok(watchdog), Ok(outside)) => (watchdog, outside),
        (Err(error), _) => {
            tally.could_not_run(format!(
                "route {} could not be built: {error}",
                route.label()
            ));
            return;
        }
        (_, Err(error)) => {
            tally.could_not_run(format!("no outside cases: {error}"));
            return;
        }
    };
    for outside in &outside {
        let context = format!(
            "{} {:?} {:?} ({})",
            route.label(),
            outside.case.dtype(),
            outside.case.shape(),
            outside.why
        );
        let run = run_case(
            &mut watchdog,
            route,
            &outside.case,
            JudgedAs::Outside(outside),
            None,
        );
        tally.run(&plan, run, &context, disagreements);
    }
}

/// A built-in provider and the route it was built on.
type Routed = (BuiltinProvider, Route);

/// The kill matrix as it grows: its rows, in order, and how many cases the
/// oracle's verdict disagreed with the runtime's.
#[derive(Default)]
struct Matrix {
    rows: Vec<ProviderRow>,
    disagreements: usize,
}

impl Matrix {
    /// The routes of `providers` that could be built, and those skipped
    /// with why; a route that cannot be built otherwise adds a failing row.
    fn built_routes(
        &mut self,
        providers: &[BuiltinProvider],
    ) -> (Vec<Routed>, Vec<SkippedProvider>) {
        let mut skipped = Vec::new();
        let mut routes: Vec<Routed> = Vec::new();
        for provider in providers {
            match provider.route() {
                Ok(route) => routes.push((*provider, route)),
                Err(error) if error.is_skip() => skipped.push(SkippedProvider {
                    name: provider.name.to_owned(),
                    reason: error.to_string(),
                }),
                // A route that cannot be built (CUDA required but absent, a
                // device that fails to open) is a failing row with no cases.
                Err(error) => self.rows.push(
                    Tally {
                        examples: vec![format!("route could not be built: {error}")],
                        ..Tally::default()
                    }
                    .row(format!("reference:{}", provider.name), Vec::new()),
                ),
            }
        }
        (routes, skipped)
    }

    /// One row per broken provider of the catalogue, run on the generic
    /// routes on its devices.
    fn broken_providers(&mut self, generic: &[&Routed], catalogue: Vec<BrokenSpec>) {
        for spec in catalogue {
            let mut tally = Tally::default();
            for (provider, route) in generic.iter().copied() {
                let Some(route) = on_devices(route, spec.devices) else {
                    continue;
                };
                let Ok(inner) = provider.provider(&route) else {
                    continue;
                };
                let broken = Arc::new(Broken::new(inner, spec.faults.clone()));
                let plan = Exercise {
                    expected: &spec.expected,
                    applies: &|case, route| spec.applies(case, route),
                    deadline: spec.deadline,
                    plan: None,
                    expects_error: false,
                    exercised: spec.exercised,
                };
                exercise(&route, broken, &plan, &mut tally, &mut self.disagreements);
            }
            self.rows
                .push(tally.row(spec.name(), spec.expected.clone()));
        }
    }

    /// One row per device fault plan, met by the reference providers of the
    /// generic routes.
    fn device_faults(&mut self, generic: &[&Routed], device_faults: Vec<DeviceFaultSpec>) {
        for spec in device_faults {
            let mut tally = Tally::default();
            for (provider, route) in generic.iter().copied() {
                let Ok(inner) = provider.provider(route) else {
                    continue;
                };
                let plan = Exercise {
                    expected: &spec.expected,
                    applies: &|case, route| spec.applies(case, route),
                    deadline: spec.deadline,
                    plan: Some(&spec.plan),
                    expects_error: spec.expects_error,
                    exercised: Exercised::Plainly,
                };
                exercise(route, inner, &plan, &mut tally, &mut self.disagreements);
            }
            self.rows
                .push(tally.row(format!("device:{}", spec.name), spec.expected.clone()));
        }
    }

    /// One row per control, run on every schedule and kind of device it
    /// names, on the generic routes.
    fn controls(&mut self, generic: &[&Routed], controls: Vec<ControlSpec>) {
        for control in controls {
            let mut tally = Tally::default();
            for (exercised, devices) in &control.exercises {
                for (provider, route) in generic.iter().copied() {
                    let Some(route) = on_devices(route, *devices) else {
                        continue;
                    };
                    let Ok(inner) = provider.provider(&route) else {
                        continue;
                    };
                    let plan = Exercise::clean(*exercised);
                    exercise(
                        &route,
                        control.wrap(inner),
                        &plan,
                        &mut tally,
                        &mut self.disagreements,
                    );
                }
            }
            self.rows
                .push(tally.row(format!("control:{}", control.name), Vec::new()));
        }
    }

    /// One row per honesty spec, run on the cases outside its declared
    /// capabilities on every route.
    fn honesty(&mut self, routes: &[Routed], honesty: Vec<HonestySpec>) {
        for spec in honesty {
            let mut tally = Tally::default();
            for (provider, route) in routes {
                let Ok(inner) = provider.provider(route) else {
                    continue;
                };
                exercise_outside(
                    route,
                    (spec.wrap)(inner),
                    &spec.expected,
                    &mut tally,
                    &mut self.disagreements,
                );
            }
            self.rows
                .push(tally.row(format!("honesty:{}", spec.name), spec.expected.clone()));
        }
    }

    /// One row per broken provider a route has of its own.
    fn native_broken(&mut self, routes: &[Routed]) {
        for (provider, route) in routes {
            for native in provider.native_broken(route) {
                let mut tally = Tally::default();
                let plan = Exercise {
                    expected: &native.expected,
                    applies: &always,
                    deadline: SELFTEST_DEADLINE,
                    plan: None,
                    expects_error: false,
                    exercised: Exercised::Plainly,
                };
                exercise(
                    route,
                    native.provider,
                    &plan,
                    &mut tally,
                    &mut self.disagreements,
                );
                self.rows
                    .push(tally.row(native.name.to_owned(), native.expected.clone()));
            }
        }
    }

    /// One row per route's reference provider, which no rule may fire on.
    fn references(&mut self, routes: &[Routed]) {
        for (provider, route) in routes {
            let mut tally = Tally::default();
            match provider.provider(route) {
                Ok(inner) => {
                    let plan = Exercise::clean(Exercised::Plainly);
                    exercise(route, inner, &plan, &mut tally, &mut self.disagreements)
                }
                Err(error) => tally.examples.push(error.to_string()),
            }
            self.rows
                .push(tally.row(format!("reference:{}", provider.name), Vec::new()));
        }
    }
}

/// The routes whose two endpoints the generic faults can rewrite.
fn generic_routes(routes: &[Routed]) -> Vec<&Routed> {
    routes
        .iter()
        .filter(|(_, route)| {
            generic_endpoint(route.source()) && generic_endpoint(route.destination())
        })
        .collect()
}

/// Run the self-test on the routes of `providers`.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::{builtin_provider, selftest};
///
/// let report = selftest::run(&[*builtin_provider("sim-peer").unwrap()]);
/// assert!(report.passed(), "{}", report.to_table());
/// ```
pub fn run(providers: &[BuiltinProvider]) -> SelfTestReport {
    let mut matrix = Matrix::default();
    let (routes, skipped) = matrix.built_routes(providers);
    // The generic faults rewrite simulated or host memory; a CUDA route
    // meets its own broken providers (`native_broken`) instead.
    let generic = generic_routes(&routes);
    // Without a route to break, a catalogue row would only say "never
    // applied"; the skip list says why instead.
    let catalogue = if generic.is_empty() {
        Vec::new()
    } else {
        catalogue()
    };
    let device_faults = if generic.is_empty() {
        Vec::new()
    } else {
        device_faults()
    };
    matrix.broken_providers(&generic, catalogue);
    matrix.device_faults(&generic, device_faults);
    // Correct providers that keep state: no rule may fire, on any schedule
    // or kind of device.
    let controls = if generic.is_empty() {
        Vec::new()
    } else {
        controls()
    };
    matrix.controls(&generic, controls);
    // As above: with every route skipped, honesty rows would only say
    // "0 cases".
    let honesty = if routes.is_empty() {
        Vec::new()
    } else {
        honesty_specs()
    };
    matrix.honesty(&routes, honesty);
    matrix.native_broken(&routes);
    matrix.references(&routes);
    SelfTestReport {
        providers: matrix.rows,
        disagreements: matrix.disagreements,
        skipped,
    }
}
