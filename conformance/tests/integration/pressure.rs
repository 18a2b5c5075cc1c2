//! A vendor's provider under pressure, through `ProviderSuite` alone: a
//! provider that corrupts one call in a few hundred, and one that is
//! correct alone but races under concurrent calls, must each fail `values`
//! in the default profile; their correct twins must pass every rule.
//!
//! The providers are written here from scratch, through the public API
//! only, the way `examples/stream-upload` is: they know nothing of the
//! harness.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_tensor::{Complex, Error, TensorRead};
use tenferro_transfer_conformance::mock_devices::{Element, read_compact};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{Report, Verdict};

const OP: &str = "pressure-test provider";

/// The largest tensor the providers carry, in elements.
const MAX_ELEMENTS: usize = 1 << 16;

/// What a provider does to the bytes of each call between reading the
/// input and queueing the copy.
trait Staging: Send + Sync + std::fmt::Debug + 'static {
    fn stage(&self, bytes: Vec<u8>) -> Vec<u8>;
}

/// Host to a simulated device through stream 1, with the bytes of every
/// call passed through a `Staging`; carries the four float dtypes and
/// refuses the others.
#[derive(Debug)]
struct Upload<S> {
    device: SimDevice,
    staging: S,
}

impl<S: Staging> Upload<S> {
    fn copy<T: Element>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        let values = read_compact::<T>(input)?;
        let mut bytes = Vec::new();
        T::extend_bytes(&values, &mut bytes);
        let values = T::from_bytes(&self.staging.stage(bytes));
        let (tensor, token) = self
            .device
            .stream(1)
            .enqueue_copy(input.shape().to_vec(), values)?;
        token
            .wait()
            .map_err(|error| Error::backend_source(OP, error))?;
        Ok(tensor)
    }
}

impl<S: Staging> TransferProvider for Upload<S> {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        let count: usize = input.shape().iter().product();
        if count > MAX_ELEMENTS {
            return Err(Error::unsupported(OP, format!("{count} elements")).into());
        }
        match input.dtype() {
            DType::F32 => self.copy::<f32>(input),
            DType::F64 => self.copy::<f64>(input),
            DType::C32 => self.copy::<Complex<f32>>(input),
            DType::C64 => self.copy::<Complex<f64>>(input),
            other => Err(Error::unsupported(OP, format!("no {other:?}")).into()),
        }
    }
}

/// Corrupts the first byte of every `period`-th non-empty call (none when
/// `period` is `None`): state kept between calls, as a cache or a counter
/// would.
#[derive(Debug)]
struct EveryNth {
    period: Option<usize>,
    calls: AtomicUsize,
}

impl Staging for EveryNth {
    fn stage(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if bytes.is_empty() {
            return bytes;
        }
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self
            .period
            .is_some_and(|period| call.is_multiple_of(period))
        {
            bytes[0] ^= 1;
        }
        bytes
    }
}

/// Stages every call through one scratch buffer shared by all calls. The
/// racy one releases the lock between writing the scratch and reading it
/// back, so a concurrent call can overwrite it in between; alone it is
/// correct. The correct one holds the lock across both.
#[derive(Debug)]
struct SharedScratch {
    racy: bool,
    scratch: Mutex<Vec<u8>>,
}

impl Staging for SharedScratch {
    fn stage(&self, bytes: Vec<u8>) -> Vec<u8> {
        let lock = || self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.racy {
            let mut scratch = lock();
            scratch.clear();
            scratch.extend_from_slice(&bytes);
            return scratch.clone();
        }
        {
            let mut scratch = lock();
            scratch.clear();
            scratch.extend_from_slice(&bytes);
        }
        // Real staging code would launch a copy here.
        std::thread::yield_now();
        let scratch = lock();
        let mut out = scratch[..scratch.len().min(bytes.len())].to_vec();
        out.resize(bytes.len(), 0);
        out
    }
}

fn suite<S: Staging>(name: &str, staging: impl Fn() -> S + Send + Sync + 'static) -> ProviderSuite {
    ProviderSuite::new(name, Level::V1)
        .route("upload", Route::host_to_sim, move |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("upload serves a simulated destination".into());
            };
            Ok(Arc::new(Upload {
                device: device.clone(),
                staging: staging(),
            }) as Arc<dyn TransferProvider>)
        })
        .capabilities(
            Capabilities::all()
                .dtypes([DType::F32, DType::F64, DType::C32, DType::C64])
                .max_elements(MAX_ELEMENTS),
        )
        .seed(7)
}

fn every_nth(period: Option<usize>) -> ProviderSuite {
    suite("every-nth", move || EveryNth {
        period,
        calls: AtomicUsize::new(0),
    })
}

