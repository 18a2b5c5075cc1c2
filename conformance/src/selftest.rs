//! The self-test: every deliberately broken provider on every route, dtype
//! and fixed shape where its fault applies, the kill matrix of which rules
//! caught it, and the reference providers, which must show no violation.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_mock_devices::{
    Element, FaultPlan, PRESET_DTYPES, SimDevice, compact_strides, strided_positions, with_element,
};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::Capabilities;
use tenferro_transfer_harness::{
    CapabilityGate, Case, Endpoint, Filler, HostEndpoint, Judgement, Layout, Oracle, PlacementRule,
    Route, Rule, StorageRule, Violation, Watchdog,
};

use crate::{BuiltinProvider, fixed_shapes};

/// A broken provider of the self-test: its faults, the rules that must
/// catch it, and where its fault applies.
#[derive(Clone, Debug)]
pub struct BrokenSpec {
    /// The faults injected.
    pub faults: Vec<Fault>,
    /// Exactly the rules that must fire.
    pub expected: Vec<Rule>,
    /// The per-case deadline it runs under.
    pub deadline: Duration,
    applies: fn(&Case, &Route) -> bool,
}

/// The deadline of the self-test's cases: far above what any of them takes.
pub const SELFTEST_DEADLINE: Duration = Duration::from_secs(20);

/// The deadline of the cases that must hang: short, so the self-test stays
/// fast; a hang is a hang whatever the limit.
pub const HANG_DEADLINE: Duration = Duration::from_millis(100);

impl BrokenSpec {
    fn new(faults: Vec<Fault>, expected: Vec<Rule>, applies: fn(&Case, &Route) -> bool) -> Self {
        Self {
            faults,
            expected,
            deadline: SELFTEST_DEADLINE,
            applies,
        }
    }

    fn hanging(mut self) -> Self {
        self.deadline = HANG_DEADLINE;
        self
    }

