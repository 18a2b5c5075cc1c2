//! What the fuzz targets in `fuzz/` check, as library code: the targets are
//! thin `fuzz_target!` wrappers around [`ContractFuzzer::run`] and
//! [`HostFuzzer::run`], so a crash input replays under `cargo test` (see
//! `conformance/tests/fuzz_regressions.rs`) exactly as under libFuzzer.
//! The two fuzzers share their decoding, watchdog cache and failure type; the
//! `host_provider` one is in `host.rs`. A vendor's fuzzing is
//! `ProviderSuite::fuzzer`, elsewhere.
//!
//! Inputs decode (through `arbitrary`) into the vocabulary the rest of the
//! suite uses: a [`Recipe`] as the proptest strategies draw it, [`Fault`]s
//! of the broken providers, a device [`FaultPlan`]. What must hold comes
//! from the self-test's own declarations ([`selftest::catalogue`],
//! [`selftest::device_faults`], [`CaseCheck`]); nothing is re-stated here.
//!
//! # Examples
//!
//! ```
//! use tenferro_transfer_conformance::fuzzing::{Checked, ContractFuzzer};
//!
//! let mut fuzzer = ContractFuzzer::new();
//! // No bytes: an owned rank-0 F32 case through the first built-in
//! // provider, fault-free, which must pass.
//! assert_eq!(fuzzer.run(&[]).unwrap(), Checked::ReferencePassed);
//! ```

mod host;
mod watchdogs;

pub use host::HostFuzzer;
use watchdogs::{Making, WatchdogPool};

use crate::runner::{CaseHook, CaseRun, JudgedAs, merged, run_cases_keeping};
use std::fmt;
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use tenferro_mock_devices::providers::Fault;
use tenferro_mock_devices::{FaultPlan, TraceEvent};
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{
    Case, HarnessError, Judgement, Outcome, Route, Rule, Violation, Watchdog,
};

use crate::selftest::{
    self, BrokenSpec, CaseCheck, DeviceFaultSpec, Devices, Exercised, HANG_DEADLINE,
};
use crate::{BUILTIN_PROVIDERS, BuiltinProvider};

/// How every panic a broken provider injects on purpose begins. A fuzz
/// target's panic hook lets these through (the Spy catches them and the
/// oracle reports `no-panic`) and turns every other panic into a crash.
pub const INJECTED_PANIC_PREFIX: &str = "injected panic";

/// The most faults one decoded input injects at once.
pub const MAX_FAULTS: usize = 2;

/// What a fuzz target found wrong: each is a crash.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FuzzFailure {
    /// A decoded recipe is not a valid case: the decoder or the case
    /// validation is wrong.
    #[error("decoded recipe {recipe} is not a valid case")]
    InvalidRecipe {
        /// The recipe, as JSON.
        recipe: String,
        /// Why the case was refused.
        #[source]
        source: HarnessError,
    },
    /// The harness could not build a watchdog or run a case.
    #[error("the harness failed on {context}")]
    Harness {
        /// The provider, route and recipe.
        context: String,
        /// The harness's error.
        #[source]
        source: HarnessError,
    },
    /// The oracle's verdict disagreed with the runtime's.
    #[error("runtime-agreement broke on {context}: {message}")]
    RuntimeDisagreement {
        /// The provider, route and recipe.
        context: String,
        /// The oracle's message.
        message: String,
    },
    /// A provider did not show exactly what the self-test declares for it.
    #[error("{provider} on {context}: {check:?}")]
    KillMatrix {
        /// The provider's name in the kill matrix.
        provider: String,
        /// The route and recipe.
        context: String,
        /// The missed rules, false alarms and missing expected error.
        check: CaseCheck,
    },
    /// The host provider did not deliver the values bit-exactly.
    #[error("host provider on {context}: {message}")]
    HostValues {
        /// The recipe.
        context: String,
        /// What differed.
        message: String,
    },
}

