//! A destination whose engine specialises each plan on every extent of
//! its input, as an engine that compiles a kernel per shape does, written
//! from the public API alone. The rig keeps one shape-generic plan per
//! dtype, rank and layout kind; the runtime refuses that plan, before the
//! provider is called, for an input of another shape. The rig must then
//! prepare again for the case, not report the refusal as the provider's
//! or the runtime's failure.

use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_runtime::{
    CorePrepareContext, InputSpecializationRequirements, LayoutPrepareRequest, LayoutRuntime,
    PrepareCapability, PrepareError, PreparedOperation, PreparedOperationBinding,
    PreparedOperationPlan, SpecializationProjection, SpecializationRequirements,
};
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::{Oracle, Rig, RuntimeVerdict};

/// Prepares a plan only once the runtime has pinned every extent of every
/// input; until then it asks for that specialisation.
#[derive(Debug)]
struct PerShapePreparer;

#[derive(Debug)]
struct PerShapeOperation {
    binding: PreparedOperationBinding,
    specialization: SpecializationProjection,
}

impl PreparedOperation for PerShapeOperation {
    fn binding(&self) -> &PreparedOperationBinding {
        &self.binding
    }

    fn specialization(&self) -> &SpecializationProjection {
        &self.specialization
    }

    fn retained_bytes(&self) -> usize {
        0
    }
}

fn per_shape_plan(context: &CorePrepareContext<'_>) -> Result<PrepareCapability, PrepareError> {
    let ranks: Vec<usize> = context
        .inputs()
        .entries()
        .iter()
        .map(|entry| entry.shape().len())
        .collect();
    let pinned = context.specialization().inputs().len() == ranks.len()
        && context
            .specialization()
            .inputs()
            .iter()
            .zip(&ranks)
            .all(|(input, &rank)| input.concrete_dimensions().len() == rank);
    if pinned {
        return Ok(PrepareCapability::Prepared(
            PreparedOperationPlan::metadata(Arc::new(PerShapeOperation {
                binding: context.binding().clone(),
                specialization: context.specialization().clone(),
            })),
        ));
    }
    let inputs = ranks
        .iter()
        .map(|&rank| {
            let mut input = InputSpecializationRequirements::builder();
            input
                .rank(true)
                .concrete_dimensions((0..rank as u32).collect::<Vec<u32>>());
            input.build()
        })
        .collect::<Result<Vec<_>, _>>()
        .expect("valid requirements");
    Ok(PrepareCapability::NeedsSpecialization(
        SpecializationRequirements::new(inputs),
    ))
}

impl LayoutRuntime for PerShapePreparer {
    fn prepare(
        &self,
        request: LayoutPrepareRequest<'_>,
    ) -> Result<PrepareCapability, PrepareError> {
        per_shape_plan(request.context())
    }
}

/// A vendor's CPU device whose engine prepares per shape.
#[derive(Debug)]
struct PerShapeCpu {
    id: EngineId,
}

impl DeviceEndpoint for PerShapeCpu {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            "per-shape-cpu",
            "per-shape-cpu",
            self.id.clone(),
            StorageClass::new("tenferro-cpu.host.v1").expect("tenferro-cpu's storage class"),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let provider = ProviderId::new("example.per-shape").adapter_context("provider id")?;
        let identity =
            ProviderDeviceIdentity::new(provider, "cpu:0").adapter_context("device identity")?;
        let hardware = HardwareClassId::new("example.per-shape.v1").adapter_context("hardware")?;
        let mut bundle = CoreCapabilityBundle::builder();
        bundle.layout(Arc::new(PerShapePreparer));
        self.describe()
            .registration::<CpuEngine>(role, identity, hardware, bundle.build())
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(
            CpuEngine::serial().with_runtime_engine_id(self.id.clone()),
        ))
    }
}

fn route() -> Result<Route, HarnessError> {
    let id = EngineId::new("example.per-shape.cpu0.v1").adapter_context("engine id")?;
    Route::new(Endpoint::host("host")?, Endpoint::new(PerShapeCpu { id }))
}

#[test]
fn a_plan_refused_for_another_shape_is_prepared_again_for_the_case() {
    let route = route().unwrap();
    let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    // One rank and dtype, so one cached plan, refused for each new shape.
    for shape in [vec![4], vec![5], vec![4], vec![1], vec![0]] {
        let case = Case::patterned(DType::F32, shape.clone(), Layout::Owned).unwrap();
        let outcome = rig.run(&case).unwrap();
        assert!(
            matches!(outcome.runtime, RuntimeVerdict::Accepted(_)),
            "{shape:?}: {:?}",
            outcome.runtime
        );
        assert_eq!(outcome.calls.len(), 1, "{shape:?}: one provider call");
        let judgement = Oracle.judge(&case, &route, &outcome);
        assert!(judgement.passed(), "{shape:?}: {:?}", judgement.rules());
    }
}

#[test]
fn a_correct_provider_passes_the_suite_on_a_device_that_prepares_per_shape() {
    let suite = ProviderSuite::new("per-shape", Level::V1)
        .route("copy", route, |_| {
            Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
        })
        .seed(31);
    let report = suite.run();
    assert!(
        suite.check(&report, "copy", Rule::Values).is_pass(),
        "{}",
        report.to_table()
    );
    for rule in Rule::ALL {
        let verdict = suite.check(&report, "copy", rule);
        assert_ne!(verdict.verdict_name(), "fail", "{rule:?}: {verdict:?}");
    }
}