    /// The broken provider's name: its faults joined by `+`.
    pub fn name(&self) -> String {
        self.faults
            .iter()
            .map(|fault| fault.name())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Whether the fault changes anything observable for `case` on `route`.
    pub fn applies(&self, case: &Case, route: &Route) -> bool {
        (self.applies)(case, route)
    }

    /// How `judgement` of an applicable case measures against this spec.
    pub fn check(&self, judgement: &Judgement) -> CaseCheck {
        CaseCheck::of(&self.expected, false, judgement)
    }
}

fn always(_: &Case, _: &Route) -> bool {
    true
}

fn device_destination(_: &Case, route: &Route) -> bool {
    matches!(
        route.destination().placement_rule(),
        PlacementRule::Device(_)
    )
}

fn non_host_destination(_: &Case, route: &Route) -> bool {
    route.destination().placement_rule() != PlacementRule::Host
}

fn domain_destination(_: &Case, route: &Route) -> bool {
    matches!(
        route.destination().storage_rule(),
        StorageRule::Domain { .. }
    )
}

fn non_empty(case: &Case, _: &Route) -> bool {
    !case.is_empty()
}

fn asymmetric_shape(case: &Case, _: &Route) -> bool {
    case.shape().iter().rev().copied().collect::<Vec<_>>() != case.shape()
}

/// Every float image (complex parts separately) of the case, as bits.
fn float_parts(case: &Case) -> Vec<u64> {
    let part = match case.dtype() {
        DType::F32 | DType::C32 => 4,
        DType::F64 | DType::C64 => 8,
        _ => return Vec::new(),
    };
    case.values()
        .chunks_exact(part)
        .map(|chunk| {
            chunk
                .iter()
                .rev()
                .fold(0_u64, |bits, &byte| (bits << 8) | u64::from(byte))
        })
        .collect()
}

fn has_payload_nan(case: &Case, _: &Route) -> bool {
    let (canonical, exponent, mantissa) = match case.dtype() {
        DType::F32 | DType::C32 => (
            u64::from(f32::NAN.to_bits()),
            0x7f80_0000_u64,
            0x007f_ffff_u64,
        ),
        DType::F64 | DType::C64 => (
            f64::NAN.to_bits(),
            0x7ff0_0000_0000_0000,
            0x000f_ffff_ffff_ffff,
        ),
        _ => return false,
    };
    float_parts(case)
        .into_iter()
        .any(|bits| bits & exponent == exponent && bits & mantissa != 0 && bits != canonical)
}

fn has_negative_zero(case: &Case, _: &Route) -> bool {
    let negative_zero = match case.dtype() {
        DType::F32 | DType::C32 => 0x8000_0000,
        DType::F64 | DType::C64 => 0x8000_0000_0000_0000,
        _ => return false,
    };
    float_parts(case).contains(&negative_zero)
}

fn has_two_distinct(case: &Case, _: &Route) -> bool {
    let Some(width) = tenferro_mock_devices::element_width(case.dtype()) else {
        return false;
    };
    let mut elements = case.values().chunks_exact(width);
    let first = elements.next();
    elements.any(|element| Some(element) != first)
}

fn misread_differs(case: &Case, ignore_strides: bool) -> bool {
    let Layout::View(spec) = case.layout() else {
        return false;
    };
    fn misread<T: Element + Filler>(
        case: &Case,
        spec: &tenferro_transfer_harness::ViewSpec,
        ignore_strides: bool,
    ) -> bool {
        let backing = case.backing_values::<T>();
        let correct = case.typed_values::<T>();
        let shape = case.shape();
        let (strides, offset) = if ignore_strides {
            (compact_strides(shape), spec.offset())
        } else {
            (spec.strides(), 0)
        };
        correct
            .iter()
            .zip(strided_positions(shape, &strides, offset))
            .any(|(value, position)| {
                let read = usize::try_from(position)
                    .ok()
                    .and_then(|p| backing.get(p))
                    .unwrap_or(value);
                let (mut want, mut got) = (Vec::new(), Vec::new());
                T::extend_bytes(std::slice::from_ref(value), &mut want);
                T::extend_bytes(std::slice::from_ref(read), &mut got);
                want != got
            })
    }
    with_element!(case.dtype(), T => misread::<T>(case, spec, ignore_strides), external => false)
}

/// Whether the second half of the case's elements (what a partial copy
/// leaves as poison) differs from the device's poison.
fn suffix_differs_from_poison(case: &Case, _: &Route) -> bool {
    fn differs<T: Element>(case: &Case) -> bool {
        let values = case.typed_values::<T>();
        let (mut poison, mut suffix) = (Vec::new(), Vec::new());
        T::extend_bytes(&[T::POISON], &mut poison);
        T::extend_bytes(&values[values.len() / 2..], &mut suffix);
        suffix
            .chunks_exact(T::WIDTH)
            .any(|element| element != poison)
    }
    with_element!(case.dtype(), T => differs::<T>(case), external => false)
}

/// The few cases a hang is tried on: each costs a whole deadline.
fn few_tiny_cases(case: &Case, _: &Route) -> bool {
    case.len() <= 1 && case.dtype() == DType::F64
}

fn sim_endpoint(_: &Case, route: &Route) -> bool {
    [route.source(), route.destination()]
        .iter()
        .any(|endpoint| endpoint.downcast::<SimDevice>().is_some())
}

fn sim_destination(case: &Case, route: &Route) -> bool {
    route.destination().downcast::<SimDevice>().is_some() && always(case, route)
}

fn non_empty_sim_destination(case: &Case, route: &Route) -> bool {
    sim_destination(case, route) && non_empty(case, route)
}

fn tiny_on_sim(case: &Case, route: &Route) -> bool {
    sim_endpoint(case, route) && few_tiny_cases(case, route)
}

fn non_empty_on_sim(case: &Case, route: &Route) -> bool {
    sim_endpoint(case, route) && suffix_differs_from_poison(case, route)
}

fn strides_matter(case: &Case, _: &Route) -> bool {
    misread_differs(case, true)
}

fn offset_matters(case: &Case, _: &Route) -> bool {
    misread_differs(case, false)
}

/// The self-test's broken providers: at least one per rule the built-in
/// routes can break, and two with two faults at once.
pub fn catalogue() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
        BrokenSpec::new(vec![F::WrongDtype], vec![R::Dtype], always),
        BrokenSpec::new(vec![F::RankChanged], vec![R::Shape], always),
        BrokenSpec::new(vec![F::DimsPermuted], vec![R::Shape], asymmetric_shape),
        BrokenSpec::new(
            vec![F::LyingLength],
            vec![R::BufferLength],
            domain_destination,
        ),
        BrokenSpec::new(
            vec![F::HostPlacement],
            vec![R::Placement],
            non_host_destination,
        ),
        BrokenSpec::new(
            vec![F::WrongOrdinal],
            vec![R::Placement],
            device_destination,
        ),
        BrokenSpec::new(vec![F::ForeignDomain], vec![R::Residency], always),
        BrokenSpec::new(vec![F::WrongFamily], vec![R::Residency], domain_destination),
        BrokenSpec::new(vec![F::OneUlp], vec![R::Values], non_empty),
        BrokenSpec::new(vec![F::CanonicalNan], vec![R::Values], has_payload_nan),
        BrokenSpec::new(
            vec![F::NegativeZeroLost],
            vec![R::Values],
            has_negative_zero,
        ),
        BrokenSpec::new(vec![F::Swapped], vec![R::Values], has_two_distinct),
        BrokenSpec::new(vec![F::IgnoreStrides], vec![R::Values], strides_matter),
        BrokenSpec::new(vec![F::IgnoreOffset], vec![R::Values], offset_matters),
        BrokenSpec::new(vec![F::ErrOnValid], vec![R::NoError], always),
        BrokenSpec::new(vec![F::Panic], vec![R::NoPanic], always),
        BrokenSpec::new(vec![F::EarlyReturn], vec![R::Completion], sim_destination),
        BrokenSpec::new(
            vec![F::PartialCopy],
            vec![R::Values],
            suffix_differs_from_poison,
        ),
        BrokenSpec::new(vec![F::Leaky], vec![R::NoLeak], always),
        BrokenSpec::new(vec![F::Hang], vec![R::Deadline], few_tiny_cases).hanging(),
        BrokenSpec::new(vec![F::PanicMidCopy], vec![R::NoPanic], always),
        BrokenSpec::new(vec![F::PanickingMapRead], vec![R::NoPanic], sim_destination),
        BrokenSpec::new(vec![F::PanickingLen], vec![R::NoPanic], sim_destination),
        BrokenSpec::new(vec![F::PanickingDrop], vec![R::NoPanic], sim_destination),
        BrokenSpec::new(
            vec![F::UnstableLength],
            vec![R::BufferLength],
            sim_destination,
        ),
        BrokenSpec::new(
            vec![F::ShortMapRead],
            vec![R::Values],
            non_empty_sim_destination,
        ),
        BrokenSpec::new(
            vec![F::WrongDtype, F::HostPlacement],
            vec![R::Dtype, R::Placement],
            non_host_destination,
        ),
        BrokenSpec::new(
            vec![F::OneUlp, F::ForeignDomain],
            vec![R::Residency, R::Values],
            non_empty,
        ),
    ]
}

