//! Row 3: the value check of a 64 MiB tensor whose values arrived intact,
//! compared as it is read (what the Spy does with the returned output's
//! mapped buffer), against `memcmp` of the same two byte images.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tenferro_tensor::DType;
use tenferro_transfer_conformance::builtin_provider;
use tenferro_transfer_conformance::harness::{
    Case, Compared, Layout, Oracle, ProviderResult, Rig, compare_as_read,
};

use support::{interleaved, report, timed};

const BYTES: usize = 64 << 20;

fn bench(criterion: &mut Criterion) {
    let provider = builtin_provider("sim-upload").expect("sim-upload");
    let route = provider.route().expect("route");
    let mut rig =
        Rig::new(route.clone(), provider.provider(&route).expect("provider")).expect("rig");
    let case = Case::patterned(DType::F32, vec![BYTES / 4], Layout::Owned).expect("case");
    let outcome = rig.run(&case).expect("run");
    let Some(ProviderResult::Returned(returned)) = outcome.call().map(|call| &call.result) else {
        panic!("the provider returned no tensor");
    };
    assert_eq!(returned.bytes, Compared::Same, "the output arrived intact");
    assert!(Oracle.judge(&case, &route, &outcome).passed());
    let arrived: Vec<f32> = case.typed_values();
    let image = case.values().to_vec();
    assert_eq!(arrived.len() * 4, BYTES);

    let mut judge = || {
        assert_eq!(
            black_box(compare_as_read(black_box(&arrived), case.values())),
            Compared::Same
        );
    };
    let mut memcmp = || assert!(black_box(case.values()) == black_box(image.as_slice()));
    let mut group = criterion.benchmark_group("value-check-64MiB");
    group.throughput(criterion::Throughput::Bytes(BYTES as u64));
    group.bench_function("compare_as_read", |b| b.iter(&mut judge));
    group.bench_function("memcmp", |b| b.iter(&mut memcmp));
    group.finish();

    let ratio = interleaved(9, &mut timed(&mut judge), &mut timed(&mut memcmp));
    let rate = |d: std::time::Duration| format!("{:.1} GB/s", BYTES as f64 / d.as_secs_f64() / 1e9);
    report(
        "3 value check (64 MiB compared as read vs memcmp)",
        &format!("{} vs {}", rate(ratio.ours), rate(ratio.baseline)),
        ratio.speed(),
        ">= 0.8",
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = bench
}
criterion_main!(benches);
