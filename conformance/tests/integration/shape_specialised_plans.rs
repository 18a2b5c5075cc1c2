//! Destinations whose engines plan differently from the built-in ones,
//! written from the public API alone. The rig keeps one shape-generic plan
//! per dtype, rank and layout kind (its program's extents are symbolic);
//! here, one engine specialises each plan on every extent of its input, as
//! an engine that compiles a kernel per shape does (the runtime then
//! refuses a kept plan for another shape, before the provider is called),
//! and one cannot plan symbolic extents at all. Either way the case must
//! run as it would on a plan made for it alone, not fail as the
//! provider's or the runtime's fault.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tenferro_cpu::CpuEngine;
use tenferro_ops::dim_expr::DimExpr;
use tenferro_runtime::program::{CoreSemanticOp, SemanticOpRef};
use tenferro_runtime::{
    CorePrepareContext, InputSpecializationRequirements, LayoutPrepareRequest, LayoutRuntime,
    PrepareCapability, PrepareError, PreparedOperation, PreparedOperationBinding,
    PreparedOperationPlan, SpecializationProjection, SpecializationRequirements, UnsupportedReason,
};
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::{Oracle, Rig, RuntimeVerdict};

/// How the test engine plans the destination's reshape.
#[derive(Clone, Copy, Debug)]
enum Planning {
    /// Only once the runtime has pinned every extent of every input;
    /// until then it asks for that specialisation.
    PerShape,
    /// Only a reshape whose extents are constants; symbolic ones are
    /// unsupported.
    ConstantExtents,
}

