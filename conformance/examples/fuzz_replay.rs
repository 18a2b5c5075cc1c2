//! Where `transfer_contract`'s time goes, without libFuzzer: replays a
//! corpus folder through `ContractFuzzer::run` in a release build, a few
//! passes in one shuffled order, and prints the mean time an input took on
//! each pass and, for the last pass, by its faults (one fault: by name;
//! more: by how many) and for inputs under a device fault plan.
//!
//! ```sh
//! cargo +nightly fuzz run transfer_contract /tmp/corpus fuzz/seeds/transfer_contract -- -max_total_time=240
//! cargo run --release -p tenferro-transfer-conformance --example fuzz_replay -- /tmp/corpus 3
//! ```
//!
//! The first pass builds the watchdogs and prepares their plans; the later
//! ones show an input's own cost.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use tenferro_transfer_conformance::fuzzing::{
    ContractFuzzer, ContractInput, INJECTED_PANIC_PREFIX,
};
use tenferro_transfer_conformance::harness::panic_message;

/// The kind of input `data` decodes into, for the table.
fn kind(data: &[u8]) -> String {
    match ContractInput::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(input) if input.faults.len() == 1 => format!("fault {:?}", input.faults[0]),
        Ok(input) if !input.faults.is_empty() => format!("{} faults", input.faults.len()),
        Ok(input) if !input.plan.is_empty() => "device fault plan".to_owned(),
        Ok(_) => "reference".to_owned(),
        Err(_) => "undecoded".to_owned(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let folder = args
        .next()
        .ok_or("usage: fuzz_replay <corpus folder> [passes]")?;
    let passes: usize = args.next().map_or(Ok(3), |passes| passes.parse())?;
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(&folder)? {
        inputs.push(std::fs::read(entry?.path())?);
    }
    if inputs.is_empty() {
        return Err(format!("no input in {folder}").into());
    }
    // One fixed order that is not the folder's (libFuzzer names inputs by
    // their hash, so neighbours are unrelated anyway): xorshift.
    inputs.sort();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for index in (1..inputs.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        inputs.swap(index, (state % (index as u64 + 1)) as usize);
    }
    // The broken providers' injected panics are caught and judged; the
    // default hook would print each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_message(info.payload()).starts_with(INJECTED_PANIC_PREFIX) {
            hook(info);
        }
    }));
    let kinds: Vec<String> = inputs.iter().map(|data| kind(data)).collect();
    let mut fuzzer = ContractFuzzer::new();
    let mut by_kind: BTreeMap<&str, (usize, Duration)> = BTreeMap::new();
    let mut failures = 0;
    for pass in 1..=passes {
        by_kind.clear();
        let start = Instant::now();
        for (data, kind) in inputs.iter().zip(&kinds) {
            let one = Instant::now();
            if fuzzer.run(data).is_err() {
                failures += 1;
            }
            let entry = by_kind.entry(kind).or_default();
            entry.0 += 1;
            entry.1 += one.elapsed();
        }
        let mean = start.elapsed().as_secs_f64() * 1e6 / inputs.len() as f64;
        println!(
            "pass {pass}: {} inputs, {mean:.1} us an input",
            inputs.len()
        );
    }
    let mut rows: Vec<_> = by_kind.into_iter().collect();
    rows.sort_by_key(|(_, (_, total))| std::cmp::Reverse(*total));
    println!("last pass by kind (inputs, us each, ms in all):");
    for (kind, (count, total)) in rows {
        println!(
            "  {kind}: {count}, {:.0}, {:.0}",
            total.as_secs_f64() * 1e6 / count as f64,
            total.as_secs_f64() * 1e3
        );
    }
    if failures > 0 {
        println!("{failures} runs failed (crashes of the fuzz target)");
    }
    Ok(())
}