/// A fault plan of the simulated devices, met by the reference providers:
/// the rules that must fire, and whether the provider must pass the
/// device's failure on as a typed `Err` (an expected error, not a
/// violation).
#[derive(Clone, Debug)]
pub struct DeviceFaultSpec {
    /// Name in the kill matrix (`device:<name>`).
    pub name: &'static str,
    /// The plan, installed on every simulated endpoint before each case.
    pub plan: FaultPlan,
    /// Exactly the rules that must fire.
    pub expected: Vec<Rule>,
    /// Whether every case must end in an expected error.
    pub expects_error: bool,
    /// The per-case deadline.
    pub deadline: Duration,
    applies: fn(&Case, &Route) -> bool,
}

impl DeviceFaultSpec {
    /// Whether the plan changes anything observable for `case` on `route`.
    pub fn applies(&self, case: &Case, route: &Route) -> bool {
        (self.applies)(case, route)
    }

    /// How `judgement` of an applicable case measures against this spec.
    pub fn check(&self, judgement: &Judgement) -> CaseCheck {
        CaseCheck::of(&self.expected, self.expects_error, judgement)
    }
}

/// The device fault plans of the self-test: one per way a simulated device
/// can fail.
pub fn device_faults() -> Vec<DeviceFaultSpec> {
    let spec = |name, plan, expected: Vec<Rule>, expects_error, applies| DeviceFaultSpec {
        name,
        plan,
        expected,
        expects_error,
        deadline: SELFTEST_DEADLINE,
        applies,
    };
    vec![
        // Only a device destination allocates on the device.
        spec(
            "out-of-memory",
            FaultPlan::new().out_of_memory_at(1),
            vec![],
            true,
            sim_destination,
        ),
        spec(
            "device-lost",
            FaultPlan::new().device_lost_after(0),
            vec![],
            true,
            sim_endpoint,
        ),
        spec(
            "copy-error",
            FaultPlan::new().copy_error_after(1, 4),
            vec![],
            true,
            sim_endpoint,
        ),
        spec(
            "partial-copy",
            FaultPlan::new().partial_copy(1, 0),
            vec![Rule::Values],
            false,
            non_empty_on_sim,
        ),
        spec(
            "latency-spike",
            FaultPlan::new().latency_spike(1, Duration::from_millis(1)),
            vec![],
            false,
            sim_endpoint,
        ),
        DeviceFaultSpec {
            deadline: HANG_DEADLINE,
            ..spec(
                "never-complete",
                FaultPlan::new().never_complete(1),
                vec![Rule::Deadline],
                false,
                tiny_on_sim,
            )
        },
    ]
}