/// The engine's layout runtime; `plans` counts the plans it made.
#[derive(Debug)]
struct Preparer {
    planning: Planning,
    plans: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct MetadataOperation {
    binding: PreparedOperationBinding,
    specialization: SpecializationProjection,
}

impl PreparedOperation for MetadataOperation {
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

/// The specialisation that pins every extent of `context`'s inputs, when
/// it does not pin them yet.
fn every_extent_pinned(context: &CorePrepareContext<'_>) -> Option<SpecializationRequirements> {
    let ranks: Vec<usize> = context
        .inputs()
        .entries()
        .iter()
        .map(|entry| entry.shape().len())
        .collect();
    let inputs = context.specialization().inputs();
    let pinned = inputs.len() == ranks.len()
        && inputs
            .iter()
            .zip(&ranks)
            .all(|(input, &rank)| input.concrete_dimensions().len() == rank);
    if pinned {
        return None;
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
    Some(SpecializationRequirements::new(inputs))
}

impl LayoutRuntime for Preparer {
    fn prepare(
        &self,
        request: LayoutPrepareRequest<'_>,
    ) -> Result<PrepareCapability, PrepareError> {
        let context = request.context();
        match self.planning {
            Planning::PerShape => {
                if let Some(wider) = every_extent_pinned(context) {
                    return Ok(PrepareCapability::NeedsSpecialization(wider));
                }
            }
            Planning::ConstantExtents => {
                if let SemanticOpRef::Core(CoreSemanticOp::Reshape { to_shape }) =
                    request.operation().op()
                    && !to_shape
                        .iter()
                        .all(|extent| matches!(extent, DimExpr::Const(_)))
                {
                    return Ok(PrepareCapability::Unsupported(
                        UnsupportedReason::Operation {
                            operation: "reshape to symbolic extents",
                        },
                    ));
                }
            }
        }
        self.plans.fetch_add(1, Ordering::SeqCst);
        Ok(PrepareCapability::Prepared(
            PreparedOperationPlan::metadata(Arc::new(MetadataOperation {
                binding: context.binding().clone(),
                specialization: context.specialization().clone(),
            })),
        ))
    }
}

/// A vendor's CPU device whose engine plans its reshape as `planning` says.
#[derive(Debug)]
struct PlanningCpu {
    id: EngineId,
    planning: Planning,
    plans: Arc<AtomicUsize>,
}

impl DeviceEndpoint for PlanningCpu {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            "planning-cpu",
            "planning-cpu",
            self.id.clone(),
            StorageClass::new("tenferro-cpu.host.v1").expect("tenferro-cpu's storage class"),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let provider = ProviderId::new("example.planning").adapter_context("provider id")?;
        let identity =
            ProviderDeviceIdentity::new(provider, "cpu:0").adapter_context("device identity")?;
        let hardware = HardwareClassId::new("example.planning.v1").adapter_context("hardware")?;
        let mut bundle = CoreCapabilityBundle::builder();
        bundle.layout(Arc::new(Preparer {
            planning: self.planning,
            plans: Arc::clone(&self.plans),
        }));
        self.describe()
            .registration::<CpuEngine>(role, identity, hardware, bundle.build())
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(
            CpuEngine::serial().with_runtime_engine_id(self.id.clone()),
        ))
    }
}

/// Host to a [`PlanningCpu`]; the counter of the plans its engine made.
fn route(planning: Planning) -> Result<(Route, Arc<AtomicUsize>), HarnessError> {
    let id = EngineId::new("example.planning.cpu0.v1").adapter_context("engine id")?;
    let plans = Arc::new(AtomicUsize::new(0));
    let device = PlanningCpu {
        id,
        planning,
        plans: Arc::clone(&plans),
    };
    Ok((
        Route::new(Endpoint::host("host")?, Endpoint::new(device))?,
        plans,
    ))
}

/// Runs `shapes` of F32 through a rig on `planning`'s device: each case is
/// accepted with one provider call and passes the oracle. Returns how
/// many plans the engine made.
fn run_shapes(planning: Planning, shapes: &[&[usize]]) -> usize {
    let (route, plans) = route(planning).unwrap();
    let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    for shape in shapes {
        let case = Case::patterned(DType::F32, shape.to_vec(), Layout::Owned).unwrap();
        let outcome = rig.run(&case).unwrap();
        assert!(
            matches!(outcome.runtime, RuntimeVerdict::Accepted(_)),
            "{planning:?} {shape:?}: {:?}",
            outcome.runtime
        );
        assert_eq!(
            outcome.calls.len(),
            1,
            "{planning:?} {shape:?}: one provider call"
        );
        let judgement = Oracle.judge(&case, &route, &outcome);
        assert!(
            judgement.passed(),
            "{planning:?} {shape:?}: {:?}",
            judgement.rules()
        );
    }
    plans.load(Ordering::SeqCst)
}

#[test]
fn a_kept_plan_refused_for_another_shape_runs_the_case_on_a_plan_of_its_own() {
    // One dtype and rank: one kept plan, pinned to [4]. [5], [1] and [0]
    // each need a plan of their own; the second [4] fits the kept one.
    // Four plans show that the engine did specialise (one plan would
    // have served all five otherwise).
    let plans = run_shapes(Planning::PerShape, &[&[4], &[5], &[4], &[1], &[0]]);
    assert_eq!(plans, 4);
}

#[test]
fn an_engine_that_cannot_plan_symbolic_extents_gets_a_plan_per_shape() {
    // A plan per shape, with constant extents: the symbolic program was
    // refused, so no plan serves another shape. (The second [4] reuses
    // the first's: tenferro keeps prepared plans of equal programs.)
    let plans = run_shapes(Planning::ConstantExtents, &[&[4], &[5], &[4], &[2, 3]]);
    assert_eq!(plans, 3);
}

#[rstest::rstest]
#[case::per_shape(Planning::PerShape)]
#[case::constant_extents(Planning::ConstantExtents)]
fn a_correct_provider_passes_the_suite_on_a_device_that_plans_its_own_way(
    #[case] planning: Planning,
) {
    let suite = ProviderSuite::new("planning", Level::V1)
        .route(
            "copy",
            move || route(planning).map(|(route, _)| route),
            |_| Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>),
        )
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
