//! Row 2: fresh generated cases per second through the whole path the
//! generated suite takes (proptest draws a recipe, the case is built, the
//! watchdog's worker runs it through the rig, the oracle judges it), for
//! tensors of up to 16 elements, beside a bare `Runtime::run` of a tiny
//! tensor with its `Prepared` reused (the floor).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod support;

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use tenferro_transfer_conformance::BUILTIN_PROVIDERS;
use tenferro_transfer_conformance::harness::strategy::{Capabilities, Profile, Recipe, recipe};
use tenferro_transfer_conformance::harness::{
    Case, DEFAULT_DEADLINE, Oracle, Rig, Route, Watchdog,
};

use support::{BareRun, interleaved, report, stage, timed};

const MAX_ELEMENTS: usize = 16;
const GOAL: f64 = 20_000.0;

/// The first `cases` recipes the generated bench draws from `seed`, as
/// cases: what the fresh-prepare floor runs.
fn drawn_cases(seed: u64, cases: usize) -> Vec<Case> {
    let mut bytes = [0_u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = recipe(
        Profile::Default,
        &Capabilities::all().max_elements(MAX_ELEMENTS),
    );
    (0..cases)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .expect("a recipe")
                .current()
                .case()
                .expect("a case")
        })
        .collect()
}

/// How one generated case spends its time: the same draws run `part` only.
#[derive(Clone, Copy)]
enum Part<'a> {
    /// The proptest draw and the case built from it, nothing run.
    Draw,
    /// The draw, then the rig on the calling thread (no Watchdog hand-off)
    /// and the oracle.
    RigHere(&'a RefCell<Rig>),
}

/// A runner for the next stream of `cases` draws (a fresh seed each
/// time) and the generated suite's strategy for tensors of up to
/// `MAX_ELEMENTS` elements.
fn next_stream(seed: &Cell<u64>, cases: u64) -> (TestRunner, BoxedStrategy<Recipe>) {
    seed.set(seed.get() + 1);
    let config = Config {
        cases: cases as u32,
        failure_persistence: None,
        ..Config::default()
    };
    let mut bytes = [0_u8; 32];
    bytes[..8].copy_from_slice(&seed.get().to_le_bytes());
    let runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = recipe(
        Profile::Default,
        &Capabilities::all().max_elements(MAX_ELEMENTS),
    );
    (runner, strategy)
}

/// `cases` draws of the generated bench's stream doing `part` only.
fn generated_part(part: Part<'_>, route: &Route, seed: &Cell<u64>, cases: u64) -> Duration {
    let (mut runner, strategy) = next_stream(seed, cases);
    let start = Instant::now();
    runner
        .run(&strategy, |recipe| {
            let case = recipe
                .case()
                .map_err(|error| TestCaseError::fail(error.to_string()))?;
            if let Part::RigHere(rig) = part {
                let outcome = rig
                    .borrow_mut()
                    .run(&case)
                    .map_err(|error| TestCaseError::fail(error.to_string()))?;
                std::hint::black_box(Oracle.judge(&case, route, &outcome).passed());
            }
            Ok(())
        })
        .expect("every draw builds a case");
    start.elapsed()
}

/// Run `cases` generated cases and return how long they took.
fn generated(watchdog: &RefCell<Watchdog>, seed: &Cell<u64>, cases: u64) -> Duration {
    let (mut runner, strategy) = next_stream(seed, cases);
    let start = Instant::now();
    runner
        .run(&strategy, |recipe| {
            let case = recipe
                .case()
                .map_err(|error| TestCaseError::fail(error.to_string()))?;
            // Judged on the worker, as the suite judges (the outcome is
            // dropped where it was made); the judgement comes back.
            let judgement = watchdog
                .borrow_mut()
                .run_together_then(std::slice::from_ref(&case), |route, case, outcome| {
                    Oracle.judge(case, route, &outcome)
                })
                .map_err(|error| TestCaseError::fail(error.to_string()))?
                .pop()
                .expect("one input, one judgement");
            if judgement.passed() {
                Ok(())
            } else {
                Err(TestCaseError::fail(
                    judgement.violations()[0].message.clone(),
                ))
            }
        })
        .expect("every generated case passes");
    start.elapsed()
}

fn bench(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("generated-throughput");
    group.throughput(Throughput::Elements(1));
    let mut results = Vec::new();
    for provider in &BUILTIN_PROVIDERS {
        let route = provider.route().expect("route");
        let inner = provider.provider(&route).expect("provider");
        let watchdog = RefCell::new(
            Watchdog::new(route.clone(), Arc::clone(&inner), DEFAULT_DEADLINE).expect("watchdog"),
        );
        let mut bare = BareRun::new(&route, inner, stage(route.source(), vec![1.5_f64, -0.0]));
        let seed = Cell::new(0);
        group.bench_function(format!("{} generated case", provider.name), |b| {
            b.iter_custom(|cases| generated(&watchdog, &seed, cases))
        });
        let ratio = interleaved(
            9,
            &mut |cases| generated(&watchdog, &seed, cases),
            &mut timed(|| bare.run()),
        );
        // The same stream of cases, each compiled, prepared and run afresh
        // on a bare runtime: the floor a generated case is held to.
        let floor_cases = drawn_cases(1, 4096);
        let mut next = 0;
        let fresh = interleaved(
            9,
            &mut |cases| generated(&watchdog, &seed, cases),
            &mut timed(|| {
                bare.run_fresh(&route, &floor_cases[next % floor_cases.len()]);
                next += 1;
            }),
        );
        // Where a case's time goes beyond the floor: the draw alone, and
        // the rig on the calling thread without the Watchdog's hand-off.
        let rig = RefCell::new(
            Rig::new(route.clone(), provider.provider(&route).expect("provider")).expect("rig"),
        );
        let parts = interleaved(
            9,
            &mut |cases| generated_part(Part::Draw, &route, &seed, cases),
            &mut |cases| generated_part(Part::RigHere(&rig), &route, &seed, cases),
        );
        println!(
            "PARTS 2 {}: draw and case {:.1} us; draw, rig on this thread and oracle {:.1} us; fresh-prepare floor {:.1} us; whole path {:.1} us",
            provider.name,
            parts.ours.as_secs_f64() * 1e6,
            parts.baseline.as_secs_f64() * 1e6,
            fresh.baseline.as_secs_f64() * 1e6,
            fresh.ours.as_secs_f64() * 1e6,
        );
        results.push((provider.name, ratio, fresh));
    }
    group.finish();
    for (name, ratio, fresh) in results {
        let rate = 1.0 / ratio.ours.as_secs_f64();
        report(
            &format!("2 generated-case throughput, {name}, <= {MAX_ELEMENTS} elements"),
            &format!(
                "{rate:.0} cases/s (bare Runtime::run floor: {:.0} runs/s, {:.2}x the floor's time)",
                1.0 / ratio.baseline.as_secs_f64(),
                ratio.slowdown()
            ),
            rate / GOAL,
            ">= 1 (20,000 cases/s)",
        );
        report(
            &format!("2 generated case vs a fresh compile, prepare and run, {name}"),
            &format!(
                "{:.1} us vs {:.1} us a case",
                fresh.ours.as_secs_f64() * 1e6,
                fresh.baseline.as_secs_f64() * 1e6
            ),
            fresh.speed(),
            ">= 0.8 of the fresh-prepare floor's speed",
        );
    }
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = bench
}
criterion_main!(benches);
