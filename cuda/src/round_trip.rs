//! A program that forces both directions: `reduce_sum(a + b)` with the add
//! on CUDA and the reduction on tenferro-cpu, so the runtime uploads both
//! inputs and downloads the sum's operand.

use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_gpu::cuda::CudaEngine;
use tenferro_runtime::{
    CompiledGraph, CoreCapabilityBundle, EngineId, EngineRegistration, ExecutionContextIdentity,
    ExecutionEngine, GraphCompiler, Prepared, Runtime, TracedTensor, TransferProvider,
};
use tenferro_tensor::{DType, Tensor, TensorRead};
use tenferro_transfer_harness::{EngineRole, read_compact};

use super::{CudaDownload, CudaEndpoint, CudaUpload};
use tenferro_transfer_harness::reregister;
use tenferro_transfer_harness::{
    Endpoint, HarnessError, PlacementRule, Spy, SpyRecord, StorageRule,
};

/// Which capabilities of a stock registration an engine keeps.
#[derive(Clone, Copy)]
enum Keep {
    Elementwise,
    Reduction,
}

fn restricted(
    stock: &EngineRegistration,
    keep: Keep,
    context: ExecutionContextIdentity,
    placement: PlacementRule,
    storage: StorageRule,
) -> Result<EngineRegistration, HarnessError> {
    let mut capabilities = CoreCapabilityBundle::builder();
    match keep {
        Keep::Elementwise => {
            if let Some(elementwise) = stock.capabilities().elementwise() {
                capabilities.elementwise(Arc::clone(elementwise));
            }
        }
        Keep::Reduction => {
            if let Some(reduction) = stock.capabilities().reduction() {
                capabilities.reduction(Arc::clone(reduction));
            }
        }
    }
    reregister(stock, capabilities.build(), context, placement, storage)
        .map_err(|source| HarnessError::config("round-trip registration", source))
}

/// What one round trip did.
#[derive(Clone, Debug)]
pub struct RoundTripOutcome {
    /// The runtime's `reduce_sum(a + b)`.
    pub sum: f64,
    /// Every call of the upload provider.
    pub uploads: Vec<SpyRecord>,
    /// Every call of the download provider.
    pub downloads: Vec<SpyRecord>,
}

/// Run `reduce_sum(a + b)` for two F64 host tensors of `shape`, the add on
/// `endpoint`'s CUDA engine and the reduction on tenferro-cpu, through
/// [`CudaUpload`] and [`CudaDownload`].
///
/// # Errors
///
/// [`HarnessError`] when a registration, the program, the plan or the run
/// fails.
pub fn round_trip(
    endpoint: &CudaEndpoint,
    shape: &[usize],
    a: Vec<f64>,
    b: Vec<f64>,
) -> Result<RoundTripOutcome, HarnessError> {
    let (mut cpu, cpu_stock) = host_engine()?;
    let cuda_stock = endpoint.registration(EngineRole::Destination)?;
    let mut cuda = endpoint.take_engine()?;
    let host = Endpoint::host("round-trip-host")?;
    let upload = Arc::new(Spy::with_destination(
        Arc::new(CudaUpload::new(endpoint.clone())),
        Endpoint::new(endpoint.clone()),
    ));
    let download = Arc::new(Spy::with_destination(
        Arc::new(CudaDownload::new(endpoint.clone())),
        host,
    ));
    let runtime = round_trip_runtime(endpoint, &cpu_stock, &cuda_stock, &upload, &download)?;
    let program = sum_program(shape)?;
    let stage = |values: Vec<f64>| {
        Tensor::from_vec_col_major(shape.to_vec(), values)
            .map_err(|source| HarnessError::Stage { source })
    };
    let (a, b) = (stage(a)?, stage(b)?);
    let inputs = [TensorRead::from_tensor(&a), TensorRead::from_tensor(&b)];
    let plan = runtime
        .prepare(&program, &inputs, &[cpu.target(), cuda.target()])
        .map_err(|error| HarnessError::Prepare {
            route: "host->cuda->host".to_owned(),
            source: Box::new(error),
        })?;
    let mut engines: [&mut dyn ExecutionEngine; 2] = [&mut cpu, &mut cuda];
    let sum = run_sum(&runtime, &mut engines, &plan, &inputs)?;
    Ok(RoundTripOutcome {
        sum,
        uploads: upload.take(),
        downloads: download.take(),
    })
}