/// One cell of the kill matrix: how a judged case measures against what a
/// provider must show. The self-test tallies these; the fuzz target
/// `transfer_contract` asserts them case by case.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::harness::{Judgement, Rule, Violation};
/// use tenferro_transfer_conformance::selftest::CaseCheck;
///
/// let judgement = Judgement {
///     violations: vec![Violation { rule: Rule::Values, message: "element 0 differs".into() }],
///     ..Judgement::default()
/// };
/// assert!(CaseCheck::of(&[Rule::Values], false, &judgement).passed());
/// assert_eq!(CaseCheck::of(&[], false, &judgement).false_alarms.len(), 1);
/// assert_eq!(CaseCheck::of(&[Rule::Values, Rule::Dtype], false, &judgement).missed, vec![Rule::Dtype]);
/// ```
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct CaseCheck {
    /// Rules that had to fire and did not.
    pub missed: Vec<Rule>,
    /// Violations of rules that were not expected.
    pub false_alarms: Vec<Violation>,
    /// The case had to end in an expected error (a device failure passed on
    /// as a typed `Err`) and did not.
    pub missing_error: bool,
}

impl CaseCheck {
    /// Measure `judgement` against exactly the `expected` rules, and, when
    /// `expects_error`, an expected error.
    pub fn of(expected: &[Rule], expects_error: bool, judgement: &Judgement) -> Self {
        let fired = judgement.rules();
        Self {
            missed: expected
                .iter()
                .copied()
                .filter(|rule| !fired.contains(rule))
                .collect(),
            false_alarms: judgement
                .violations
                .iter()
                .filter(|violation| !expected.contains(&violation.rule))
                .cloned()
                .collect(),
            missing_error: expects_error && judgement.expected_errors.is_empty(),
        }
    }

    /// Whether the case showed exactly what it had to.
    pub fn passed(&self) -> bool {
        self.missed.is_empty() && self.false_alarms.is_empty() && !self.missing_error
    }
}

