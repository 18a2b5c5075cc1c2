//! A source device whose `stage` queues its upload and returns before it
//! lands, and whose reads wait for such writes, as a vendor's may: a
//! provider must wait for the writes still queued into its input before
//! it copies it, as it must for a kernel still writing a tensor a program
//! moves. The suite reads most inputs through the device before the call,
//! which lands them; the second owned case of each dtype and size, and
//! each fixed view once more, reach the provider unread
//! (`Rig::hand_inputs_unread`). Written as a vendor
//! would, from the public API (blind probe 11's `b06-stale-source`, a
//! peer copy that did not wait for its input's queued writes, passed
//! every rule).

use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::CompletionMode;
use tenferro_tensor::Error;
use tenferro_transfer_conformance::Verdict;
use tenferro_transfer_conformance::adapter::*;

use crate::support::blocks::copy_onto;
use crate::support::vendor_sim::{VendorSim, on_vendor_sim};
use crate::support::verdicts::{no_rule_fails, replay_json};

/// `sim0`, staging with its uploads queued, to the host.
fn queued_source() -> Result<Route, HarnessError> {
    let device = SimDevice::new(0).adapter_context("opening sim0")?;
    let source = VendorSim::new(device.clone(), vec![device], true);
    Route::new(Endpoint::new(source), Endpoint::host("host")?)
}

/// A download that waits for the writes queued into its input (a marker
/// copy queued after them on the same in-order stream), or reads at once.
#[derive(Debug)]
struct Download {
    source: SimDevice,
    waits_for_input: bool,
}

