//! The self-test's catalogue: the broken providers and device fault plans,
//! each with the rules it must break and the cases it applies to.

use std::time::Duration;

use tenferro_mock_devices::providers::Fault;
use tenferro_mock_devices::{
    Element, FaultPlan, SimDevice, compact_strides, strided_positions, with_element,
};
use tenferro_tensor::DType;
use tenferro_transfer_harness::{
    Case, Filler, Judgement, Layout, PlacementRule, Route, Rule, StorageRule,
};

use super::report::CaseCheck;

/// How the self-test runs a provider on each case: the sequence of calls
/// that meets what the provider keeps between calls.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Exercised {
    /// Case by case.
    Plainly,
    /// Its outputs held as a caller holds them, each case followed by one
    /// of the same size with other values (what `output-stable` needs).
    Held,
    /// Each case moved in one run with one of the same size and other
    /// values: the runtime holds the provider's first output while the
    /// second moves.
    Together,
    /// Each case, then its twin (the same dtype and shape, a few interior
    /// elements changed).
    Twins,
    /// Each case sent by four threads at once, each with its own values of
    /// the same dtype and shape, in up to three rounds.
    ConcurrentTwins,
}

/// Which devices the self-test runs a provider on.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum Devices {
    /// The built-in routes' simulated devices as they are: a ledger, and
    /// layout kernels that alias.
    #[default]
    AsBuilt,
    /// Devices that only count their memory in use, as real devices do
    /// ([`super::on_counting_devices`]).
    CountingOnly,
    /// Devices whose layout kernels write fresh memory
    /// ([`super::on_copying_kernels`]): the runtime's outputs hold nothing
    /// of the provider's.
    CopyingKernels,
}

impl Devices {
    /// `@counting-devices`, `@copying-kernels`, or nothing.
    pub fn suffix(self) -> &'static str {
        match self {
            Devices::AsBuilt => "",
            Devices::CountingOnly => "@counting-devices",
            Devices::CopyingKernels => "@copying-kernels",
        }
    }
}

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
    /// How it is run.
    pub exercised: Exercised,
    /// On which devices.
    pub devices: Devices,
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
            exercised: Exercised::Plainly,
            devices: Devices::AsBuilt,
            applies,
        }
    }

    fn hanging(mut self) -> Self {
        self.deadline = HANG_DEADLINE;
        self
    }

    fn exercised(mut self, how: Exercised) -> Self {
        self.exercised = how;
        self
    }

    fn on(mut self, devices: Devices) -> Self {
        self.devices = devices;
        self
    }

    /// The broken provider's name: its faults joined by `+`, and
    /// `@counting-devices` or `@copying-kernels` where it runs on such
    /// devices.
    pub fn name(&self) -> String {
        let faults = self
            .faults
            .iter()
            .map(|fault| fault.name())
            .collect::<Vec<_>>()
            .join("+");
        format!("{faults}{}", self.devices.suffix())
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

pub(super) fn always(_: &Case, _: &Route) -> bool {
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

fn is_simulated(endpoint: &tenferro_transfer_harness::Endpoint) -> bool {
    endpoint.downcast::<SimDevice>().is_some()
}

/// A route with a simulated device on either side.
fn simulated_device(_: &Case, route: &Route) -> bool {
    is_simulated(route.source()) || is_simulated(route.destination())
}

/// Where the driver-thread leak lands: the destination's simulated memory,
/// else the source's simulated or managed memory (not plain host).
fn driver_thread_lands(_: &Case, route: &Route) -> bool {
    is_simulated(route.destination())
        || matches!(route.source().storage_rule(), StorageRule::Domain { .. })
}

/// Inputs in simulated memory (a simulated device's, or a host domain's),
/// which the input-writing fault can reach; an empty one has no bytes.
fn input_in_simulated_memory(case: &Case, route: &Route) -> bool {
    !case.is_empty() && matches!(route.source().storage_rule(), StorageRule::Domain { .. })
}

/// Outputs in a simulated device's memory, which the pool can hand out
/// again; an empty one has no bytes to change.
fn output_in_simulated_memory(case: &Case, route: &Route) -> bool {
    !case.is_empty() && is_simulated(route.destination())
}

fn non_empty(case: &Case, _: &Route) -> bool {
    !case.is_empty()
}

/// Cases with interior elements, which a twin changes (its first and last
/// stay).
fn interior(case: &Case, _: &Route) -> bool {
    case.len() >= 3
}

/// Cases whose seeded values differ between threads: a bool of a few
/// elements may draw the same values twice.
fn distinct_concurrent_values(case: &Case, _: &Route) -> bool {
    case.len() >= 2 && (case.dtype() != DType::Bool || case.len() >= 16)
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
        BrokenSpec::new(vec![F::Leaky], vec![R::NoLeak], simulated_device)
            .on(Devices::CountingOnly),
        BrokenSpec::new(
            vec![F::LeaksOnDriverThread],
            vec![R::NoLeak],
            driver_thread_lands,
        ),
        BrokenSpec::new(
            vec![F::WritesInput],
            vec![R::InputIntact],
            input_in_simulated_memory,
        ),
        BrokenSpec::new(
            vec![F::ReusesLiveOutput],
            vec![R::OutputStable],
            output_in_simulated_memory,
        )
        .exercised(Exercised::Held),
        // Only the runtime holds the provider's output, within a run of
        // two inputs: the pool hands its allocation to the second.
        BrokenSpec::new(
            vec![F::ReusesLiveOutput],
            vec![R::OutputStable],
            output_in_simulated_memory,
        )
        .exercised(Exercised::Together)
        .on(Devices::CopyingKernels),
        BrokenSpec::new(
            vec![F::SharedStagingSlot],
            vec![R::Values],
            distinct_concurrent_values,
        )
        .exercised(Exercised::ConcurrentTwins),
        BrokenSpec::new(vec![F::SampledContentCache], vec![R::Values], interior)
            .exercised(Exercised::Twins),
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
