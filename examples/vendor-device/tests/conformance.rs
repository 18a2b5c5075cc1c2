//! The conformance suite, run the way the vendor's crate runs it: one
//! `#[test]` per rule and route (`cargo test -- --list` shows them), on a
//! route from the host into the vendor's own device and one back, through
//! the adapter in `support`.
//!
//! By default the suite judges `VendorUpload` and `VendorDownload`, which
//! pass every rule of level V2 they can be checked on. With
//! `--features demonstrate-failure` the upload is `EarlyReturnUpload`,
//! which returns before its copy has landed: `upload::completion` fails,
//! and nothing else.

mod support;

use std::sync::Arc;

use example_vendor_device::VendorUpload;
use tenferro_transfer_conformance::prelude::*;

use support::{broken_suite, failing, suite, upload_suite};

tenferro_transfer_conformance::conformance_tests!(
    level = V2,
    suite = suite,
    routes = [upload, download]
);

/// Every input the fuzz target crashed on (`fuzz/artifacts/transfer_contract/`)
/// and every regression kept (`fuzz/regressions/`), replayed through the
/// same suite: `cargo test --test conformance fuzz_inputs` reproduces a
/// fuzzing crash as a failing test, with the same message.
#[test]
fn fuzz_inputs_replay_through_the_suite() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut fuzzer = suite().fuzzer();
    for folder in ["artifacts/transfer_contract", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let input = std::fs::read(entry.path()).unwrap();
            if let Err(failure) = fuzzer.run(&input) {
                panic!("{}: {failure}", entry.path().display());
            }
        }
    }
}

/// The correct providers pass every rule for real: each rule was checked
/// on at least one case (a skip would also show `ok` in the rule's test),
/// but `completion` on the download, whose host destination cannot say
/// whether a copy has landed.
#[cfg(not(feature = "demonstrate-failure"))]
#[test]
fn the_correct_providers_pass_every_rule_they_can_be_checked_on() {
    let (suite, report) = __transfer_conformance_run();
    for (route, unchecked) in [("upload", vec![]), ("download", vec![Rule::Completion])] {
        assert_eq!(
            failing(suite, report, route),
            vec![],
            "{route}\n{}",
            report.to_table()
        );
        assert_eq!(support::skipped(suite, report, route), unchecked, "{route}");
    }
}

/// Exactly what `cargo test --features demonstrate-failure upload::completion`
/// prints when it fails, and that the bug breaks no other rule (on either
/// route: the download is the correct one).
#[test]
fn the_early_return_fails_completion_and_only_completion() {
    let suite = broken_suite();
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report, "upload"),
        vec![Rule::Completion],
        "{}",
        report.to_table()
    );
    assert_eq!(failing(&suite, &report, "download"), vec![]);
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Completion) else {
        unreachable!("completion failed above");
    };
    insta::with_settings!({
        snapshot_path => "../../../snapshots",
        prepend_module_to_snapshot => false,
        filters => vec![(r"seed \d+", "seed [seed]"), (r"copy #\d+", "copy #[n]")],
    }, {
        insta::assert_snapshot!("example-vendor-device-completion", text);
    });
}

/// A provider that leaks one device allocation per transfer.
#[derive(Debug)]
struct LeakyUpload(VendorUpload);

impl TransferProvider for LeakyUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        std::mem::forget(self.0.device().tensor(vec![2], vec![0_i64, 0])?);
        self.0.transfer_blocking(request)
    }
}

/// `no-leak` is really checked on this device: a leaked allocation fails it.
#[test]
fn a_leaked_device_allocation_fails_no_leak() {
    let suite = upload_suite("leaky-upload", |device| {
        Arc::new(LeakyUpload(VendorUpload::new(device)))
    });
    let report = suite
        .replay(r#"{"dtype":"F64","shape":[3],"layout":{"kind":"owned"},"seed":0,"specials":0}"#);
    let verdict = suite.check(&report, "upload", Rule::NoLeak);
    let RuleVerdict::Fail(text) = verdict else {
        panic!("no-leak: {verdict:?}\n{}", report.to_table());
    };
    assert!(text.contains("npu0"), "{text}");
    assert!(suite.check(&report, "upload", Rule::Values).is_pass());
}