impl TransferProvider for Download {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "Download::transfer_blocking";
        if self.waits_for_input {
            let (_marker, marker) = self.source.stream(0).enqueue_copy(vec![1], vec![0_i32])?;
            marker
                .wait()
                .map_err(|error| Error::backend_source(OP, error))?;
        }
        let input = request.input();
        with_element!(input.dtype(), T => {
            Ok(Tensor::from_vec_col_major(input.shape().to_vec(), read_compact::<T>(input)?)?)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

#[test]
fn a_download_that_does_not_wait_for_its_inputs_queued_writes_fails() {
    let download = |waits_for_input| {
        on_vendor_sim(true, move |source| {
            Arc::new(Download {
                source: source.device.clone(),
                waits_for_input,
            })
        })
    };
    let suite = ProviderSuite::new("queued-stage", Level::V2)
        .route("waits", queued_source, download(true))
        .route("reads_at_once", queued_source, download(false))
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    no_rule_fails(&suite, &report, "waits", Level::V2.rules());
    // The simulated device refuses to map memory a copy is still writing,
    // so the early read is an `Err`, not stale values.
    let RuleVerdict::Fail(text) = suite.check(&report, "reads_at_once", Rule::NoError) else {
        panic!("{}", report.to_table());
    };
    assert!(
        text.contains("in flight") || text.contains("progress"),
        "{text}"
    );
    // Strided views too: each fixed view runs once more unread (blind
    // probe 12's M80 and M91 gathered a view before its backing's queued
    // writes landed).
    let failing_views: Vec<&str> = report
        .rows()
        .iter()
        .filter(|row| row.verdict == Verdict::Fail && row.layout.starts_with("view("))
        .map(|row| row.layout.as_str())
        .collect();
    assert!(!failing_views.is_empty(), "{}", report.to_table());
    // Its replay line hands the input over unread too, and fails again
    // (on the route that reads at once; the other passes).
    let replayed = suite.replay(replay_json(&text));
    assert_eq!(replayed.summary().failed, 1, "{}", replayed.to_table());
}

/// `sim0` to the host, its staged upload queued but landing on its own at
/// once (latency mode, no latency), as a fast device's does; `stalling`:
/// its adapter answers the suite's `stall_queues`.
fn fast_queued_source(stalling: bool) -> Result<Route, HarnessError> {
    let device = SimDevice::new(0).adapter_context("opening sim0")?;
    device.set_completion_mode(CompletionMode::Latency {
        base: Duration::ZERO,
        jitter: Duration::ZERO,
        seed: 1,
    });
    let source = VendorSim::new(device.clone(), vec![device], true);
    let source = if stalling { source.stalling() } else { source };
    Route::new(Endpoint::new(source), Endpoint::host("host")?)
}

/// On a device fast enough that the staged writes land before the suite
/// calls the provider, the race is only met where the device can stall its
/// queue: the suite stalls the source before staging an input it hands
/// over unread (blind probe 12's M80 and M91 on a device whose staged
/// writes landed within about 200 µs).
#[test]
fn a_stalled_source_meets_a_download_that_does_not_wait_for_queued_writes() {
    let download = |waits_for_input| {
        on_vendor_sim(true, move |source| {
            Arc::new(Download {
                source: source.device.clone(),
                waits_for_input,
            })
        })
    };
    let suite = ProviderSuite::new("fast-queued-stage", Level::V2)
        .route("waits", || fast_queued_source(true), download(true))
        .route(
            "reads_at_once",
            || fast_queued_source(true),
            download(false),
        )
        .route(
            "reads_at_once_unstalled",
            || fast_queued_source(false),
            download(false),
        )
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    no_rule_fails(&suite, &report, "waits", Level::V2.rules());
    // Without a stall the writes have landed before the provider reads:
    // the race is not met (which is why the stall exists).
    no_rule_fails(
        &suite,
        &report,
        "reads_at_once_unstalled",
        Level::V2.rules(),
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "reads_at_once", Rule::NoError) else {
        panic!("{}", report.to_table());
    };
    assert!(
        text.contains("in flight") || text.contains("progress"),
        "{text}"
    );
}

/// The host to `sim0`, whose copies land on their own at once (latency
/// mode, no latency), as a fast device's do; `stalling`: its adapter
/// answers the suite's `stall_queues`.
fn fast_destination(stalling: bool) -> Result<Route, HarnessError> {
    let device = SimDevice::new(0).adapter_context("opening sim0")?;
    device.set_completion_mode(CompletionMode::Latency {
        base: Duration::ZERO,
        jitter: Duration::ZERO,
        seed: 1,
    });
    let destination = VendorSim::new(device.clone(), vec![device], false);
    let destination = if stalling {
        destination.stalling()
    } else {
        destination
    };
    Route::new(Endpoint::host("host")?, Endpoint::new(destination))
}

/// An upload that queues its copy on the destination's stream and waits
/// for it, or returns at once (as a provider that waits on another
/// queue's fence: the source's, say, which holds nothing of this copy).
#[derive(Debug)]
struct Upload {
    destination: SimDevice,
    waits_for_copy: bool,
}

impl TransferProvider for Upload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "Upload::transfer_blocking";
        let input = request.input();
        with_element!(input.dtype(), T => {
            let values = read_compact::<T>(input)?;
            copy_onto(&self.destination, input.shape().to_vec(), values, self.waits_for_copy, OP)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

/// On a destination fast enough that a copy lands before anyone asks, a
/// provider that returns before its copy landed is seen only where the
/// destination can stall: the suite stalls it just before each call whose
/// input it hands over unread, so the copy queued in the call waits
/// behind the stall (the race of blind probe 13's M13, a peer copy that
/// waited on the source's fence, not the destination's).
#[test]
fn a_stalled_destination_meets_an_upload_that_returns_before_its_copy_lands() {
    let upload = |waits_for_copy| {
        on_vendor_sim(false, move |destination| {
            Arc::new(Upload {
                destination: destination.device.clone(),
                waits_for_copy,
            })
        })
    };
    let suite = ProviderSuite::new("fast-destination", Level::V2)
        .route("waits", || fast_destination(true), upload(true))
        .route("returns_at_once", || fast_destination(true), upload(false))
        .route(
            "returns_at_once_unstalled",
            || fast_destination(false),
            upload(false),
        )
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    no_rule_fails(&suite, &report, "waits", Level::V2.rules());
    // On the fixed cases (one call at a time, no stall of the held pass's
    // deferred reads before them), the copy has landed before the suite
    // looks unless the destination stalled just before the call: the race
    // is met only with that stall (which is why it exists).
    let failing_alone = |route: &str| {
        report
            .rows()
            .iter()
            .filter(|row| row.route.starts_with(&format!("{route} (")))
            .filter(|row| row.layout == "owned" || row.layout.starts_with("view("))
            .filter(|row| {
                row.violations
                    .iter()
                    .any(|v| v.rule == Rule::Completion.id())
            })
            .count()
    };
    assert_eq!(
        failing_alone("returns_at_once_unstalled"),
        0,
        "{}",
        report.to_table()
    );
    assert!(
        failing_alone("returns_at_once") > 0,
        "{}",
        report.to_table()
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "returns_at_once", Rule::Completion) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("returned"), "{text}");
}

/// A source adapter whose `stage` is wrong (each owned input's first
/// element off by one bit) under a correct download: `values` fails, and
/// says the input was already wrong when read before the call, so the
/// vendor looks at the adapter, not the provider.
#[test]
fn a_wrong_stage_under_a_correct_download_is_named_in_the_values_failure() {
    let source = || -> Result<Route, HarnessError> {
        let device = SimDevice::new(0).adapter_context("opening sim0")?;
        let source = VendorSim::new(device.clone(), vec![device], false).corrupting_stage();
        Route::new(Endpoint::new(source), Endpoint::host("host")?)
    };
    let download = on_vendor_sim(true, |source| {
        Arc::new(SimDownload::new(source.device.clone()))
    });
    let suite = ProviderSuite::new("wrong-stage", Level::V2)
        .route("download", source, download)
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "download", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(
        text.contains("the input was wrong before the call"),
        "{text}"
    );
}

/// An adapter whose `stall_queues` panics (its own bug, which the guide
/// says must not happen) is taken as one that cannot stall: the stall the
/// suite makes inside the Spy's call, just before the provider's, must
/// not be charged to a correct provider as a panic.
#[test]
fn an_adapter_whose_stall_panics_is_not_charged_to_the_provider() {
    let destination = || -> Result<Route, HarnessError> {
        let device = SimDevice::new(0).adapter_context("opening sim0")?;
        let destination = VendorSim::new(device.clone(), vec![device], false)
            .stalling()
            .panicking_stall();
        Route::new(Endpoint::host("host")?, Endpoint::new(destination))
    };
    let upload = on_vendor_sim(false, |destination| {
        Arc::new(Upload {
            destination: destination.device.clone(),
            waits_for_copy: true,
        })
    });
    let suite = ProviderSuite::new("panicking-stall", Level::V2)
        .route("waits", destination, upload)
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    no_rule_fails(&suite, &report, "waits", Level::V2.rules());
}

/// A suite whose one route, `download`, moves the cases of a `sim0`
/// behind an adapter with `fault` to the host, with a download that waits
/// for its input: whatever fails is the adapter's doing.
fn faulty_adapter_suite(name: &str, fault: fn(VendorSim) -> VendorSim) -> ProviderSuite {
    let source = move || -> Result<Route, HarnessError> {
        let device = SimDevice::new(0).adapter_context("opening sim0")?;
        let source = fault(VendorSim::new(device.clone(), vec![device], false));
        Route::new(Endpoint::new(source), Endpoint::host("host")?)
    };
    let download = on_vendor_sim(true, |source| {
        Arc::new(Download {
            source: source.device.clone(),
            waits_for_input: true,
        })
    });
    ProviderSuite::new(name, Level::V2)
        .route("download", source, download)
        .profile(Profile::Quick)
        .seed(3)
}

/// An adapter whose `stage` panics (here on every view) is the adapter's
/// fault: those cases are reported as not set up, naming the adapter and
/// its panic, the provider is charged with nothing, and every other case
/// still runs (the panic used to kill the route's case worker).
#[test]
fn an_adapter_whose_stage_panics_fails_setup_and_names_the_adapter() {
    let suite = faulty_adapter_suite("panicking-stage", VendorSim::panicking_stage_on_views);
    let report = suite.run();
    let rows = report.rows();
    let (views, others): (Vec<_>, Vec<_>) =
        rows.iter().partition(|row| row.layout.starts_with("view("));
    assert!(!views.is_empty(), "{}", report.to_table());
    for row in &views {
        assert_eq!(row.verdict, Verdict::Fail, "{row:?}");
        assert!(
            row.violations.iter().all(|violation| violation.rule == "setup"
                && violation.message.contains(
                    "the adapter of endpoint sim0 panicked in stage: VendorSim::stage cannot stage views"
                )),
            "{row:?}"
        );
    }
    // The owned fixed cases ran, and the provider broke no rule on them.
    let owned_passed = others
        .iter()
        .filter(|row| row.layout == "owned" && row.verdict == Verdict::Pass)
        .count();
    assert!(owned_passed > 0, "{}", report.to_table());
    assert!(
        rows.iter().all(|row| row
            .violations
            .iter()
            .all(|violation| violation.rule == "setup")),
        "{}",
        report.to_table()
    );
}

/// An adapter whose `read_back` panics cannot show the suite its inputs:
/// `input-intact` is skipped, naming the adapter's panic, and no rule is
/// charged to the provider (the panic unwound through the run and broke
/// `no-panic`).
#[test]
fn an_adapter_whose_read_back_panics_leaves_input_intact_unchecked() {
    let suite = faulty_adapter_suite("panicking-read-back", VendorSim::panicking_read_back);
    let report = suite.run();
    let others: Vec<Rule> = Level::V2
        .rules()
        .iter()
        .copied()
        .filter(|rule| *rule != Rule::InputIntact)
        .collect();
    no_rule_fails(&suite, &report, "download", &others);
    let RuleVerdict::Skip(why) = suite.check(&report, "download", Rule::InputIntact) else {
        panic!("{}", report.to_table());
    };
    assert!(
        why.contains("the adapter of endpoint sim0 panicked in read_back"),
        "{why}"
    );
}
