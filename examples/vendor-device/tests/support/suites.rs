//! The suites the tests declare beside the correct one (a broken upload,
//! single routes, devices that only count) and the checks they share.

use std::sync::Arc;

use example_vendor_device::{EarlyReturnUpload, MAX_ELEMENTS, VendorDevice, VendorDownload};
use tenferro_transfer_conformance::adapter::*;

use super::{VendorEndpoint, correct_suite, download_route, upload_route};

/// The level the crate pins.
pub const LEVEL: Level = Level::V2;

/// Host to a fresh vendor device `npu0` that only counts its memory.
pub fn counting_upload_route() -> Result<Route, HarnessError> {
    Route::new(
        Endpoint::host("host")?,
        Endpoint::new(VendorEndpoint::counting_only(0)?),
    )
}

/// Host to a fresh vendor device `npu0` that only counts its memory and
/// whose layout kernels write fresh memory: the runtime's outputs hold
/// nothing of the provider's.
pub fn counting_copying_upload_route() -> Result<Route, HarnessError> {
    let npu = VendorEndpoint::counting_only(0)?;
    npu.device.set_copying_kernels(true);
    Route::new(Endpoint::host("host")?, Endpoint::new(npu))
}

/// Host to a fresh vendor device `npu0` whose memory the host cannot map
/// (as a GPU's): the adapter reads its tensors back by downloading them.
pub fn opaque_upload_route() -> Result<Route, HarnessError> {
    let npu = VendorEndpoint::open(0)?;
    npu.device.set_opaque_memory(true);
    Route::host_to(npu)
}

/// A fresh opaque vendor device `npu0` (as [`opaque_upload_route`]) to the
/// host.
pub fn opaque_download_route() -> Result<Route, HarnessError> {
    let npu = VendorEndpoint::open(0)?;
    npu.device.set_opaque_memory(true);
    Route::to_host(npu)
}

/// How a test builds a provider on the route's vendor device.
pub type MakeProvider = fn(VendorDevice) -> Arc<dyn TransferProvider>;

/// An empty suite of the crate's level, profile and capabilities.
pub fn suite_named(name: &str) -> ProviderSuite {
    ProviderSuite::new(name, LEVEL)
        .capabilities(Capabilities::all().max_elements(MAX_ELEMENTS))
        .profile(Profile::Quick)
}

/// `suite` with route `upload`: `route` builds it, `make` the provider on
/// its destination.
pub fn with_upload(
    suite: ProviderSuite,
    route: fn() -> Result<Route, HarnessError>,
    make: MakeProvider,
) -> ProviderSuite {
    suite.route("upload", route, move |route| {
        Ok(make(device_of(route.destination())?))
    })
}

/// `suite` with route `download`: `make` builds the provider on the
/// route's source.
pub fn with_download(suite: ProviderSuite, make: MakeProvider) -> ProviderSuite {
    with_download_on(suite, download_route, make)
}

/// `suite` with route `download`: `route` builds it, `make` the provider
/// on its source.
pub fn with_download_on(
    suite: ProviderSuite,
    route: fn() -> Result<Route, HarnessError>,
    make: MakeProvider,
) -> ProviderSuite {
    suite.route("download", route, move |route| {
        Ok(make(device_of(route.source())?))
    })
}

/// The suite of the upload `make` builds, on route `upload` alone.
pub fn upload_suite(name: &str, make: MakeProvider) -> ProviderSuite {
    with_upload(suite_named(name), upload_route, make)
}

/// The suite whose upload returns before its copy lands (its download is
/// the correct one).
pub fn broken_suite() -> ProviderSuite {
    let suite = with_upload(suite_named("early-return"), upload_route, |device| {
        Arc::new(EarlyReturnUpload::new(device))
    });
    with_download(suite, |device| Arc::new(VendorDownload::new(device))).seed(1)
}

/// The suite the tests (and the fuzz target) run: the broken upload with
/// the `demonstrate-failure` feature, the correct one without.
pub fn suite() -> ProviderSuite {
    if cfg!(feature = "demonstrate-failure") {
        broken_suite()
    } else {
        correct_suite()
    }
}

/// Every rule of the crate's level with its verdict on `route`.
pub fn verdicts(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<(Rule, RuleVerdict)> {
    LEVEL
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(report, route, *rule)))
        .collect()
}

/// The rules of the crate's level that fail on `route`, after printing
/// every verdict (shown when a test fails).
pub fn failing(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<Rule> {
    let mut failing = Vec::new();
    for (rule, verdict) in verdicts(suite, report, route) {
        match &verdict {
            RuleVerdict::Pass { cases } => {
                eprintln!("{route}::{:<20} pass ({cases} cases)", rule.id());
            }
            RuleVerdict::Skip(reason) => eprintln!("{route}::{:<20} skip: {reason}", rule.id()),
            other => {
                eprintln!("{route}::{:<20} {}", rule.id(), other.verdict_name());
                failing.push(rule);
            }
        }
    }
    failing
}

/// The rules of the crate's level that were not checked on `route`.
pub fn skipped(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<Rule> {
    verdicts(suite, report, route)
        .into_iter()
        .filter(|(_, verdict)| matches!(verdict, RuleVerdict::Skip(_)))
        .map(|(rule, _)| rule)
        .collect()
}

/// The vendor device behind `endpoint`, for a provider factory.
fn device_of(endpoint: &Endpoint) -> Result<VendorDevice, HarnessError> {
    Ok(endpoint.try_downcast::<VendorEndpoint>()?.device.clone())
}