/// One row of the kill matrix.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderRow {
    /// Provider name (`reference:<builtin>` for the reference providers).
    pub name: String,
    /// Rules that must fire on every applicable case.
    pub expected_rules: Vec<Rule>,
    /// Rules that fired on at least one case.
    pub caught_rules: Vec<Rule>,
    /// Applicable cases run.
    pub cases: usize,
    /// Cases where an expected rule did not fire.
    pub missed: usize,
    /// Cases where an unexpected rule fired.
    pub false_alarms: usize,
    /// Cases that ended in an expected error (a device failure passed on).
    pub expected_errors: usize,
    /// The first few misses and false alarms, for diagnosis.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// A provider whose route cannot run here (no CUDA device, driver or
/// feature): nothing of it ran, and it counts as skipped, never as a pass.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedProvider {
    /// The built-in provider.
    pub name: String,
    /// Why its route cannot run.
    pub reason: String,
}

/// The self-test's result.
#[derive(Clone, Debug, Serialize)]
pub struct SelfTestReport {
    /// One row per broken provider, then one per reference provider.
    pub providers: Vec<ProviderRow>,
    /// Cases on which the oracle and the runtime disagreed.
    pub disagreements: usize,
    /// Providers whose routes could not run here, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedProvider>,
}

impl SelfTestReport {
    /// Whether every broken provider was caught by exactly its rules on
    /// every applicable case, every reference provider was clean, and the
    /// oracle never disagreed with the runtime. A self-test where nothing
    /// ran (every route skipped) has not passed.
    pub fn passed(&self) -> bool {
        self.disagreements == 0
            && !self.providers.is_empty()
            && self
                .providers
                .iter()
                .all(|row| row.missed == 0 && row.false_alarms == 0 && row.cases > 0)
    }

    /// The report as pretty JSON.
    ///
    /// # Errors
    ///
    /// Returns serde_json's error if serialisation fails.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The kill matrix as text: one column per rule, `x` where the rule is
    /// expected and fired, `!` where it fired unexpectedly, `-` where an
    /// expected rule never fired.
    pub fn to_table(&self) -> String {
        let rules: Vec<Rule> = Rule::ALL.to_vec();
        let name_width = self
            .providers
            .iter()
            .map(|row| row.name.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let mut out = format!("{:<name_width$}", "provider");
        for rule in &rules {
            let _ = write!(out, " {:>3}", abbreviation(*rule));
        }
        out.push_str("  cases missed false-alarms expected-errors\n");
        for row in &self.providers {
            let _ = write!(out, "{:<name_width$}", row.name);
            for rule in &rules {
                let expected = row.expected_rules.contains(rule);
                let caught = row.caught_rules.contains(rule);
                let mark = match (expected, caught) {
                    (true, true) => "x",
                    (true, false) => "-",
                    (false, true) => "!",
                    (false, false) => ".",
                };
                let _ = write!(out, " {mark:>3}");
            }
            let _ = writeln!(
                out,
                "  {:>5} {:>6} {:>12} {:>15}",
                row.cases, row.missed, row.false_alarms, row.expected_errors
            );
            for example in &row.examples {
                let _ = writeln!(out, "    {example}");
            }
        }
        out.push_str("\ncolumns: ");
        out.push_str(
            &rules
                .iter()
                .map(|rule| format!("{}={}", abbreviation(*rule), rule.id()))
                .collect::<Vec<_>>()
                .join(" "),
        );
        for skipped in &self.skipped {
            let _ = write!(
                out,
                "\nskipped (not run, never a pass): {}: {}",
                skipped.name, skipped.reason
            );
        }
        let _ = writeln!(
            out,
            "\ndisagreements with the runtime: {}",
            self.disagreements
        );
        let _ = writeln!(
            out,
            "self-test: {}",
            if self.passed() { "PASS" } else { "FAIL" }
        );
        out
    }
}

fn abbreviation(rule: Rule) -> &'static str {
    match rule {
        Rule::Dtype => "dt",
        Rule::Shape => "sh",
        Rule::BufferLength => "bl",
        Rule::Placement => "pl",
        Rule::Residency => "rs",
        Rule::Completion => "cm",
        Rule::Values => "va",
        Rule::NoError => "ne",
        Rule::NoPanic => "np",
        Rule::Deadline => "dl",
        Rule::NoLeak => "lk",
        Rule::CapabilityHonesty => "ch",
        _ => "ra",
    }
}