/// A map from a runtime error to a [`HarnessError`] saying what failed
/// (`context`).
fn runtime_error(context: &str) -> impl Fn(tenferro_runtime::Error) -> HarnessError {
    let context = context.to_owned();
    move |error: tenferro_runtime::Error| HarnessError::runtime(context.clone(), error)
}

/// The round trip's host engine, tenferro-cpu under an id of its own, and
/// its stock registration.
fn host_engine() -> Result<(CpuEngine, EngineRegistration), HarnessError> {
    let cpu_id = EngineId::new("tenferro-transfer-harness.round-trip-host.v1")
        .map_err(|error| HarnessError::config("round-trip host id", error.into()))?;
    let cpu = CpuEngine::serial().with_runtime_engine_id(cpu_id.clone());
    let cpu_stock = tenferro_cpu::runtime_engine_registration_with_id(&cpu, cpu_id)
        .map_err(|source| HarnessError::config("round-trip host registration", source))?;
    Ok((cpu, cpu_stock))
}

/// The runtime of the round trip: the host engine keeps only reductions,
/// `endpoint`'s CUDA engine only elementwise operations, and `upload` and
/// `download` move values between them.
fn round_trip_runtime(
    endpoint: &CudaEndpoint,
    cpu_stock: &EngineRegistration,
    cuda_stock: &EngineRegistration,
    upload: &Arc<Spy>,
    download: &Arc<Spy>,
) -> Result<Runtime, HarnessError> {
    let host_end = tenferro_runtime::TransferEndpoint::new(
        cpu_stock.engine_id().clone(),
        cpu_stock.default_storage_class().clone(),
    );
    let cuda_end = tenferro_runtime::TransferEndpoint::new(
        endpoint.engine_id().clone(),
        endpoint.storage_class().clone(),
    );
    let config = |what: &'static str| move |source| HarnessError::config(what, source);
    let mut builder = Runtime::builder();
    builder
        .register_engine(restricted(
            cpu_stock,
            Keep::Reduction,
            ExecutionContextIdentity::of::<CpuEngine>(),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )?)
        .map_err(config("round-trip host engine"))?;
    builder
        .register_engine(restricted(
            cuda_stock,
            Keep::Elementwise,
            ExecutionContextIdentity::of::<CudaEngine>(),
            endpoint.placement_rule(),
            endpoint.storage_rule(),
        )?)
        .map_err(config("round-trip CUDA engine"))?;
    builder
        .register_transfer_provider(
            host_end.clone(),
            cuda_end.clone(),
            Arc::clone(upload) as Arc<dyn TransferProvider>,
        )
        .map_err(config("round-trip upload provider"))?;
    builder
        .register_transfer_provider(
            cuda_end,
            host_end,
            Arc::clone(download) as Arc<dyn TransferProvider>,
        )
        .map_err(config("round-trip download provider"))?;
    builder.build().map_err(config("round-trip runtime"))
}

/// The program `reduce_sum(a + b)` for two F64 inputs of `shape`.
fn sum_program(shape: &[usize]) -> Result<CompiledGraph, HarnessError> {
    let x = TracedTensor::input_concrete_shape(DType::F64, shape)
        .map_err(runtime_error("round-trip program"))?;
    let y = TracedTensor::input_concrete_shape(DType::F64, shape)
        .map_err(runtime_error("round-trip program"))?;
    let sum = (&x + &y)
        .and_then(|added| added.reduce_sum(None))
        .map_err(runtime_error("round-trip program"))?;
    GraphCompiler::new()
        .compile_with_input_specs(&sum, &[(&x, DType::F64, shape), (&y, DType::F64, shape)])
        .map_err(runtime_error("round-trip program"))
}

/// Run `plan` on `inputs` and read the sum it returns.
fn run_sum(
    runtime: &Runtime,
    engines: &mut [&mut dyn ExecutionEngine],
    plan: &Prepared,
    inputs: &[TensorRead<'_>],
) -> Result<f64, HarnessError> {
    let outputs = runtime
        .run(engines, plan, inputs)
        .map_err(runtime_error("round-trip run"))?;
    let output = outputs.first().ok_or_else(|| HarnessError::NoOutput {
        context: "round-trip run".to_owned(),
    })?;
    let values =
        read_compact::<f64>(&output.read()).map_err(|source| HarnessError::Stage { source })?;
    values
        .first()
        .copied()
        .ok_or_else(|| HarnessError::NoOutput {
            context: "round-trip run (its sum is empty)".to_owned(),
        })
}