/// What a case was held to.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Checked {
    /// A fault-free reference provider, which passed.
    ReferencePassed,
    /// A broken provider of the self-test's catalogue on a case where its
    /// fault applies: exactly its rules fired.
    Caught {
        /// The broken provider's name.
        provider: String,
    },
    /// A device fault plan of the self-test on a case where it applies:
    /// exactly its rules fired (and the expected error came).
    DeviceFaultCaught {
        /// The plan's name (`device:<name>`).
        plan: String,
    },
    /// Faults or a plan the self-test declares nothing for, or a case where
    /// they do not apply: only the harness's own invariants were checked
    /// (no harness panic, runtime agreement; for a reference provider under
    /// a plan, no panic and no error, and a pass where nothing was injected).
    Invariants,
    /// Not run: a hang costs a whole deadline, so hangs run only on the few
    /// cases where the self-test runs them.
    SkippedHang,
    /// Not run: the route cannot run the case here (a skip with the
    /// reason, never a pass and never a crash).
    Skipped {
        /// Why.
        reason: String,
    },
}

/// One decoded input of `transfer_contract`.
#[derive(Clone, Debug)]
pub struct ContractInput {
    /// The case.
    pub recipe: Recipe,
    /// The built-in provider and route (an index into [`BUILTIN_PROVIDERS`]).
    pub provider: usize,
    /// Faults injected into the provider (at most [`MAX_FAULTS`]); when
    /// empty, the provider is a reference provider.
    pub faults: Vec<Fault>,
    /// The device fault plan a reference provider meets (ignored when
    /// `faults` is not empty, as in the self-test).
    pub plan: FaultPlan,
}

impl<'a> Arbitrary<'a> for ContractInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let provider = u.choose_index(BUILTIN_PROVIDERS.len())?;
        let count = u.int_in_range(0..=MAX_FAULTS)?;
        let faults = (0..count)
            .map(|_| Fault::arbitrary(u))
            .collect::<arbitrary::Result<Vec<_>>>()?;
        let plan = if faults.is_empty() {
            FaultPlan::arbitrary(u)?
        } else {
            FaultPlan::new()
        };
        // The recipe last: most of the bytes are its values' seed and
        // layout, and a truncated input still names a behaviour.
        let recipe = Recipe::arbitrary(u)?;
        Ok(Self {
            recipe,
            provider,
            faults,
            plan,
        })
    }
}

/// The `transfer_contract` fuzz target: a decoded case, route and provider
/// behaviour through the watchdog and the oracle, held to the self-test's
/// declarations.
pub struct ContractFuzzer {
    catalogue: Vec<BrokenSpec>,
    device_faults: Vec<DeviceFaultSpec>,
    pool: WatchdogPool,
}

impl Default for ContractFuzzer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ContractFuzzer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ContractFuzzer")
            .field("watchdogs", &self.pool.watchdogs.len())
            .finish_non_exhaustive()
    }
}

impl ContractFuzzer {
    /// A fuzzer with no watchdogs yet.
    pub fn new() -> Self {
        Self {
            catalogue: selftest::catalogue(),
            device_faults: selftest::device_faults(),
            pool: WatchdogPool::default(),
        }
    }

    /// Decode `data` and check the case it names.
    ///
    /// # Errors
    ///
    /// A [`FuzzFailure`] for anything that must not happen: an invalid
    /// decoded case, a harness error, a disagreement with the runtime, a
    /// reference provider that fails, a broken provider or device fault
    /// that is not caught by exactly its rules.
    pub fn run(&mut self, data: &[u8]) -> Result<Checked, FuzzFailure> {
        // `arbitrary` answers defaults when bytes run out, so decoding a
        // `ContractInput` does not fail.
        let Ok(input) = ContractInput::arbitrary_take_rest(Unstructured::new(data)) else {
            return Ok(Checked::Invariants);
        };
        self.check(&input)
    }

