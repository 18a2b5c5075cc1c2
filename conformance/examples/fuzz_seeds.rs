//! Writes the checked-in seed corpus of the fuzz targets
//! (`fuzz/seeds/<target>/`): deterministic pseudo-random inputs, kept when
//! they reach something no earlier seed reached (a built-in provider's
//! reference pass on an owned tensor, on a view and with inputs moved in
//! the same run, each broken provider of the self-test exercised plainly
//! caught on its rules, each `corner-*` fault, each device fault plan, each
//! dtype as an owned tensor and as a view).
//! A target's folder is written afresh.
//!
//! ```sh
//! cargo run --release -p tenferro-transfer-conformance --example fuzz_seeds
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use tenferro_transfer_conformance::BUILTIN_PROVIDERS;
use tenferro_transfer_conformance::fuzzing::{Checked, ContractFuzzer, ContractInput, HostFuzzer};
use tenferro_transfer_conformance::harness::Layout;
use tenferro_transfer_conformance::harness::strategy::Recipe;
use tenferro_transfer_conformance::mock_devices::providers::Fault;
use tenferro_transfer_conformance::selftest;

/// Inputs tried per target before giving up on classes not yet reached.
const TRIES: u64 = 60_000;

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            // splitmix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

fn write(dir: &Path, seeds: &BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    for (name, data) in seeds {
        std::fs::write(dir.join(name), data)?;
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = tenferro_transfer_conformance::harness::panic_message(info.payload());
        if !message.starts_with(tenferro_transfer_conformance::fuzzing::INJECTED_PANIC_PREFIX) {
            quiet(info);
        }
    }));

    let plainly = selftest::catalogue()
        .iter()
        .filter(|spec| {
            spec.exercised == selftest::Exercised::Plainly
                && spec.devices == selftest::Devices::AsBuilt
        })
        .count();
    let corners: Vec<Fault> = Fault::ALL
        .into_iter()
        .filter(|fault| fault.name().starts_with("corner-"))
        .collect();
    let wanted =
        plainly + corners.len() + selftest::device_faults().len() + 3 * BUILTIN_PROVIDERS.len();
    let mut contract = ContractFuzzer::new();
    let mut seeds = BTreeMap::new();
    for seed in 0..TRIES {
        let data = bytes(seed, 24 + (seed % 48) as usize);
        let Ok(input) = ContractInput::arbitrary_take_rest(Unstructured::new(&data)) else {
            continue;
        };
        let provider = BUILTIN_PROVIDERS[input.provider % BUILTIN_PROVIDERS.len()].name;
        let class = match contract.check(&input)? {
            Checked::ReferencePassed if !input.recipe.with.is_empty() => {
                format!("reference-{provider}-together")
            }
            Checked::ReferencePassed if matches!(input.recipe.layout, Layout::View(_)) => {
                format!("reference-{provider}-view")
            }
            Checked::ReferencePassed => format!("reference-{provider}"),
            Checked::Invariants
                if input.faults.len() == 1 && corners.contains(&input.faults[0]) =>
            {
                format!("broken-{}", input.faults[0].name())
            }
            Checked::Caught { provider } => format!("broken-{provider}"),
            Checked::DeviceFaultCaught { plan } => plan.replace(':', "-"),
            _ => continue,
        };
        seeds.entry(class).or_insert(data);
        if seeds.len() == wanted {
            break;
        }
    }
    write(&root.join("transfer_contract"), &seeds)?;

    let mut host = HostFuzzer::new();
    let mut seeds = BTreeMap::new();
    for seed in 0..TRIES {
        let data = bytes(seed, 16 + (seed % 200) as usize);
        let recipe = Recipe::arbitrary(&mut Unstructured::new(&data))?;
        let layout = match recipe.layout {
            Layout::View(_) => "view",
            _ => "owned",
        };
        host.run(&data)?;
        seeds
            .entry(format!("{}-{layout}", recipe.dtype.to_lowercase()))
            .or_insert(data);
        if seeds.len() == 14 {
            break;
        }
    }
    write(&root.join("host_provider"), &seeds)?;
    Ok(())
}
