//! A hang is judged once per route: a vendor's upload that
//! deadlocks on every input above 64 KiB waits out the whole deadline once;
//! the route's later cases get a short deadline derived from the
//! provider's own successful calls, and those that overrun it are skipped
//! with the reason (not proven to hang), never failed and never passed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tenferro_tensor::Tensor;
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::record::CaseOutcome;

/// The simulated device's upload, behind a lock it never releases for a
/// large input: a real hang, on the wall clock.
#[derive(Debug)]
struct DeadlocksAbove64KiB {
    inner: SimUpload,
}

impl TransferProvider for DeadlocksAbove64KiB {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        let width = match input.dtype() {
            DType::Bool => 1,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 | DType::C32 => 8,
            _ => 16,
        };
        let bytes = input.shape().iter().product::<usize>() * width;
        if bytes > 64 * 1024 {
            loop {
                std::thread::park();
            }
        }
        self.inner.transfer_blocking(request)
    }
}

fn suite(deadline: Duration) -> ProviderSuite {
    ProviderSuite::new("deadlocks", Level::V1)
        .route("upload", Route::host_to_sim, |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("a simulated destination".into());
            };
            Ok(Arc::new(DeadlocksAbove64KiB {
                inner: SimUpload::new(device.clone()),
            }) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
        .deadline(deadline)
        .seed(64)
}

fn run(deadline: Duration) -> Duration {
    let suite = suite(deadline);
    let start = Instant::now();
    let report = suite.run();
    let elapsed = start.elapsed();
    let hangs: Vec<_> = report
        .records()
        .iter()
        .filter(|record| record.outcome.breaks(Rule::Deadline))
        .collect();
    // The hang is found and reported, with the line that replays it.
    assert_eq!(hangs.len(), 1, "{}", report.to_table());
    assert!(hangs[0].replay.is_some());
    let verdict = suite.check(&report, "upload", Rule::Deadline);
    assert_eq!(verdict.verdict_name(), "fail", "{verdict:?}");
    // The later large cases waited a short deadline and were skipped,
    // naming the case the provider hung on.
    let skipped = report
        .records()
        .iter()
        .filter(|record| {
            matches!(&record.outcome, CaseOutcome::Skipped { reason } if reason.contains("after the provider hung on"))
        })
        .count();
    assert!(skipped > 0, "{}", report.to_table());
    // Nothing that passed is hidden: the small cases are judged as ever.
    for rule in [Rule::Values, Rule::Completion, Rule::NoLeak] {
        assert!(suite.check(&report, "upload", rule).is_pass(), "{rule}");
    }
    elapsed
}

#[test]
fn a_hang_costs_one_deadline_per_route() {
    let deadline = Duration::from_secs(3);
    let elapsed = run(deadline);
    eprintln!("a route that hangs on large inputs, deadline {deadline:?}: {elapsed:?}");
}

/// The measurement: the default deadline (60 s). Run with
/// `cargo test -p tenferro-transfer-conformance --test integration hang:: -- --ignored --nocapture`.
#[test]
#[ignore = "waits out the 60 s default deadline once; run by hand to measure"]
fn a_hang_costs_one_default_deadline() {
    let elapsed = run(tenferro_transfer_conformance::harness::DEFAULT_DEADLINE);
    eprintln!("a route that hangs on large inputs, default deadline: {elapsed:?}");
}