    /// Check one decoded input.
    ///
    /// # Errors
    ///
    /// As [`ContractFuzzer::run`].
    pub fn check(&mut self, input: &ContractInput) -> Result<Checked, FuzzFailure> {
        let mut cases = decoded_cases(input)?;
        let index = input.provider % BUILTIN_PROVIDERS.len();
        let builtin = BUILTIN_PROVIDERS[index];
        let spec = declared_plainly(&self.catalogue, &input.faults);
        let plan = effective_plan(input);
        let hangs = input.faults.contains(&Fault::Hang) || plan.stalls();
        // A run of several inputs under a hang or a device's fault plan
        // would meet the plan's counters and the hang across inputs, which
        // the self-test declares for single cases: those run the first
        // input alone.
        if hangs || !plan.is_empty() {
            cases.truncate(1);
        }
        let case = cases[0].clone();
        // Only an input that may hang needs a worker and its deadline.
        let deadline = hangs.then_some(HANG_DEADLINE);
        let watchdog = pooled_watchdog(&mut self.pool, builtin, index, input, deadline)?;
        let route = watchdog.route().clone();
        // Written out only for a failure: most inputs pass, and the
        // recipe's JSON was a few per cent of an input's time.
        let context = InputContext {
            route: &route,
            provider: builtin.name,
            plan: &plan,
            recipe: &input.recipe,
        };
        let behaviour = (input.faults.as_slice(), &plan);
        if hangs
            && !hang_tried(
                &self.catalogue,
                &self.device_faults,
                behaviour,
                &case,
                &route,
            )
        {
            return Ok(Checked::SkippedHang);
        }
        let runs = run_cases_keeping(
            watchdog,
            &route,
            &cases,
            JudgedAs::Inside,
            Some(&plan as &dyn CaseHook),
            Box::new,
        );
        let reached = reached_cases(&cases, &runs);
        // Every input of the run judged, as one judgement.
        let (judgement, outcome) = match merged(&cases, runs) {
            Ok((judgement, outcome)) => (judgement, *outcome),
            Err(HarnessError::Unavailable { reason }) => return Ok(Checked::Skipped { reason }),
            Err(source) => {
                return Err(FuzzFailure::Harness {
                    context: context.to_string(),
                    source,
                });
            }
        };
        agrees_with_runtime(judgement.violations(), &context)?;
        self.held_to_declarations(
            spec,
            &JudgedInput {
                builtin,
                faults: &input.faults,
                plan: &plan,
                reached: &reached,
                case: &case,
                route: &route,
                judgement: &judgement,
                outcome: &outcome,
                context: &context,
            },
        )
    }

    /// Hold a judged input to what the self-test declares for it: the
    /// broken provider `spec` its faults make, a reference provider's pass,
    /// or a device fault plan's rules; else only the invariants.
    fn held_to_declarations(
        &self,
        spec: Option<&BrokenSpec>,
        judged: &JudgedInput<'_>,
    ) -> Result<Checked, FuzzFailure> {
        if let Some(spec) = spec {
            if !judged
                .reached
                .iter()
                .any(|case| spec.applies(case, judged.route))
            {
                return Ok(Checked::Invariants);
            }
            return measured(spec.name(), spec.check(judged.judgement), judged.context)
                .map(|provider| Checked::Caught { provider });
        }
        if !judged.faults.is_empty() {
            return Ok(Checked::Invariants);
        }
        if judged.plan.is_empty() {
            return measured(
                format!("reference:{}", judged.builtin.name),
                CaseCheck::of(&[], false, judged.judgement),
                judged.context,
            )
            .map(|_| Checked::ReferencePassed);
        }
        let device = self
            .device_faults
            .iter()
            .find(|spec| spec.plan == *judged.plan);
        match device {
            Some(spec) if spec.applies(judged.case, judged.route) => measured(
                format!("device:{}", spec.name),
                spec.check(judged.judgement),
                judged.context,
            )
            .map(|plan| Checked::DeviceFaultCaught { plan }),
            _ => reference_under_plan(
                judged.builtin,
                judged.outcome,
                judged.judgement,
                judged.context,
            ),
        }
    }
}