#[derive(Default)]
struct Tally {
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
    fn could_not_run(&mut self, example: String) {
        self.cases += 1;
        self.missed += 1;
        if self.examples.len() < 3 {
            self.examples.push(example);
        }
    }

    fn record(&mut self, plan: &Exercise<'_>, judgement: &Judgement, context: &str) -> bool {
        let check = CaseCheck::of(plan.expected, plan.expects_error, judgement);
        self.cases += 1;
        if !judgement.expected_errors.is_empty() {
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

/// How one provider is exercised: the rules that must fire, the cases it
/// applies to, the deadline, and the device fault plan of each case.
struct Exercise<'a> {
    expected: &'a [Rule],
    applies: &'a dyn Fn(&Case, &Route) -> bool,
    deadline: Duration,
    plan: Option<&'a FaultPlan>,
    expects_error: bool,
}

/// Whether the generic faults can rewrite `endpoint`'s memory: host or
/// simulated memory, which [`Broken`] knows how to rebuild.
fn generic_endpoint(endpoint: &Endpoint) -> bool {
    endpoint.downcast::<SimDevice>().is_some() || endpoint.downcast::<HostEndpoint>().is_some()
}

/// Install `plan` on every simulated endpoint of `route` (an empty plan
/// removes the faults).
pub fn install(route: &Route, plan: &FaultPlan) {
    for endpoint in [route.source(), route.destination()] {
        if let Some(device) = endpoint.downcast::<SimDevice>() {
            device.install_faults(plan.clone());
        }
    }
}

/// Run one provider on one route over every dtype and fixed shape (the
/// large one excepted) that the exercise applies to.
fn exercise(
    route: &Route,
    provider: Arc<dyn TransferProvider>,
    plan: &Exercise<'_>,
    tally: &mut Tally,
    disagreements: &mut usize,
) {
    let mut rig = match Watchdog::new(route.clone(), provider, plan.deadline) {
        Ok(rig) => rig,
        Err(error) => {
            tally.could_not_run(format!(
                "route {} could not be built: {error}",
                route.label()
            ));
            return;
        }
    };
    for dtype in PRESET_DTYPES {
        for shape in fixed_shapes(false) {
            let Ok(case) = Case::patterned(dtype, shape.shape.clone(), shape.layout.clone()) else {
                continue;
            };
            if !(plan.applies)(&case, route) {
                continue;
            }
            let context = format!("{} {dtype:?} {}", route.label(), shape.name);
            if let Some(faults) = plan.plan {
                install(route, faults);
            }
            let outcome = rig.run(&case);
            if plan.plan.is_some() {
                install(route, &FaultPlan::new());
            }
            match outcome {
                Ok(outcome) => {
                    if tally.record(plan, &Oracle.judge(&case, route, &outcome), &context) {
                        *disagreements += 1;
                    }
                }
                // A case outside the route's known limits (a view of CUDA
                // memory) is not run, so it is neither caught nor missed.
                Err(error) if error.is_skip() => {}
                Err(error) => {
                    tally.could_not_run(format!("could not run {context}: {error}"));
                }
            }
        }
    }
}

/// The capabilities the honesty rows declare: narrower than what the
/// reference providers serve.
fn narrow_capabilities() -> Capabilities {
    Capabilities {
        dtypes: vec![DType::F64],
        views: false,
        max_elements: 64,
    }
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
    };
    let (mut rig, outside) = match (
        Watchdog::new(route.clone(), provider, plan.deadline),
        narrow_capabilities().outside_cases(),
    ) {
        (Ok(rig), Ok(outside)) => (rig, outside),
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
        match rig.run(&outside.case) {
            Ok(outcome) => {
                let judgement = Oracle.judge_outside(outside, route, &outcome);
                if tally.record(&plan, &judgement, &context) {
                    *disagreements += 1;
                }
            }
            Err(error) => {
                tally.could_not_run(format!("could not run {context}: {error}"));
            }
        }
    }
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
    let mut disagreements = 0;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut routes: Vec<(BuiltinProvider, Route)> = Vec::new();
    for provider in providers {
        match provider.route() {
            Ok(route) => routes.push((*provider, route)),
            Err(error) if error.is_skip() => skipped.push(SkippedProvider {
                name: provider.name.to_owned(),
                reason: error.to_string(),
            }),
            // A route that cannot be built (CUDA required but absent, a
            // device that fails to open) is a failing row with no cases.
            Err(error) => rows.push(
                Tally {
                    examples: vec![format!("route could not be built: {error}")],
                    ..Tally::default()
                }
                .row(format!("reference:{}", provider.name), Vec::new()),
            ),
        }
    }
    // The generic faults rewrite simulated or host memory; a CUDA route
    // meets its own broken providers (`native_broken`) instead.
    let generic: Vec<&(BuiltinProvider, Route)> = routes
        .iter()
        .filter(|(_, route)| {
            generic_endpoint(route.source()) && generic_endpoint(route.destination())
        })
        .collect();
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
    for spec in catalogue {
        let mut tally = Tally::default();
        for (provider, route) in generic.iter().copied() {
            let Ok(inner) = provider.provider(route) else {
                continue;
            };
            let broken = Arc::new(Broken::new(inner, spec.faults.clone()));
            let plan = Exercise {
                expected: &spec.expected,
                applies: &|case, route| spec.applies(case, route),
                deadline: spec.deadline,
                plan: None,
                expects_error: false,
            };
            exercise(route, broken, &plan, &mut tally, &mut disagreements);
        }
        rows.push(tally.row(spec.name(), spec.expected.clone()));
    }
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
            };
            exercise(route, inner, &plan, &mut tally, &mut disagreements);
        }
        rows.push(tally.row(format!("device:{}", spec.name), spec.expected.clone()));
    }
    // As above: with every route skipped, honesty rows would only say
    // "0 cases".
    let honesty = if routes.is_empty() {
        Vec::new()
    } else {
        honesty_specs()
    };
    for spec in honesty {
        let mut tally = Tally::default();
        for (provider, route) in &routes {
            let Ok(inner) = provider.provider(route) else {
                continue;
            };
            exercise_outside(
                route,
                (spec.wrap)(inner),
                &spec.expected,
                &mut tally,
                &mut disagreements,
            );
        }
        rows.push(tally.row(format!("honesty:{}", spec.name), spec.expected.clone()));
    }
    for (provider, route) in &routes {
        for native in provider.native_broken(route) {
            let mut tally = Tally::default();
            let plan = Exercise {
                expected: &native.expected,
                applies: &always,
                deadline: SELFTEST_DEADLINE,
                plan: None,
                expects_error: false,
            };
            exercise(
                route,
                native.provider,
                &plan,
                &mut tally,
                &mut disagreements,
            );
            rows.push(tally.row(native.name.to_owned(), native.expected.clone()));
        }
    }
    for (provider, route) in &routes {
        let mut tally = Tally::default();
        match provider.provider(route) {
            Ok(inner) => {
                let plan = Exercise {
                    expected: &[],
                    applies: &always,
                    deadline: SELFTEST_DEADLINE,
                    plan: None,
                    expects_error: false,
                };
                exercise(route, inner, &plan, &mut tally, &mut disagreements)
            }
            Err(error) => tally.examples.push(error.to_string()),
        }
        rows.push(tally.row(format!("reference:{}", provider.name), Vec::new()));
    }
    SelfTestReport {
        providers: rows,
        disagreements,
        skipped,
    }
}
