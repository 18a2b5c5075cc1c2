//! What a transfer does besides its output (conformance level V2), on the
//! vendor's own device: four deliberately broken providers of the crate
//! (`example_vendor_device::broken`), each with a right output, each
//! caught by exactly its rule through `ProviderSuite`, every other rule
//! passing or skipped with its reason.

mod support;

use std::sync::Arc;

use example_vendor_device::broken::{
    ClearingDownload, DriverThreadUpload, EveryFifthLeakUpload, LiveReuseUpload,
};
use example_vendor_device::{
    CachingUpload, MAX_ELEMENTS, VendorDevice, VendorUpload, read_compact,
};
use tenferro_transfer_conformance::prelude::*;

use support::{
    counting_copying_upload_route, counting_upload_route, failing, skipped, suite_named,
    upload_route, upload_suite, with_download, with_upload,
};

/// Run `suite` on `route` and check that `rule` fails there and no other
/// rule does; the failure's text, and the rules not checked.
fn caught_by_exactly(suite: &ProviderSuite, route: &str, rule: Rule) -> (String, Vec<Rule>) {
    let report = suite.run();
    assert_eq!(
        failing(suite, &report, route),
        vec![rule],
        "{}",
        report.to_table()
    );
    let RuleVerdict::Fail(text) = suite.check(&report, route, rule) else {
        unreachable!("{rule} failed above");
    };
    eprintln!("{text}");
    (text, skipped(suite, &report, route))
}

/// A download that zeroes the device memory it read breaks `input-intact`:
/// the suite read the input's allocation through the device before the
/// call and again as soon as the provider returned.
#[test]
fn a_download_that_clears_its_input_fails_input_intact() {
    let suite = with_download(suite_named("clearing-download"), |device| {
        Arc::new(ClearingDownload::new(device))
    });
    let (text, skipped) = caught_by_exactly(&suite, "download", Rule::InputIntact);
    assert!(text.contains("rule input-intact failed"), "{text}");
    // A host destination cannot say whether a copy has landed.
    assert_eq!(skipped, vec![Rule::Completion]);
}

/// An upload whose pool hands out an allocation a caller still holds
/// breaks `output-stable`: the held output changes under its holder. The
/// engine's reshape shares the transferred allocation, so holding the
/// runtime's output keeps the provider's allocation alive.
#[test]
fn an_upload_that_reuses_a_live_allocation_fails_output_stable() {
    let suite = upload_suite("live-reuse-upload", |device| {
        Arc::new(LiveReuseUpload::new(device))
    });
    let (text, skipped) = caught_by_exactly(&suite, "upload", Rule::OutputStable);
    assert!(text.contains("rule output-stable failed"), "{text}");
    assert_eq!(skipped, vec![]);
}

/// The same pool on a device that only counts its memory and whose
/// kernels write fresh memory: the caller's outputs hold nothing of the
/// provider's, so only the runtime holds the provider's output, within a
/// run that moves several inputs; the pool hands it out again to the next
/// input of the run, and `output-stable` fails there, and only it.
#[test]
fn an_upload_that_reuses_a_live_allocation_fails_output_stable_on_copying_kernels() {
    let suite = with_upload(
        suite_named("live-reuse-upload"),
        counting_copying_upload_route,
        |device| Arc::new(LiveReuseUpload::new(device)),
    );
    let (text, skipped) = caught_by_exactly(&suite, "upload", Rule::OutputStable);
    assert!(
        text.contains("which the runtime holds until the program ends"),
        "{text}"
    );
    assert_eq!(skipped, vec![]);
}

/// A correct upload that keeps state between calls: a caching allocator
/// whose blocks stay in use on the device. On a device that only counts
/// its memory, whose kernels alias or copy, it passes every rule, every
/// one checked; the blocks it keeps are reported as kept memory, not a
/// leak.
#[test]
fn a_caching_allocator_passes_every_rule_and_its_kept_memory_is_reported() {
    for route in [counting_upload_route, counting_copying_upload_route] {
        let suite = with_upload(suite_named("caching-upload"), route, |device| {
            Arc::new(CachingUpload::new(device))
        });
        let report = suite.run();
        assert_eq!(
            failing(&suite, &report, "upload"),
            vec![],
            "{}",
            report.to_table()
        );
        assert_eq!(skipped(&suite, &report, "upload"), vec![]);
        let kept = report.kept_memory();
        assert!(
            kept.iter().any(|summary| summary.endpoint == "npu0"
                && summary.allocations.is_some_and(|count| count > 0)),
            "{kept:?}"
        );
        assert!(
            report
                .to_table()
                .contains("memory kept between calls and reused"),
            "{}",
            report.to_table()
        );
    }
}

