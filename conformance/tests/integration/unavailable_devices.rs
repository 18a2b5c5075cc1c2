//! A device that is not here: every rule test of its routes is a
//! skip with the reason, through `ProviderSuite` exactly as in the CLI; the
//! require variables turn those skips into failures. Shown for CUDA (no GPU
//! on this machine) and for a vendor's own adapter that says it is absent.

use std::sync::Arc;

use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::cuda::REQUIRE_CUDA_ENV;
use tenferro_transfer_conformance::cuda::cuda_unavailable_reason;
use tenferro_transfer_conformance::harness::REQUIRE_DEVICES_ENV;

/// A vendor's device whose driver is not installed on this machine.
#[derive(Debug)]
struct AbsentNpu {
    id: EngineId,
}

impl AbsentNpu {
    fn open() -> Result<Self, HarnessError> {
        EngineId::new("vendor.npu0.v1")
            .map(|id| Self { id })
            .map_err(|error| HarnessError::adapter("the NPU's engine id", error))
    }
}

fn absent(what: &str) -> HarnessError {
    HarnessError::adapter(what.to_owned(), "the NPU driver is not installed")
}

impl DeviceEndpoint for AbsentNpu {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            "npu0",
            "vendor-npu",
            self.id.clone(),
            StorageClass::new("vendor.npu.v1").expect("a valid storage class"),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn registration(&self, _role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        Err(absent("registration"))
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Err(absent("engine"))
    }

    fn availability(&self) -> Availability {
        Availability::Unavailable {
            reason: "the NPU driver (libnpu.so) is not installed".to_owned(),
        }
    }
}

fn npu_suite() -> ProviderSuite {
    ProviderSuite::new("npu-upload", Level::V1)
        .route(
            "upload",
            || Route::new(Endpoint::host("host")?, Endpoint::new(AbsentNpu::open()?)),
            |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>),
        )
        .profile(Profile::Quick)
}

fn cuda_suite() -> ProviderSuite {
    ProviderSuite::new("cuda-upload", Level::V1)
        .route("upload", Route::host_to_cuda, |_| {
            Err("never built: the route is not here".into())
        })
        .profile(Profile::Quick)
}

fn verdicts(suite: &ProviderSuite) -> Vec<(Rule, RuleVerdict)> {
    let report = suite.run();
    Level::V1
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(&report, "upload", *rule)))
        .collect()
}

fn assert_every_rule_skips(suite: &ProviderSuite, because: &str) {
    for (rule, verdict) in verdicts(suite) {
        let RuleVerdict::Skip(reason) = &verdict else {
            panic!("{rule}: {verdict:?}, expected a skip");
        };
        assert!(reason.contains(because), "{rule}: {reason}");
    }
}

fn assert_every_rule_fails(suite: &ProviderSuite, because: &str) {
    for (rule, verdict) in verdicts(suite) {
        let RuleVerdict::Fail(text) = &verdict else {
            panic!("{rule}: {verdict:?}, expected a failure");
        };
        assert!(text.contains(because), "{rule}: {text}");
    }
}

/// Run one ignored test of this module, `test`, with `variable=value`.
fn rerun_with(test: &str, variable: &str, value: &str) -> std::process::Output {
    crate::support::rerun_with(module_path!(), test, variable, value)
}

#[test]
fn a_vendor_device_that_is_absent_skips_every_rule_with_its_reason() {
    assert_every_rule_skips(&npu_suite(), "libnpu.so) is not installed");
}

#[test]
#[ignore = "run by requiring_the_vendor_device_fails_every_rule, with the require variable set"]
fn npu_rules_fail_when_required() {
    assert_every_rule_fails(&npu_suite(), "requires the vendor-npu device");
}

#[test]
fn requiring_the_vendor_device_fails_every_rule() {
    for value in ["vendor-npu", "cuda,vendor-npu", "all"] {
        let output = rerun_with("npu_rules_fail_when_required", REQUIRE_DEVICES_ENV, value);
        assert!(
            output.status.success(),
            "{REQUIRE_DEVICES_ENV}={value}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    // Another kind required leaves this one a skip.
    let output = rerun_with("npu_rules_fail_when_required", REQUIRE_DEVICES_ENV, "cuda");
    assert!(!output.status.success());
}

/// A vendor's device whose opening fails on this machine.
#[derive(Debug)]
struct FailingNpu;

impl FailingNpu {
    fn open() -> Result<AbsentNpu, std::io::Error> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no /dev/npu0: the NPU is not plugged in",
        ))
    }
}

/// The lazy-open pattern: the route factory opens the device, and an
/// opening that fails is an absent device, not a route that failed to
/// build.
fn failing_npu_suite() -> ProviderSuite {
    ProviderSuite::new("npu-upload", Level::V1)
        .route(
            "upload",
            || {
                Route::new(
                    Endpoint::host("host")?,
                    Endpoint::open_or_absent("npu0", "vendor-npu", FailingNpu::open)?,
                )
            },
            |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>),
        )
        .profile(Profile::Quick)
}

