//! The device's runtime registration against its adapter: tenferro's
//! validation asks the registration's ingress contracts what the suite's
//! oracle asks the adapter's placement and storage rules, and
//! `runtime-agreement` fails where they disagree. Correct providers never
//! return what either would refuse, so only a wrong output shows a
//! registration that accepts too much: two broken providers of the crate,
//! each caught by exactly the rule its output breaks, with the runtime
//! agreeing.

mod support;

use std::sync::Arc;

use example_vendor_device::broken::{ForeignDomainUpload, ForeignPlacementUpload};
use tenferro_transfer_conformance::prelude::*;

use support::{VendorEndpoint, failing, suite_named, upload_route, upload_suite};

/// `suite` fails `rule` on route `upload` and no other rule; the rules it
/// could not check.
fn caught_by_exactly(suite: &ProviderSuite, rule: Rule) -> Vec<Rule> {
    let report = suite.run();
    assert_eq!(
        failing(suite, &report, "upload"),
        vec![rule],
        "{}",
        report.to_table()
    );
    assert!(
        suite
            .check(&report, "upload", Rule::RuntimeAgreement)
            .is_pass()
    );
    support::skipped(suite, &report, "upload")
}

/// An output under another device's placement: the registration refuses
/// it as the adapter's placement rule does.
#[test]
fn another_devices_placement_fails_placement_and_the_runtime_agrees() {
    let suite = upload_suite("foreign-placement-upload", |device| {
        Arc::new(ForeignPlacementUpload::new(device))
    });
    // The runtime refuses every output, so no output is ever held.
    assert_eq!(
        caught_by_exactly(&suite, Rule::Placement),
        vec![Rule::OutputStable]
    );
}

/// Another device's memory under this device's placement: the
/// registration refuses it as the adapter's storage rule does.
#[test]
fn another_devices_memory_fails_residency_and_the_runtime_agrees() {
    let suite = suite_named("foreign-domain-upload").route("upload", upload_route, |route| {
        let endpoint = route
            .destination()
            .downcast::<VendorEndpoint>()
            .ok_or("the upload serves a vendor device")?;
        Ok(Arc::new(ForeignDomainUpload::new(endpoint.device.clone())?)
            as Arc<dyn TransferProvider>)
    });
    // Memory the destination does not know: its completion cannot be
    // observed there (nor its leaks: `no-leak` is checked only where the
    // provider refused), and no output is ever held.
    assert_eq!(
        caught_by_exactly(&suite, Rule::Residency),
        vec![Rule::Completion, Rule::OutputStable]
    );
}
