//! What every benchmark shares: a bare runtime around a provider (the
//! baseline the harness is measured against), staging a tensor on an
//! endpoint, a provider wrapper that times only the provider's own call,
//! and the interleaved ratio each benchmark prints.
//!
//! Criterion measures every function on its own; the ratio printed after
//! it is measured by alternating ours and the baseline in short batches,
//! so both see the same load on a shared machine.

// Each benchmark binary uses part of this module.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use criterion::Criterion;
use tenferro_runtime::{
    CompiledGraph, ExecutionEngine, GraphCompiler, Output, Prepared, Runtime, TracedTensor,
    TransferProvider, TransferRequest,
};
use tenferro_tensor::{Tensor, TensorRead};
use tenferro_transfer_conformance::harness::{Case, Endpoint, HostEndpoint, Route, read_compact};
use tenferro_transfer_conformance::mock_devices::{Element, EngineRole, HostDomain, SimDevice};

/// Criterion settings short enough for a loaded 2-core machine.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args()
}

/// Whether criterion runs in `--test` mode (each function once): the
/// ratios then run one tiny round, to prove they work, not to measure.
pub fn test_mode() -> bool {
    std::env::args().any(|argument| argument == "--test")
}

/// A tensor of `values` on `endpoint`, laid out as the harness stages an
/// owned case there.
pub fn stage<T: Element>(endpoint: &Endpoint, values: Vec<T>) -> Tensor {
    let shape = vec![values.len()];
    let staged = if let Some(host) = endpoint.downcast::<HostEndpoint>() {
        match host.domain() {
            Some(domain) => {
                let domain: &dyn std::any::Any = domain.as_ref();
                domain
                    .downcast_ref::<HostDomain>()
                    .expect("the managed host route's domain is a HostDomain")
                    .tensor(shape, values)
            }
            None => Tensor::from_vec_col_major(shape, values),
        }
    } else if let Some(device) = endpoint.downcast::<SimDevice>() {
        device.tensor(shape, values)
    } else {
        panic!("no staging for endpoint {}", endpoint.name())
    };
    staged.expect("staging a compact tensor")
}

/// `x.reshape(shape)`, the rig's program: one transfer, values untouched.
fn identity_program(input: &Tensor) -> CompiledGraph {
    let (dtype, shape) = (input.dtype(), input.shape().to_vec());
    let x = TracedTensor::input_concrete_shape(dtype, &shape).expect("input");
    let y = x.reshape(shape.clone()).expect("reshape");
    GraphCompiler::new()
        .compile_with_input_specs(&y, &[(&x, dtype, &shape[..])])
        .expect("compile")
}

/// A bare tenferro runtime for `route` with `provider` registered and no
/// harness around it: the same engines and program as the rig, the input
/// staged once and the `Prepared` reused.
pub struct BareRun {
    runtime: Runtime,
    source: Box<dyn ExecutionEngine>,
    destination: Box<dyn ExecutionEngine>,
    prepared: Prepared,
    input: Tensor,
}

impl BareRun {
    pub fn new(route: &Route, provider: Arc<dyn TransferProvider>, input: Tensor) -> Self {
        let mut builder = Runtime::builder();
        builder
            .register_engine(
                route
                    .source()
                    .registration(EngineRole::Source)
                    .expect("source"),
            )
            .expect("register source");
        builder
            .register_engine(
                route
                    .destination()
                    .registration(EngineRole::Destination)
                    .expect("destination"),
            )
            .expect("register destination");
        builder
            .register_transfer_provider(
                route.source().transfer_endpoint().expect("source endpoint"),
                route
                    .destination()
                    .transfer_endpoint()
                    .expect("destination endpoint"),
                provider,
            )
            .expect("register provider");
        let runtime = builder.build().expect("runtime");
        let source = route
            .source()
            .engine(EngineRole::Source)
            .expect("source engine");
        let destination = route
            .destination()
            .engine(EngineRole::Destination)
            .expect("destination engine");
        let program = identity_program(&input);
        let prepared = runtime
            .prepare(
                &program,
                std::slice::from_ref(&TensorRead::from_tensor(&input)),
                &[source.target(), destination.target()],
            )
            .expect("prepare");
        Self {
            runtime,
            source,
            destination,
            prepared,
            input,
        }
    }

    /// The fresh-prepare floor of a generated case: `case` staged on the
    /// route's source, its identity program compiled, prepared and run on
    /// this runtime, and the output read once, with nothing kept or judged
    /// (what any caller pays for a signature it has not seen).
    pub fn run_fresh(&mut self, route: &Route, case: &Case) {
        let (source, destination, runtime) =
            (&mut self.source, &mut self.destination, &self.runtime);
        route
            .source()
            .adapter()
            .stage(case, &mut |input| {
                let (dtype, shape) = (case.dtype(), case.shape().to_vec());
                let x = TracedTensor::input_concrete_shape(dtype, &shape).expect("input");
                let y = x.reshape(shape.clone()).expect("reshape");
                let program = GraphCompiler::new()
                    .compile_with_input_specs(&y, &[(&x, dtype, &shape[..])])
                    .expect("compile");
                let prepared = runtime
                    .prepare(
                        &program,
                        std::slice::from_ref(&input),
                        &[source.target(), destination.target()],
                    )
                    .expect("prepare");
                let mut engines: [&mut dyn ExecutionEngine; 2] =
                    [source.as_mut(), destination.as_mut()];
                let outputs = runtime
                    .run(&mut engines, &prepared, std::slice::from_ref(&input))
                    .expect("run");
                let output = outputs.into_iter().next().expect("one output");
                std::hint::black_box(output.read().shape().len());
            })
            .expect("stage");
    }

