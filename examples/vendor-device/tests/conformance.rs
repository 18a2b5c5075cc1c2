//! The conformance suite, run the way the vendor's crate runs it: one
//! `#[test]` per rule and route (`cargo test -- --list` shows them), on a
//! route from the host into the vendor's own device, through the adapter
//! in `support`.
//!
//! By default the suite judges `VendorUpload`, which passes every rule.
//! With `--features demonstrate-failure` it judges `EarlyReturnUpload`,
//! which returns before its copy has landed: `upload::completion` fails.

mod support;

use std::sync::Arc;

use example_vendor_device::VendorUpload;
use support::VendorEndpoint;
use tenferro_transfer_conformance::harness::DeviceEndpoint;
use tenferro_transfer_conformance::prelude::*;

use support::{broken_suite, suite, suite_of};

tenferro_transfer_conformance::conformance_tests!(level = V1, suite = suite, routes = [upload]);

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

/// Every rule's verdict on the route, as `name verdict (detail)` lines.
fn verdicts(suite: &ProviderSuite, report: &Report) -> Vec<(Rule, RuleVerdict)> {
    Level::V1
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(report, "upload", *rule)))
        .collect()
}

/// The correct provider passes every rule for real: each was checked on
/// at least one case (a skip would also show `ok` in the rule's test).
#[cfg(not(feature = "demonstrate-failure"))]
#[test]
fn the_correct_upload_passes_every_rule_on_checked_cases() {
    let (suite, report) = __transfer_conformance_run();
    let verdicts = verdicts(suite, report);
    for (rule, verdict) in &verdicts {
        eprintln!("{:<20} {verdict:?}", rule.id());
    }
    let not_passed: Vec<_> = verdicts
        .iter()
        .filter(|(_, verdict)| !verdict.is_pass())
        .collect();
    assert!(
        not_passed.is_empty(),
        "{not_passed:#?}\n{}",
        report.to_table()
    );
}

/// Exactly what `cargo test --features demonstrate-failure upload::completion`
/// prints when it fails, and that the bug breaks no other rule.
#[test]
fn the_early_return_fails_completion_and_only_completion() {
    let suite = broken_suite();
    let report = suite.run();
    let verdicts = verdicts(&suite, &report);
    let mut failing = Vec::new();
    for (rule, verdict) in &verdicts {
        match verdict {
            RuleVerdict::Pass { cases } => eprintln!("{:<20} pass ({cases} cases)", rule.id()),
            other => eprintln!("{:<20} {}", rule.id(), other.verdict_name()),
        }
        if let RuleVerdict::Fail(text) = verdict {
            failing.push(rule.id());
            if *rule == Rule::Completion {
                insta::with_settings!({
                    snapshot_path => "../../../snapshots",
                    prepend_module_to_snapshot => false,
                    filters => vec![(r"seed \d+", "seed [seed]"), (r"copy #\d+", "copy #[n]")],
                }, {
                    insta::assert_snapshot!("example-vendor-device-completion", text);
                });
            }
        }
    }
    assert_eq!(failing, vec!["completion"], "{}", report.to_table());
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
    let suite = suite_of("leaky-upload", |device| {
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

/// The adapter's ledger lists a device allocation, on the thread that made
/// it, for exactly as long as it lives.
#[test]
fn the_ledger_lists_each_allocation_until_it_is_freed() {
    let endpoint = VendorEndpoint::open(3).unwrap();
    let ledger = endpoint.allocation_ledger().unwrap();
    let me = std::thread::current().id();
    let tensor = endpoint
        .device()
        .tensor(vec![2, 2], vec![1.0_f32; 4])
        .unwrap();
    assert_eq!(ledger.live_ids_of(me).len(), 1);
    assert_eq!(ledger.live_bytes(), 16);
    let elsewhere = std::thread::spawn(|| std::thread::current().id())
        .join()
        .unwrap();
    assert!(ledger.live_ids_of(elsewhere).is_empty());
    drop(tensor);
    assert!(ledger.live_allocations().is_empty());
    assert_eq!(endpoint.device().live_allocations(), 0);
}

/// The completion probe sees a queued copy as pending until it lands, and
/// the device refuses to map its memory meanwhile.
#[test]
fn the_completion_probe_sees_a_copy_in_flight() {
    use tenferro_transfer_conformance::harness::CompletionState;
    let endpoint = VendorEndpoint::open(4).unwrap();
    let (tensor, ticket) = endpoint
        .device()
        .upload_async(vec![3], vec![1_i32, 2, 3])
        .unwrap();
    assert!(matches!(
        endpoint.completion(&tensor),
        CompletionState::Pending { .. }
    ));
    let typed = tensor.as_typed::<i32>().unwrap();
    let tenferro_tensor::StorageBuffer::Backend(storage) = typed.buffer() else {
        panic!("device memory is backend storage");
    };
    assert_eq!(
        storage.map_read().unwrap_err(),
        tenferro_tensor::HostAccessError::GpuAccessInProgress
    );
    ticket.wait();
    assert_eq!(endpoint.completion(&tensor), CompletionState::Complete);
    assert_eq!(&*storage.map_read().unwrap(), &[1, 2, 3]);
    // A host tensor is not the device's: its completion is unknown.
    let host = Tensor::from_vec_col_major(vec![1], vec![1_i32]).unwrap();
    assert!(matches!(
        endpoint.completion(&host),
        CompletionState::Unknown { .. }
    ));
}