/// What a failure names of an input: its route, provider, device fault
/// plan and recipe (as JSON).
struct InputContext<'a> {
    route: &'a Route,
    provider: &'a str,
    plan: &'a FaultPlan,
    recipe: &'a Recipe,
}

impl fmt::Display for InputContext<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} [{}] under `{}`: {}",
            self.route.label(),
            self.provider,
            self.plan,
            self.recipe.to_json()
        )
    }
}

/// One input's run once judged, with what it is held to: its built-in
/// provider, faults and plan, the cases the run reached and its first
/// case, its route, judgement and outcome, and the context a failure
/// names.
struct JudgedInput<'a> {
    builtin: BuiltinProvider,
    faults: &'a [Fault],
    plan: &'a FaultPlan,
    /// The cases whose input reached the provider: a run that the runtime
    /// stopped at an earlier input's output (a residency or placement
    /// violation it checks) never moves the later ones, so a broken
    /// provider's fault can show only on the inputs before.
    reached: &'a [Case],
    case: &'a Case,
    route: &'a Route,
    judgement: &'a Judgement,
    outcome: &'a Outcome,
    context: &'a dyn fmt::Display,
}

/// The cases of a run whose input reached the provider: the first, where
/// every run starts (as a single input was always held to its faults,
/// whatever its call recorded), and each later one the Spy saw a call for.
fn reached_cases(cases: &[Case], runs: &[CaseRun<Box<Outcome>>]) -> Vec<Case> {
    cases
        .iter()
        .zip(runs)
        .enumerate()
        .filter(|(index, (_, run))| {
            *index == 0 || matches!(run, Ok((_, outcome)) if !outcome.calls.is_empty())
        })
        .map(|(_, (case, _))| case.clone())
        .collect()
}

/// The pooled watchdog of `builtin` (at `index`) with `input`'s faults,
/// under `deadline`; a harness error names the provider and the recipe.
fn pooled_watchdog<'p>(
    pool: &'p mut WatchdogPool,
    builtin: BuiltinProvider,
    index: usize,
    input: &ContractInput,
    deadline: Option<Duration>,
) -> Result<&'p mut Watchdog, FuzzFailure> {
    let making = Making {
        route: || builtin.route(),
        reference: |route: &Route| builtin.provider(route),
    };
    pool.get(index, &input.faults, deadline, making)
        .map_err(|source| FuzzFailure::Harness {
            context: format!("{} {}", builtin.name, input.recipe.to_json()),
            source,
        })
}

/// The cases `input`'s recipe names.
fn decoded_cases(input: &ContractInput) -> Result<Vec<Case>, FuzzFailure> {
    input
        .recipe
        .cases()
        .map_err(|source| FuzzFailure::InvalidRecipe {
            recipe: input.recipe.to_json(),
            source,
        })
}

/// The catalogue's broken provider with exactly `faults`, where it is
/// declared for a case run plainly on the built-in routes.
fn declared_plainly<'a>(catalogue: &'a [BrokenSpec], faults: &[Fault]) -> Option<&'a BrokenSpec> {
    catalogue
        .iter()
        // One case at a time on the built-in routes: only what is
        // exercised plainly is declared for such a case (a provider that
        // needs its outputs held, or devices that only count, shows on
        // the self-test's own runs).
        .find(|spec| {
            spec.faults == faults
                && spec.exercised == Exercised::Plainly
                && spec.devices == Devices::AsBuilt
        })
}

/// The device fault plan `input` runs under: its own for a reference
/// provider, none where faults are injected (as in the self-test).
fn effective_plan(input: &ContractInput) -> FaultPlan {
    if input.faults.is_empty() {
        input.plan.clone()
    } else {
        FaultPlan::new()
    }
}

