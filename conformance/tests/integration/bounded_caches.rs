//! Correct providers whose memory goes up and down within a bound, on a
//! device that only counts its memory in use: a staging cache trimmed
//! every few calls (its memory drops, then comes back to where it was),
//! and a release deferred by some calls ("destroy after N frames"), whose
//! bytes rise and fall as blocks of other sizes leave. `no-leak` repeats a
//! case whose memory stayed grown; memory that only comes back to a level
//! it had before, or that stops rising, is memory the provider keeps, not
//! a leak. The same providers keeping every block are the leaks they must
//! not be mistaken for. Written as a vendor would, from the public API.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tenferro_runtime::TransferRequest;
use tenferro_tensor::{BackendStorage, Tensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{SimStorage, sim_storage_of};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::{counting_route, sim_upload};

/// What the provider keeps of an output's block once the caller dropped
/// the output.
#[derive(Debug)]
enum Keeps {
    /// One block a size, all dropped every this many calls.
    TrimmedEvery(usize),
    /// Every block, released this many calls later.
    DeferredBy(usize),
    /// Every block, never released (the leak).
    Everything,
}

#[derive(Debug)]
struct KeepingUpload {
    inner: SimUpload,
    keeps: Keeps,
    calls: AtomicUsize,
    by_size: Mutex<HashMap<usize, SimStorage<f32>>>,
    deferred: Mutex<VecDeque<SimStorage<f32>>>,
}

impl TransferProvider for KeepingUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(block) = sim_storage_of::<f32>(&output) else {
            return Ok(output);
        };
        match self.keeps {
            Keeps::TrimmedEvery(calls) => {
                let mut kept = self.by_size.lock().unwrap();
                kept.entry(BackendStorage::len(block))
                    .or_insert_with(|| block.alias());
                if call.is_multiple_of(calls) {
                    kept.clear();
                }
            }
            Keeps::DeferredBy(calls) => {
                let mut deferred = self.deferred.lock().unwrap();
                deferred.push_back(block.alias());
                while deferred.len() > calls {
                    deferred.pop_front();
                }
            }
            Keeps::Everything => self.deferred.lock().unwrap().push_back(block.alias()),
        }
        Ok(output)
    }
}

fn keeping(keeps: fn() -> Keeps) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        Ok(Arc::new(KeepingUpload {
            inner: sim_upload(route)?,
            keeps: keeps(),
            calls: AtomicUsize::new(0),
            by_size: Mutex::default(),
            deferred: Mutex::default(),
        }))
    }
}

#[test]
fn memory_that_comes_back_to_its_level_or_stops_rising_is_kept_and_a_leak_is_not() {
    let suite = ProviderSuite::new("bounded-caches", Level::V2)
        .route(
            "trimmed_every_7",
            || counting_route(false),
            keeping(|| Keeps::TrimmedEvery(7)),
        )
        .route(
            "trimmed_every_4",
            || counting_route(false),
            keeping(|| Keeps::TrimmedEvery(4)),
        )
        .route(
            "deferred_by_8",
            || counting_route(false),
            keeping(|| Keeps::DeferredBy(8)),
        )
        .route(
            "deferred_by_28",
            || counting_route(false),
            keeping(|| Keeps::DeferredBy(28)),
        )
        .route(
            "keeps_everything",
            || counting_route(false),
            keeping(|| Keeps::Everything),
        )
        .capabilities(Capabilities::all().dtypes([DType::F32]))
        .profile(Profile::Quick)
        .seed(9);
    let report = suite.run();
    for route in [
        "trimmed_every_7",
        "trimmed_every_4",
        "deferred_by_8",
        "deferred_by_28",
    ] {
        let verdict = suite.check(&report, route, Rule::NoLeak);
        assert!(verdict.is_pass(), "{route}: {verdict:?}");
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "keeps_everything", Rule::NoLeak) else {
        panic!("{}", report.to_table());
    };
    // The failure shows how the memory rose over the repetitions.
    assert!(
        text.contains("grew") && text.contains("after each it stood at +"),
        "{text}"
    );
}
