//! Row 1: the overhead of the harness on one tiny case. A harness case
//! (staging, the Spy's record and read-back, the leak check, the oracle)
//! against a bare `Runtime::run` with the same provider, program and
//! values, both with the `Prepared` reused. Row 1b runs the case as the
//! suite does, through a watchdog's worker; row 1c (no goal) sets row 1
//! beside a bare run that reads its output once, as a caller using the
//! result would.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tenferro_transfer_conformance::builtin_provider;
use tenferro_transfer_conformance::harness::{Case, DEFAULT_DEADLINE, Oracle, Rig, Watchdog};

use support::{BareRun, interleaved, report, stage, timed};

const VALUES: [f64; 2] = [1.5, -0.0];

fn bench(criterion: &mut Criterion) {
    let provider = builtin_provider("sim-upload").expect("sim-upload");
    let route = provider.route().expect("route");
    let inner = provider.provider(&route).expect("provider");
    let case = Case::from_values(vec![VALUES.len()], VALUES.to_vec()).expect("case");

    let mut bare = BareRun::new(
        &route,
        Arc::clone(&inner),
        stage(route.source(), VALUES.to_vec()),
    );
    let mut rig = Rig::new(route.clone(), Arc::clone(&inner)).expect("rig");
    let mut watchdog =
        Watchdog::new(route.clone(), Arc::clone(&inner), DEFAULT_DEADLINE).expect("watchdog");
    let mut rig_case = || {
        let outcome = rig.run(&case).expect("run");
        assert!(black_box(Oracle.judge(&case, &route, &outcome)).passed());
    };
    // As the suite runs a case: judged on the worker, where the outcome
    // was made (and dropped); the judgement comes back.
    let mut watchdog_case = || {
        let judgements = watchdog
            .run_together_then(std::slice::from_ref(&case), |route, case, outcome| {
                Oracle.judge(case, route, &outcome)
            })
            .expect("run");
        assert!(
            judgements
                .iter()
                .all(|judgement| black_box(judgement).passed())
        );
    };

    let mut group = criterion.benchmark_group("rig-overhead");
    group.bench_function("bare Runtime::run", |b| b.iter(|| bare.run()));
    group.bench_function("harness case (Rig + Oracle)", |b| b.iter(&mut rig_case));
    group.bench_function("harness case (Watchdog + Oracle)", |b| {
        b.iter(&mut watchdog_case)
    });
    group.finish();

    let per_case = |d: Duration| format!("{:.1} us", d.as_secs_f64() * 1e6);
    let ratio = interleaved(15, &mut timed(&mut rig_case), &mut timed(|| bare.run()));
    report(
        "1 rig overhead (Rig + Spy + Oracle vs bare Runtime::run, f64 [2], sim-upload)",
        &format!("{} vs {}", per_case(ratio.ours), per_case(ratio.baseline)),
        ratio.slowdown(),
        "<= 1.25",
    );
    let ratio = interleaved(
        15,
        &mut timed(&mut watchdog_case),
        &mut timed(|| bare.run()),
    );
    report(
        "1b suite path (Watchdog worker + Rig + Spy + Oracle vs bare Runtime::run)",
        &format!("{} vs {}", per_case(ratio.ours), per_case(ratio.baseline)),
        ratio.slowdown(),
        "<= 1.35",
    );
    // Not a goal: row 1 against a baseline that reads its output's values
    // once, as any caller that uses the result does (the bare run drops
    // its output unread; the harness reads it as the provider returned it
    // and as the runtime did).
    let ratio = interleaved(
        15,
        &mut timed(&mut rig_case),
        &mut timed(|| bare.run_and_read(&VALUES)),
    );
    report(
        "1c rig overhead vs a bare Runtime::run that reads its output once (no goal)",
        &format!("{} vs {}", per_case(ratio.ours), per_case(ratio.baseline)),
        ratio.slowdown(),
        "none: for comparison",
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = bench
}
criterion_main!(benches);