fn shared_scratch(racy: bool) -> ProviderSuite {
    suite("shared-scratch", move || SharedScratch {
        racy,
        scratch: Mutex::new(Vec::new()),
    })
}

/// The summary and the rule tests agree, and every failed row names what
/// it broke.
fn assert_consistent(suite: &ProviderSuite, report: &Report) {
    let failed_rows = report
        .rows()
        .iter()
        .filter(|row| row.verdict == Verdict::Fail)
        .count();
    assert_eq!(report.summary().failed, failed_rows);
    for row in report.rows() {
        assert_eq!(
            row.verdict == Verdict::Fail,
            !row.violations.is_empty(),
            "{row:?}"
        );
    }
    let any_rule_fails = Level::V1
        .rules()
        .iter()
        .any(|rule| suite.check(report, "upload", *rule).verdict_name() == "fail");
    assert_eq!(
        report.summary().failed > 0,
        any_rule_fails,
        "{}",
        report.to_table()
    );
}

/// Every rule passes, but for `capability-honesty`, `completion` and
/// `no-leak` which may be skips (never failures).
fn assert_every_rule_passes(suite: &ProviderSuite, report: &Report) {
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    for rule in Level::V1.rules() {
        let verdict = suite.check(report, "upload", *rule);
        assert_ne!(verdict.verdict_name(), "fail", "{rule}: {verdict:?}");
    }
    assert!(suite.check(report, "upload", Rule::Values).is_pass());
    assert!(suite.check(report, "upload", Rule::NoLeak).is_pass());
}

#[test]
fn a_provider_that_corrupts_one_call_in_three_hundred_fails_the_values_test() {
    let suite = every_nth(Some(300));
    let report = suite.run();
    assert_consistent(&suite, &report);
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("values did not fail:\n{}", report.to_table())
    };
    assert!(text.contains("elements differ"), "{text}");
    assert!(text.contains("replay: "), "{text}");
    // No other rule is blamed.
    for rule in Level::V1.rules() {
        if *rule != Rule::Values {
            assert_ne!(
                suite.check(&report, "upload", *rule).verdict_name(),
                "fail",
                "{rule}"
            );
        }
    }
}

#[test]
fn a_failure_that_does_not_reproduce_keeps_its_case_and_violations() {
    // The 150th non-empty call lands in the generated run (after about 50
    // fixed cases); shrinking and the replay of the minimal case then pass.
    let suite = every_nth(Some(150));
    let report = suite.run();
    let generated = report
        .rows()
        .iter()
        .find(|row| row.layout.starts_with("generated:"))
        .unwrap();
    assert_eq!(generated.verdict, Verdict::Fail, "{}", report.to_table());
    assert!(
        generated.layout.contains("failed once on case {"),
        "{}",
        generated.layout
    );
    let message = &generated.violations[0].message;
    assert_eq!(generated.violations[0].rule, "values");
    assert!(
        message.contains("nondeterministic: failed on case {")
            && message.contains("passed on replay"),
        "{message}"
    );
    assert!(
        message.contains("TRANSFER_CONFORMANCE_REPLAY='"),
        "{message}"
    );
}

#[test]
fn the_same_provider_without_the_fault_passes_every_rule() {
    let suite = every_nth(None);
    let report = suite.run();
    assert_every_rule_passes(&suite, &report);
    let concurrent = report
        .rows()
        .iter()
        .find(|row| row.layout.starts_with("concurrent:"))
        .unwrap();
    assert!(
        concurrent.layout.ends_with(": 640 calls"),
        "{}",
        concurrent.layout
    );
}

#[test]
fn a_provider_that_races_on_shared_scratch_fails_values_under_concurrent_calls() {
    let suite = shared_scratch(true);
    let report = suite.run();
    assert_consistent(&suite, &report);
    // Alone, on one thread, it is correct: the fixed and generated cases pass.
    for row in report.rows() {
        if !row.layout.starts_with("concurrent:") {
            assert_ne!(row.verdict, Verdict::Fail, "{row:?}");
        }
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("values did not fail:\n{}", report.to_table())
    };
    assert!(text.contains("under concurrent calls: thread "), "{text}");
    assert!(
        text.contains("in flight at the same time: thread "),
        "{text}"
    );
    assert!(
        text.contains("replayed alone on one thread: passed"),
        "{text}"
    );
    assert!(
        text.contains(
            "TRANSFER_CONFORMANCE_SEED=7 TRANSFER_CONFORMANCE_ROUTES=upload cargo test upload::"
        ),
        "{text}"
    );
}

#[test]
fn the_same_provider_holding_its_lock_passes_every_rule() {
    let suite = shared_scratch(false);
    let report = suite.run();
    assert_every_rule_passes(&suite, &report);
}