/// Whether a hang is tried on `case`: a `hang` fault only where the
/// self-test tries the `hang` provider, a plan whose copy may never
/// complete only where it tries `never-complete`.
fn hang_tried(
    catalogue: &[BrokenSpec],
    device_faults: &[DeviceFaultSpec],
    (faults, plan): (&[Fault], &FaultPlan),
    case: &Case,
    route: &Route,
) -> bool {
    let hang = !faults.contains(&Fault::Hang)
        || catalogue
            .iter()
            .any(|spec| spec.faults == [Fault::Hang] && spec.applies(case, route));
    let stall = !plan.stalls()
        || device_faults
            .iter()
            .any(|spec| spec.plan.stalls() && spec.applies(case, route));
    hang && stall
}

fn agrees_with_runtime(
    violations: &[Violation],
    context: &dyn fmt::Display,
) -> Result<(), FuzzFailure> {
    match violations
        .iter()
        .find(|violation| violation.rule == Rule::RuntimeAgreement)
    {
        Some(violation) => Err(FuzzFailure::RuntimeDisagreement {
            context: context.to_string(),
            message: violation.message.clone(),
        }),
        None => Ok(()),
    }
}

/// `Ok(provider)` when `check` passed, else the kill-matrix failure.
fn measured(
    provider: String,
    check: CaseCheck,
    context: &dyn fmt::Display,
) -> Result<String, FuzzFailure> {
    if check.passed() {
        Ok(provider)
    } else {
        Err(FuzzFailure::KillMatrix {
            provider,
            context: context.to_string(),
            check,
        })
    }
}

/// A reference provider under a plan the self-test declares nothing for:
/// it never panics and never swallows or garbles a device error, whatever
/// the device does; and where the device injected nothing, it passes.
fn reference_under_plan(
    builtin: BuiltinProvider,
    outcome: &Outcome,
    judgement: &Judgement,
    context: &dyn fmt::Display,
) -> Result<Checked, FuzzFailure> {
    let injected = outcome
        .trace
        .iter()
        .any(|event| matches!(event, TraceEvent::FaultInjected { .. }));
    // What an injected fault may show: a silent partial copy shows in the
    // values, a copy that never completes as a deadline.
    let explained: &[Rule] = if injected {
        &[Rule::Values, Rule::Deadline]
    } else {
        &[]
    };
    let check = CaseCheck {
        false_alarms: judgement
            .violations()
            .iter()
            .filter(|violation| !explained.contains(&violation.rule))
            .cloned()
            .collect(),
        ..CaseCheck::default()
    };
    measured(format!("reference:{}", builtin.name), check, context).map(|_| Checked::Invariants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(rules: &[Rule]) -> Vec<Violation> {
        rules
            .iter()
            .map(|&rule| Violation {
                rule,
                message: format!("{rule} broke"),
            })
            .collect()
    }

    #[test]
    fn a_disagreement_with_the_runtime_is_a_failure() {
        assert!(agrees_with_runtime(&judged(&[Rule::Values]), &"case").is_ok());
        assert!(matches!(
            agrees_with_runtime(&judged(&[Rule::RuntimeAgreement]), &"case"),
            Err(FuzzFailure::RuntimeDisagreement { .. })
        ));
    }

    #[test]
    fn a_missed_or_extra_rule_is_a_failure() {
        let check = CaseCheck::of_violations(&[Rule::Dtype], false, &judged(&[Rule::Values]), &[]);
        let failure = measured("broken".to_owned(), check, &"case").unwrap_err();
        let FuzzFailure::KillMatrix { check, .. } = failure else {
            panic!("{failure:?}");
        };
        assert_eq!(check.missed, vec![Rule::Dtype]);
        assert_eq!(check.false_alarms.len(), 1);
    }
}
