//! A rule never checked never reads "pass": a vendor's device
//! that keeps no allocation ledger, written here from the public API alone
//! as the adapter rustdoc teaches, and a provider that fails one rule on
//! some cases. Its failing generated and concurrent cases used to count
//! `no-leak` and `capability-honesty` as passed, although no case could
//! check them; they are skips, with the reason, on every path.

use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_tensor::Error;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::record::Origin;

/// A vendor's plain CPU device: host memory, no ledger, no completion
/// probe, a destination only.
#[derive(Debug)]
struct PlainCpu {
    id: EngineId,
}

impl DeviceEndpoint for PlainCpu {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            "vendor-cpu",
            "vendor-cpu",
            self.id.clone(),
            StorageClass::new("tenferro-cpu.host.v1").expect("tenferro-cpu's storage class"),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn registration(&self, _role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let engine = CpuEngine::serial().with_runtime_engine_id(self.id.clone());
        tenferro_cpu::runtime_engine_registration_with_id(&engine, self.id.clone())
            .map_err(|e| HarnessError::adapter("registering vendor-cpu", e))
    }
    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(
            CpuEngine::serial().with_runtime_engine_id(self.id.clone()),
        ))
    }
}

fn route() -> Result<Route, HarnessError> {
    let id = EngineId::new("vendor.cpu0.v1").map_err(|e| HarnessError::adapter("engine id", e))?;
    Route::new(Endpoint::host("host")?, Endpoint::new(PlainCpu { id }))
}

/// A copy that refuses every I64 tensor: it breaks `no-error`, and only
/// that rule, on a part of the cases.
#[derive(Debug)]
struct NoI64 {
    copy: HostProvider,
}

impl TransferProvider for NoI64 {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if request.input().dtype() == DType::I64 {
            return Err(Error::unsupported("NoI64", "I64 is not copied").into());
        }
        self.copy.transfer_blocking(request)
    }
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("no-i64", Level::V1)
        .route("copy", route, |_| {
            Ok(Arc::new(NoI64 {
                copy: HostProvider::new(),
            }) as Arc<dyn TransferProvider>)
        })
        .seed(29)
}

#[test]
fn a_failing_provider_on_a_device_without_a_ledger_shows_its_unchecked_rules_as_skips() {
    let suite = suite();
    let report = suite.run();
    // The failure reaches every path that sums or lists cases.
    let origins: Vec<&Origin> = report
        .records()
        .iter()
        .filter(|record| record.outcome.breaks(Rule::NoError))
        .map(|record| &record.origin)
        .collect();
    assert!(
        origins
            .iter()
            .any(|origin| matches!(origin, Origin::Generated { .. })),
        "{}",
        report.to_table()
    );
    assert!(
        origins
            .iter()
            .any(|origin| matches!(origin, Origin::Concurrent { .. })),
        "{}",
        report.to_table()
    );
    assert_eq!(
        suite.check(&report, "copy", Rule::NoError).verdict_name(),
        "fail"
    );
    for rule in [Rule::NoLeak, Rule::CapabilityHonesty, Rule::Completion] {
        let verdict = suite.check(&report, "copy", rule);
        assert_eq!(verdict.verdict_name(), "skip", "{rule}: {verdict:?}");
        assert!(
            !report
                .records()
                .iter()
                .any(|record| record.outcome.checked(rule)),
            "{rule} counted as checked on some record"
        );
    }
    // The rules it could check still pass, on the cases that checked them.
    for rule in [Rule::Values, Rule::Dtype, Rule::NoPanic] {
        assert!(suite.check(&report, "copy", rule).is_pass(), "{rule}");
    }
}
