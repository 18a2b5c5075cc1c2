//! Times one route's run of a `ProviderSuite` in the `quick` profile (the
//! default): sim-upload, every preset dtype, views and any size declared.
//! The figures of `docs/performance.md` ("One route's `quick` run") come
//! from it:
//!
//! ```sh
//! cargo run --example quick_route            # debug
//! cargo run --release --example quick_route  # release
//! ```

use std::sync::Arc;
use std::time::Instant;

use tenferro_transfer_conformance::prelude::*;

fn main() {
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("upload serves a simulated destination".into());
            };
            Ok(Arc::new(SimUpload::new(device.clone())) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
        .seed(1);
    let runs = 3;
    let mut times = Vec::new();
    let mut report = None;
    for _ in 0..runs {
        let start = Instant::now();
        report = Some(suite.run());
        times.push(start.elapsed().as_secs_f64());
    }
    let Some(report) = report else { return };
    let largest = report
        .rows()
        .iter()
        .map(|row| row.shape.iter().product::<usize>())
        .max()
        .unwrap_or(0);
    times.sort_by(f64::total_cmp);
    println!(
        "one route, quick profile: {} rows ({} passed, {} failed, {} skipped), largest case {largest} elements; {runs} runs: min {:.2} s, median {:.2} s, max {:.2} s",
        report.rows().len(),
        report.summary().passed,
        report.summary().failed,
        report.summary().skipped,
        times[0],
        times[runs / 2],
        times[runs - 1]
    );
}