#[test]
fn a_vendor_device_that_fails_to_open_skips_every_rule_with_the_error() {
    assert_every_rule_skips(&failing_npu_suite(), "npu0: no /dev/npu0");
}

#[test]
#[ignore = "run by requiring_a_device_that_fails_to_open_fails_every_rule, with the require variable set"]
fn failing_npu_rules_fail_when_required() {
    assert_every_rule_fails(&failing_npu_suite(), "requires the vendor-npu device");
}

#[test]
fn requiring_a_device_that_fails_to_open_fails_every_rule() {
    let output = rerun_with(
        "failing_npu_rules_fail_when_required",
        REQUIRE_DEVICES_ENV,
        "vendor-npu",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// A route whose factory says itself that its device is not here, with no
/// endpoint that names the device's kind.
fn self_absent_suite() -> ProviderSuite {
    ProviderSuite::new("npu-upload", Level::V1)
        .route(
            "upload",
            || {
                Err(HarnessError::Unavailable {
                    reason: "npu9: no /dev/npu9 on this machine".to_owned(),
                })
            },
            |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>),
        )
        .profile(Profile::Quick)
}

#[test]
fn a_route_that_says_its_device_is_not_here_skips_every_rule() {
    assert_every_rule_skips(&self_absent_suite(), "no /dev/npu9");
}

#[test]
#[ignore = "run by requiring_every_device_fails_a_route_that_says_its_device_is_not_here, with the require variable set"]
fn self_absent_rules_fail_when_every_device_is_required() {
    assert_every_rule_fails(&self_absent_suite(), "requires every device");
}

#[test]
fn requiring_every_device_fails_a_route_that_says_its_device_is_not_here() {
    let output = rerun_with(
        "self_absent_rules_fail_when_every_device_is_required",
        REQUIRE_DEVICES_ENV,
        "all",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // A kind required is not this route's: it has named none.
    let output = rerun_with(
        "self_absent_rules_fail_when_every_device_is_required",
        REQUIRE_DEVICES_ENV,
        "vendor-npu",
    );
    assert!(!output.status.success());
}

#[test]
fn a_cuda_route_without_a_gpu_skips_every_rule_with_the_reason() {
    let Some(reason) = cuda_unavailable_reason() else {
        eprintln!(
            "SKIP a_cuda_route_without_a_gpu_skips_every_rule_with_the_reason: a GPU is here"
        );
        return;
    };
    assert_every_rule_skips(&cuda_suite(), &reason);
}

#[test]
#[ignore = "run by requiring_cuda_fails_every_rule, with the require variable set"]
fn cuda_rules_fail_when_required() {
    assert_every_rule_fails(&cuda_suite(), "TRANSFER_CONFORMANCE_REQUIRE_CUDA=1");
}

#[test]
fn requiring_cuda_fails_every_rule() {
    if cuda_unavailable_reason().is_none() {
        eprintln!("SKIP requiring_cuda_fails_every_rule: a GPU is here");
        return;
    }
    let output = rerun_with("cuda_rules_fail_when_required", REQUIRE_CUDA_ENV, "1");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// A host source that stages owned tensors only (as CUDA memory cannot be
/// carved into views): its view cases are skips, never failures.
#[derive(Debug)]
struct OwnedOnlyHost {
    inner: Endpoint,
}

impl DeviceEndpoint for OwnedOnlyHost {
    fn describe(&self) -> DeviceDescription {
        let mut description = self.inner.adapter().describe();
        description.name = "owned-only".to_owned();
        description
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        self.inner.registration(role)
    }

    fn engine(&self, role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        self.inner.engine(role)
    }

    fn stage(
        &self,
        case: &tenferro_transfer_conformance::harness::Case,
        use_input: &mut dyn FnMut(tenferro_tensor::TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        if matches!(case.layout(), Layout::View(_)) {
            return Err(HarnessError::Unavailable {
                reason: "this source stages owned tensors only".to_owned(),
            });
        }
        self.inner.adapter().stage(case, use_input)
    }

    fn stages_views(&self) -> bool {
        false
    }
}

#[test]
fn cases_a_source_cannot_stage_are_skips_not_failures() {
    let suite = ProviderSuite::new("host-copy", Level::V1)
        .route(
            "copy",
            || {
                let source = OwnedOnlyHost {
                    inner: Endpoint::host("owned-src")?,
                };
                Route::new(Endpoint::new(source), Endpoint::host("host")?)
            },
            |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>),
        )
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    assert!(report.summary().skipped > 0, "{}", report.to_table());
    assert!(
        report
            .rows()
            .iter()
            .filter(|row| row.skip_reason.is_some())
            .all(|row| row.layout.starts_with("view(")),
        "{}",
        report.to_table()
    );
    assert!(suite.check(&report, "copy", Rule::Values).is_pass());
    // The fuzzer skips such cases too.
    let mut fuzzer = suite.fuzzer();
    for seed in 0_u8..64 {
        fuzzer.run(&[seed; 48]).unwrap();
    }
}