/// An upload that keeps one destination allocation in five breaks
/// `no-leak`, on a device that only counts its memory in use (no ledger):
/// the leak is caught through the counter alone.
#[test]
fn a_leak_is_caught_through_the_counter_alone() {
    let suite = with_upload(
        suite_named("every-fifth-leak-upload"),
        counting_upload_route,
        |device| Arc::new(EveryFifthLeakUpload::new(device)),
    );
    let (text, skipped) = caught_by_exactly(&suite, "upload", Rule::NoLeak);
    assert!(
        text.contains("memory in use on npu0, as the device counts it, grew by +1 allocation(s)"),
        "{text}"
    );
    assert_eq!(skipped, vec![]);
}

/// The control of the test above: on the same device, which only counts
/// its memory, the correct upload passes `no-leak` (checked from the
/// counts) and every other rule.
#[test]
fn the_counter_alone_passes_the_correct_upload() {
    let suite = with_upload(
        suite_named("vendor-upload"),
        counting_upload_route,
        |device| Arc::new(VendorUpload::new(device)),
    );
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report, "upload"),
        vec![],
        "{}",
        report.to_table()
    );
    assert_eq!(skipped(&suite, &report, "upload"), vec![]);
}

/// An upload that allocates on a driver thread of its own and never frees
/// one of those allocations breaks `no-leak`, seen by the ledger: the
/// allocation was made on another thread than the case's, and is the
/// case's because the case ran alone on the device.
#[test]
fn a_leak_on_a_driver_thread_is_attributed_through_the_ledger() {
    let suite = upload_suite("driver-thread-upload", |device| {
        Arc::new(DriverThreadUpload::new(device))
    });
    let (text, skipped) = caught_by_exactly(&suite, "upload", Rule::NoLeak);
    assert!(text.contains("64 bytes"), "{text}");
    assert!(!text.contains("grew by"), "the ledger names it: {text}");
    assert_eq!(skipped, vec![]);
}

/// An upload (of `f64` only) that queues its copy before it checks the
/// size, and refuses a tensor too large by dropping the destination while
/// the copy into it is still queued: correct, and the device frees that
/// memory only once the copy is done (a deferred free).
#[derive(Debug)]
struct LateRefusalUpload(VendorDevice);

impl TransferProvider for LateRefusalUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "LateRefusalUpload::transfer_blocking";
        let input = request.input();
        if input.dtype() != DType::F64 {
            return Err(tenferro_tensor::Error::unsupported(OP, "f64 only").into());
        }
        let staging = read_compact::<f64>(input)?;
        let count = staging.len();
        let (output, ticket) = self.0.upload_async(input.shape().to_vec(), staging)?;
        if count > MAX_ELEMENTS {
            drop((output, ticket));
            return Err(tenferro_tensor::Error::unsupported(OP, "too large").into());
        }
        ticket.wait();
        Ok(output)
    }
}

/// The refusal frees its destination only once the copy queued into it
/// is done, and `settle` waits for that: `no-leak` passes on the refused
/// case, on a device that lists its allocations and on one that only
/// counts them.
#[test]
fn settle_waits_for_a_free_the_device_defers() {
    let oversize = format!(
        r#"{{"dtype":"F64","shape":[{}],"layout":{{"kind":"owned"}},"seed":0,"specials":0}}"#,
        MAX_ELEMENTS + 1
    );
    for route in [upload_route, counting_upload_route] {
        let suite = with_upload(suite_named("late-refusal-upload"), route, |device| {
            Arc::new(LateRefusalUpload(device))
        })
        .capabilities(
            Capabilities::all()
                .dtypes([DType::F64])
                .max_elements(MAX_ELEMENTS),
        );
        let report = suite.replay(&oversize);
        for rule in [Rule::CapabilityHonesty, Rule::NoLeak] {
            assert_eq!(
                suite.check(&report, "upload", rule),
                RuleVerdict::Pass { cases: 1 },
                "{rule}\n{}",
                report.to_table()
            );
        }
    }
}
