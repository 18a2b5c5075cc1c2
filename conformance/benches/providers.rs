//! Row 4: each reference provider's own `transfer_blocking`, timed inside
//! the runtime's call (only the runtime can make a request), against
//! `memcpy` of the same bytes into fresh memory, from 1 KiB to 64 MiB.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod support;

use std::time::{Duration, Instant};

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tenferro_transfer_conformance::BUILTIN_PROVIDERS;

use support::{BareRun, TimedProvider, interleaved, report, stage};

const SIZES: [usize; 5] = [1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20];

fn label(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

/// The baseline: a copy into freshly allocated memory, as a provider's
/// destination always is.
fn memcpy_fresh(source: &[u8]) -> Vec<u8> {
    let mut destination = Vec::with_capacity(source.len());
    destination.extend_from_slice(source);
    destination
}

fn bench(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("providers");
    let mut results = Vec::new();
    for bytes in SIZES {
        group.throughput(Throughput::Bytes(bytes as u64));
        let source: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        group.bench_with_input(
            BenchmarkId::new("memcpy (fresh)", label(bytes)),
            &source,
            |b, s| b.iter(|| black_box(memcpy_fresh(s))),
        );
        for provider in &BUILTIN_PROVIDERS {
            let route = provider.route().expect("route");
            let timed = TimedProvider::new(provider.provider(&route).expect("provider"));
            let values: Vec<f32> = (0..bytes / 4).map(|i| i as f32).collect();
            let mut bare = BareRun::new(&route, timed.clone(), stage(route.source(), values));
            group.bench_function(BenchmarkId::new(provider.name, label(bytes)), |b| {
                b.iter_custom(|iterations| {
                    for _ in 0..iterations {
                        bare.run();
                    }
                    timed.take()
                })
            });
            let ratio = interleaved(
                if bytes >= 16 << 20 { 7 } else { 11 },
                &mut |iterations| {
                    timed.take();
                    for _ in 0..iterations {
                        bare.run();
                    }
                    timed.take()
                },
                &mut |iterations| {
                    let start = Instant::now();
                    for _ in 0..iterations {
                        black_box(memcpy_fresh(black_box(&source)));
                    }
                    start.elapsed()
                },
            );
            results.push((provider.name, bytes, ratio));
        }
    }
    group.finish();
    let rate =
        |bytes: usize, d: Duration| format!("{:.2} GB/s", bytes as f64 / d.as_secs_f64() / 1e9);
    for (name, bytes, ratio) in results {
        report(
            &format!("4 {name} {} vs memcpy into fresh memory", label(bytes)),
            &format!(
                "{} vs {}",
                rate(bytes, ratio.ours),
                rate(bytes, ratio.baseline)
            ),
            ratio.speed(),
            if bytes == 64 << 20 {
                ">= 0.8"
            } else {
                "none below 64 MiB"
            },
        );
    }
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = bench
}
criterion_main!(benches);
