//! The fuzz targets' inputs under `cargo test`: every checked-in seed and
//! every minimised crash (`fuzz/regressions/<target>/`) goes through the
//! same checks as under libFuzzer (`tenferro_transfer_conformance::fuzzing`),
//! and the seeds must keep reaching what they were chosen for.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tenferro_transfer_conformance::fuzzing::{
    Checked, ContractFuzzer, HostFuzzer, INJECTED_PANIC_PREFIX,
};
use tenferro_transfer_conformance::harness::{ProviderResult, Route, Watchdog, panic_message};
use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, selftest};

fn fuzz_dir(kind: &str, target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join(target)
}

/// Every input file of `dir` (not a dotfile, not Markdown), sorted, with
/// its name.
fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_file())
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            !name.starts_with('.') && !name.ends_with(".md")
        })
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let data = std::fs::read(entry.path()).unwrap();
            (name, data)
        })
        .collect();
    files.sort();
    files
}

fn quiet_injected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_message(info.payload()).starts_with(INJECTED_PANIC_PREFIX) {
            default(info);
        }
    }));
}

#[test]
fn transfer_contract_seeds_and_regressions_pass_and_reach_every_declared_provider() {
    quiet_injected_panics();
    let mut fuzzer = ContractFuzzer::new();
    let mut reached = BTreeSet::new();
    let seeds = inputs(&fuzz_dir("seeds", "transfer_contract"));
    assert!(
        !seeds.is_empty(),
        "no seeds in fuzz/seeds/transfer_contract"
    );
    let regressions = inputs(&fuzz_dir("regressions", "transfer_contract"));
    for (name, data) in seeds.iter().chain(&regressions) {
        match fuzzer.run(data) {
            Ok(Checked::Caught { provider }) => reached.insert(format!("broken-{provider}")),
            Ok(Checked::DeviceFaultCaught { plan }) => reached.insert(plan.replace(':', "-")),
            Ok(Checked::ReferencePassed) => reached.insert("reference".to_owned()),
            Ok(_) => false,
            Err(failure) => panic!("{name}: {failure}"),
        };
    }
    // The fuzzer judges one case at a time on the built-in routes: what
    // needs outputs held, or devices that only count, is the self-test's.
    let missing: Vec<String> = selftest::catalogue()
        .iter()
        .filter(|spec| {
            spec.exercised == selftest::Exercised::Plainly
                && spec.devices == selftest::Devices::AsBuilt
        })
        .map(|spec| format!("broken-{}", spec.name()))
        .chain(
            selftest::device_faults()
                .iter()
                .map(|spec| format!("device-{}", spec.name)),
        )
        .chain(["reference".to_owned()])
        .filter(|class| !reached.contains(class))
        .collect();
    assert!(
        missing.is_empty(),
        "the seeds no longer reach {missing:?}; regenerate them: cargo run --release -p tenferro-transfer-conformance --example fuzz_seeds"
    );
}

#[test]
fn host_provider_seeds_and_regressions_arrive_bit_exact() {
    let mut fuzzer = HostFuzzer::new();
    let seeds = inputs(&fuzz_dir("seeds", "host_provider"));
    assert!(!seeds.is_empty(), "no seeds in fuzz/seeds/host_provider");
    for (name, data) in seeds
        .iter()
        .chain(&inputs(&fuzz_dir("regressions", "host_provider")))
    {
        if let Err(failure) = fuzzer.run(data) {
            panic!("{name}: {failure}");
        }
    }
}

/// The fuzz targets' panic hook tells deliberate panics by this prefix; if
/// the broken providers' messages change, every `panic` input would crash.
#[test]
fn injected_panics_start_with_the_prefix_the_fuzz_hook_lets_through() {
    quiet_injected_panics();
    for fault in [Fault::Panic, Fault::PanicMidCopy] {
        let builtin = BUILTIN_PROVIDERS[0];
        let route: Route = builtin.route().unwrap();
        let broken = Broken::new(builtin.provider(&route).unwrap(), vec![fault]);
        let mut watchdog = Watchdog::new(
            route,
            std::sync::Arc::new(broken),
            selftest::SELFTEST_DEADLINE,
        )
        .unwrap();
        let case =
            tenferro_transfer_conformance::harness::Case::from_values(vec![2], vec![1.0_f64, -0.0])
                .unwrap();
        let outcome = watchdog.run(&case).unwrap();
        let Some(ProviderResult::Panicked { message }) = outcome.call().map(|call| &call.result)
        else {
            panic!("{fault:?} did not panic: {outcome:?}");
        };
        assert!(message.starts_with(INJECTED_PANIC_PREFIX), "{message}");
    }
}

/// A catalogued fault is held to its rules; a fault the self-test has no
/// row for only to the harness's invariants.
#[test]
fn catalogued_faults_are_held_to_their_rules_and_others_to_invariants() {
    use tenferro_transfer_conformance::fuzzing::ContractInput;
    use tenferro_transfer_conformance::harness::strategy::Recipe;
    use tenferro_transfer_conformance::mock_devices::FaultPlan;
    let recipe: Recipe =
        r#"{"dtype":"F64","shape":[3],"layout":{"kind":"owned"},"seed":1,"specials":0}"#
            .parse()
            .unwrap();
    let mut fuzzer = ContractFuzzer::new();
    let input = |faults| ContractInput {
        recipe: recipe.clone(),
        provider: 0,
        faults,
        plan: FaultPlan::new(),
    };
    assert_eq!(
        fuzzer.check(&input(vec![Fault::OneUlp])).unwrap(),
        Checked::Caught {
            provider: "one-ulp".to_owned()
        }
    );
    assert_eq!(
        fuzzer
            .check(&input(vec![Fault::CornerC64OddLastDim]))
            .unwrap(),
        Checked::Invariants
    );
    assert_eq!(
        fuzzer.check(&input(vec![])).unwrap(),
        Checked::ReferencePassed
    );
}
