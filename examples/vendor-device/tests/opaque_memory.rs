//! The vendor's device with memory the host cannot map, as a GPU's: its
//! storage refuses `map_read` (`HostAccessError::Unsupported`) and the
//! adapter reads its tensors back by downloading them
//! (`DeviceEndpoint::read_back`). The suite must judge every rule it
//! judges on mappable memory: the correct providers pass, and a broken one
//! is caught by its rule, through the read-back alone.

mod support;

use std::sync::Arc;

use example_vendor_device::broken::{ClearingDownload, LiveReuseUpload};
use example_vendor_device::{VendorDownload, VendorUpload};
use tenferro_transfer_conformance::harness::with_element;
use tenferro_transfer_conformance::prelude::*;

use support::{
    failing, opaque_download_route, opaque_upload_route, skipped, suite_named, with_download_on,
    with_upload,
};

/// The correct upload and download pass every rule they pass on mappable
/// memory, each checked on some case: `values` and `input-intact` through
/// the read-back, the held and run outputs (`output-stable`) too.
#[test]
fn the_correct_providers_pass_every_rule_on_memory_the_host_cannot_map() {
    let suite = with_upload(suite_named("opaque"), opaque_upload_route, |device| {
        Arc::new(VendorUpload::new(device))
    });
    let suite = with_download_on(suite, opaque_download_route, |device| {
        Arc::new(VendorDownload::new(device))
    });
    let report = suite.run();
    for (route, unchecked) in [("upload", vec![]), ("download", vec![Rule::Completion])] {
        assert_eq!(
            failing(&suite, &report, route),
            vec![],
            "{route}\n{}",
            report.to_table()
        );
        assert_eq!(
            skipped(&suite, &report, route),
            unchecked,
            "{route}\n{}",
            report.to_table()
        );
    }
    // The download's view inputs are read through `read_back_view`, gaps
    // included: `input-intact` is checked on them too.
    let coverage = report.coverage();
    let download = coverage
        .iter()
        .find(|route| route.route.starts_with("download"))
        .unwrap();
    let intact = download.rule(Rule::InputIntact).unwrap();
    for kind in ["owned", "gaps", "offset", "negative-step", "permutation"] {
        assert!(intact.cases_of(kind) > 0, "{kind}: {intact:?}");
    }
}

/// A download that zeroes the device memory it read breaks `input-intact`,
/// seen through the read-back of its opaque input.
#[test]
fn a_download_that_clears_its_input_fails_input_intact_on_opaque_memory() {
    let suite = with_download_on(
        suite_named("clearing-download"),
        opaque_download_route,
        |device| Arc::new(ClearingDownload::new(device)),
    );
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report, "download"),
        vec![Rule::InputIntact],
        "{}",
        report.to_table()
    );
}

/// An upload whose pool hands out an allocation a caller still holds
/// breaks `output-stable`, seen through the read-back of the held outputs.
#[test]
fn an_upload_that_reuses_a_live_allocation_fails_output_stable_on_opaque_memory() {
    let suite = with_upload(
        suite_named("live-reuse-upload"),
        opaque_upload_route,
        |device| Arc::new(LiveReuseUpload::new(device)),
    );
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report, "upload"),
        vec![Rule::OutputStable],
        "{}",
        report.to_table()
    );
}

/// An upload that moves the input as `VendorUpload` does (refusing what it
/// declares it cannot handle), then answers with zeros in device memory,
/// not the input's values: broken (`values`), and only the read-back can
/// tell.
#[derive(Debug)]
struct ZeroUpload(VendorUpload);

impl TransferProvider for ZeroUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let (dtype, shape) = (request.input().dtype(), request.input().shape().to_vec());
        let moved = self.0.transfer_blocking(request)?;
        let count = moved.shape().iter().product();
        let zeros = with_element!(dtype, T => self.0.device().tensor(shape, vec![T::default(); count]),
            external => unreachable!("the suite moves the seven preset dtypes"));
        Ok(zeros?)
    }
}

/// Wrong values in memory the host cannot map fail `values`, seen through
/// the read-back alone; the rest holds.
#[test]
fn an_upload_that_writes_zeros_fails_values_on_opaque_memory() {
    let suite = with_upload(suite_named("zero-upload"), opaque_upload_route, |device| {
        Arc::new(ZeroUpload(VendorUpload::new(device)))
    });
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report, "upload"),
        vec![Rule::Values],
        "{}",
        report.to_table()
    );
}
