//! A download (device to host) that leaks a staging block on its source
//! device every 50th call. One call in 50 is too rare for a case's own
//! repetitions to tell from kept memory; the memory over the pass that
//! holds outputs and over the concurrent calls must judge it, and on a
//! route that ends on plain host memory the evidence that the accounting
//! sees anything comes from the source alone (the staged inputs). The
//! same download without the leak is the control. Written here as a vendor
//! would, from the simulated device's public API, on a device that only
//! counts its memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tenferro_transfer_conformance::harness::{AdapterContext, HarnessError};
use tenferro_transfer_conformance::mock_devices::providers::SimDownload;
use tenferro_transfer_conformance::prelude::*;

/// Downloads through `inner`; every `leak_every`th call also allocates a
/// staging block on the source and never frees it.
#[derive(Debug)]
struct LeakyDownload {
    inner: SimDownload,
    leak_every: Option<usize>,
    calls: AtomicUsize,
    forgotten: Mutex<Vec<Box<dyn std::any::Any + Send>>>,
}

impl TransferProvider for LeakyDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self
            .leak_every
            .is_some_and(|every| call.is_multiple_of(every))
        {
            let staging = self
                .inner
                .device()
                .allocate(vec![0_i32; 64])
                .map_err(|error| tenferro_tensor::Error::backend_source("leaky download", error))?;
            self.forgotten.lock().unwrap().push(Box::new(staging));
        }
        self.inner.transfer_blocking(request)
    }
}

/// A simulated device that only counts its memory, to the host.
fn counting_download_route() -> Result<Route, HarnessError> {
    let device = SimDevice::counting_only(0).adapter_context("opening sim0")?;
    Route::new(Endpoint::new(device), Endpoint::host("host")?)
}

fn download(route: &Route, leak_every: Option<usize>) -> Arc<dyn TransferProvider> {
    let device = route.source().downcast::<SimDevice>().unwrap().clone();
    Arc::new(LeakyDownload {
        inner: SimDownload::new(device),
        leak_every,
        calls: AtomicUsize::new(0),
        forgotten: Mutex::default(),
    })
}

#[test]
fn a_download_that_leaks_on_its_source_every_50th_call_fails_no_leak() {
    let suite = ProviderSuite::new("download-leak", Level::V2)
        .route("leaky", counting_download_route, |route| {
            Ok(download(route, Some(50)))
        })
        .route("correct", counting_download_route, |route| {
            Ok(download(route, None))
        })
        .profile(Profile::Quick)
        .seed(7);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "leaky", Rule::NoLeak) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("sim0"), "{text}");
    for rule in Level::V2.rules() {
        assert!(
            !matches!(suite.check(&report, "correct", *rule), RuleVerdict::Fail(_)),
            "{rule}: {:?}",
            suite.check(&report, "correct", *rule)
        );
    }
    assert!(
        matches!(
            suite.check(&report, "correct", Rule::NoLeak),
            RuleVerdict::Pass { .. }
        ),
        "{:?}",
        suite.check(&report, "correct", Rule::NoLeak)
    );
}
