//! The self-test's catalogue: the broken providers and device fault plans,
//! each with the rules it must break and the cases it applies to.

mod applies;

use std::time::Duration;

use tenferro_mock_devices::FaultPlan;
use tenferro_mock_devices::providers::Fault;
use tenferro_transfer_harness::{Case, Judgement, Route, Rule};

use super::report::CaseCheck;
pub(super) use applies::always;
use applies::{
    asymmetric_shape, device_destination, distinct_concurrent_values, domain_destination,
    driver_thread_lands, few_tiny_cases, has_negative_zero, has_payload_nan, has_two_distinct,
    input_in_simulated_memory, interior, non_empty, non_empty_on_sim, non_empty_sim_destination,
    non_host_destination, offset_matters, output_in_simulated_memory, sim_destination,
    sim_endpoint, simulated_device, strides_matter, suffix_differs_from_poison, tiny_on_sim,
};

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

/// The self-test's broken providers: at least one per rule the built-in
/// routes can break, and two with two faults at once.
pub fn catalogue() -> Vec<BrokenSpec> {
    [
        metadata_faults(),
        value_faults(),
        outcome_faults(),
        memory_faults(),
        stateful_faults(),
        buffer_faults(),
        combined_faults(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The broken providers that get what the output is wrong: its dtype, shape,
/// length, placement or residency.
fn metadata_faults() -> Vec<BrokenSpec> {
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
    ]
}

/// The broken providers that get the output's values wrong.
fn value_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
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
    ]
}

/// The broken providers that end a call wrongly: an error on a valid case,
/// a panic, a return before the copy completes, a copy cut short.
fn outcome_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
        BrokenSpec::new(vec![F::ErrOnValid], vec![R::NoError], always),
        BrokenSpec::new(vec![F::Panic], vec![R::NoPanic], always),
        BrokenSpec::new(vec![F::EarlyReturn], vec![R::Completion], sim_destination),
        BrokenSpec::new(
            vec![F::PartialCopy],
            vec![R::Values],
            suffix_differs_from_poison,
        ),
    ]
}

/// The broken providers that mishandle memory: leaks, writes to the input,
/// an output handed out again while it is still live.
fn memory_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
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
    ]
}

/// The broken providers that only show on a schedule: state shared between
/// threads or calls, and a call that never returns.
fn stateful_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
        BrokenSpec::new(
            vec![F::SharedStagingSlot],
            vec![R::Values],
            distinct_concurrent_values,
        )
        .exercised(Exercised::ConcurrentTwins),
        BrokenSpec::new(vec![F::SampledContentCache], vec![R::Values], interior)
            .exercised(Exercised::Twins),
        BrokenSpec::new(vec![F::Hang], vec![R::Deadline], few_tiny_cases).hanging(),
    ]
}

/// The broken providers whose copy or returned buffer misbehaves: panics
/// mid-copy or in the buffer's methods, an unstable length, a short read.
fn buffer_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
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
    ]
}

/// The broken providers with two faults at once.
fn combined_faults() -> Vec<BrokenSpec> {
    use Fault as F;
    use Rule as R;
    vec![
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
