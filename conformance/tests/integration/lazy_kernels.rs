//! A device whose engine's kernels read their input when they run, not
//! when they are queued (`Kernels::Lazy`), as a real device's do: a
//! caller that collects a result later leaves the kernel over the moved
//! value queued after the runtime dropped that value. A provider whose
//! caching allocator hands the dropped block out again and writes it from
//! the host at once writes under that kernel, and the result the caller
//! holds gets the next input's values (blind probe 12's M20, which every
//! seed missed while the suite read every run's outputs before the next).
//! The held pass reads one large run's outputs only after the next run
//! (`Watchdog::defer_output_reads`), and catches it; a provider that waits
//! for the device's queued work after it takes a block to reuse, before
//! it writes it, passes (also under concurrent calls: waiting before it
//! takes one let another thread's kernel be queued over it in between).

use std::sync::Arc;

use tenferro_transfer_conformance::mock_devices::Kernels;
use tenferro_transfer_conformance::mock_devices::providers::CachingAllocator;
use tenferro_transfer_conformance::prelude::*;

use crate::support::kernels::with_kernels;

/// Host to `sim0`, whose kernels read their input as they run.
fn lazy_destination() -> Result<Route, tenferro_transfer_conformance::harness::HarnessError> {
    with_kernels(Route::host_to_sim(), Kernels::Lazy)
}

#[test]
fn a_block_written_under_a_queued_kernel_is_caught_by_the_deferred_read() {
    let suite = ProviderSuite::new("lazy-kernels", Level::V2)
        .route("writes_at_once", lazy_destination, |route| {
            let upload = Arc::new(SimUpload::new(
                route.destination().try_downcast::<SimDevice>()?.clone(),
            ));
            Ok(Arc::new(CachingAllocator::new(upload, 4)) as _)
        })
        .route("waits", lazy_destination, |route| {
            let device = route.destination().try_downcast::<SimDevice>()?.clone();
            let upload = Arc::new(SimUpload::new(device.clone()));
            Ok(Arc::new(CachingAllocator::new(upload, 4).settling(device)) as _)
        })
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    for rule in Level::V2.rules() {
        assert!(
            !matches!(suite.check(&report, "waits", *rule), RuleVerdict::Fail(_)),
            "waits {rule}: {:?}\n{}",
            suite.check(&report, "waits", *rule),
            report.to_table()
        );
    }
    assert!(
        matches!(
            suite.check(&report, "waits", Rule::OutputStable),
            RuleVerdict::Pass { .. }
        ),
        "{:?}",
        suite.check(&report, "waits", Rule::OutputStable)
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "writes_at_once", Rule::OutputStable) else {
        panic!("{}", report.to_table());
    };
    assert!(
        text.contains("read it first only after that call"),
        "{text}"
    );
    // Only output-stable: every run that read its outputs before the next
    // passed.
    for rule in Level::V2.rules() {
        if *rule != Rule::OutputStable {
            assert!(
                !matches!(
                    suite.check(&report, "writes_at_once", *rule),
                    RuleVerdict::Fail(_)
                ),
                "writes_at_once {rule}: {:?}",
                suite.check(&report, "writes_at_once", *rule)
            );
        }
    }
}