    /// One `Runtime::run`, its outputs handed to `then`, then dropped.
    fn run_then<R>(&mut self, then: impl FnOnce(&[Output<'_>]) -> R) -> R {
        let mut engines: [&mut dyn ExecutionEngine; 2] =
            [self.source.as_mut(), self.destination.as_mut()];
        let outputs = self
            .runtime
            .run(
                &mut engines,
                &self.prepared,
                std::slice::from_ref(&TensorRead::from_tensor(&self.input)),
            )
            .expect("run");
        then(&outputs)
    }

    /// One `Runtime::run`; the output is dropped.
    pub fn run(&mut self) {
        self.run_then(|outputs| assert_eq!(outputs.len(), 1));
    }

    /// One `Runtime::run`, its output's values read once and compared
    /// with `expected` (what any caller pays to use a result), then
    /// dropped.
    pub fn run_and_read(&mut self, expected: &[f64]) {
        self.run_then(|outputs| {
            let values = read_compact::<f64>(&outputs[0].read()).expect("read");
            assert_eq!(values.len(), expected.len());
            assert!(
                values
                    .iter()
                    .zip(expected)
                    .all(|(got, want)| got.to_bits() == want.to_bits())
            );
        });
    }
}

/// Wraps a provider and adds up the time spent inside its
/// `transfer_blocking` only, so a provider can be timed through the
/// runtime (only the runtime can make a `TransferRequest`) without the
/// runtime's own work.
#[derive(Debug)]
pub struct TimedProvider {
    inner: Arc<dyn TransferProvider>,
    spent: Mutex<Duration>,
}

impl TimedProvider {
    pub fn new(inner: Arc<dyn TransferProvider>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            spent: Mutex::new(Duration::ZERO),
        })
    }

    /// The time spent in the provider since the last call.
    pub fn take(&self) -> Duration {
        std::mem::take(&mut *self.spent.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl TransferProvider for TimedProvider {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let start = Instant::now();
        let result = self.inner.transfer_blocking(request);
        let elapsed = start.elapsed();
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner) += elapsed;
        result
    }
}

/// Median time per iteration of two measured functions, taken in
/// alternating batches.
pub struct Ratio {
    pub ours: Duration,
    pub baseline: Duration,
}

impl Ratio {
    /// ours / baseline.
    pub fn slowdown(&self) -> f64 {
        self.ours.as_secs_f64() / self.baseline.as_secs_f64().max(1e-12)
    }

    /// baseline / ours: a speed relative to the baseline's.
    pub fn speed(&self) -> f64 {
        1.0 / self.slowdown()
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A function measured by a ratio: it runs `iterations` times and returns
/// the time those took (so it can leave setup, or the runtime's work, out).
pub type Measured<'a> = dyn FnMut(u64) -> Duration + 'a;

/// Iterations of `measure` that take about `target`.
fn batch_size(measure: &mut Measured<'_>, target: Duration) -> u64 {
    let mut iterations = 1;
    loop {
        let took = measure(iterations);
        if took >= target || iterations >= 1 << 24 {
            return iterations;
        }
        let scale = target.as_secs_f64() / took.as_secs_f64().max(1e-9);
        iterations = ((iterations as f64 * scale.min(100.0)).ceil() as u64).max(iterations + 1);
    }
}

/// Measure `ours` and `baseline` in alternating batches of about 20 ms
/// (`rounds` each) and take each one's median time per iteration.
pub fn interleaved(rounds: usize, ours: &mut Measured<'_>, baseline: &mut Measured<'_>) -> Ratio {
    let (rounds, target) = if test_mode() {
        (1, Duration::ZERO)
    } else {
        (rounds, Duration::from_millis(20))
    };
    let ours_batch = batch_size(ours, target);
    let baseline_batch = batch_size(baseline, target);
    let (mut ours_samples, mut baseline_samples) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        ours_samples.push(ours(ours_batch) / ours_batch as u32);
        baseline_samples.push(baseline(baseline_batch) / baseline_batch as u32);
    }
    Ratio {
        ours: median(ours_samples),
        baseline: median(baseline_samples),
    }
}

/// `measure` for a function timed whole.
pub fn timed(mut f: impl FnMut()) -> impl FnMut(u64) -> Duration {
    move |iterations| {
        let start = Instant::now();
        for _ in 0..iterations {
            f();
        }
        start.elapsed()
    }
}

/// Print one result line, in a form docs/performance.md quotes.
pub fn report(row: &str, figure: &str, ratio: f64, goal: &str) {
    let met = if test_mode() {
        "test mode, not a measurement"
    } else {
        ""
    };
    println!("RATIO {row}: {figure}; ratio {ratio:.3} (goal {goal}) {met}");
}
