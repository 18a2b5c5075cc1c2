//! `Rig`: a real tenferro `Runtime` built around the provider under test
//! for one route, with a program that can only run if the input moves.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tenferro_mock_devices::trace::{self, Trace};
use tenferro_mock_devices::{EngineRole, read_compact, with_element};
use tenferro_runtime::{
    CompiledGraph, EventDomainId, ExecutionEngine, GraphCompiler, Prepared, Runtime, TracedTensor,
    TransferProvider,
};
use tenferro_tensor::{DType, TensorRead};

use crate::spy::panic_message;
use crate::stage::with_input;
use crate::{
    Case, HarnessError, Layout, LeakCheck, LeakedAllocation, Outcome, Route, RuntimeOutput,
    RuntimeVerdict, Spy,
};

/// What a `Prepared` depends on: tenferro specialises on dtype, shape and
/// layout, so cases that agree on all three share one.
type Signature = (DType, Vec<usize>, Layout);

/// The most programs and plans a rig keeps. Generated cases rarely repeat
/// a signature, and each plan holds the runtime's specialisation of it, so
/// an unbounded cache grows with every case of a long run; past this many
/// both caches start again.
const CACHE_LIMIT: usize = 256;

/// Runs cases on one route through a real runtime around one provider.
///
/// The source engine has no capabilities and the destination refuses the
/// raw input, so the only plan is: input enters on the source, the provider
/// moves it, and an identity reshape runs on the destination. The reshape
/// leaves values untouched, so the runtime's output is what arrived.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_mock_devices::{SimDevice, SimUpload};
/// use tenferro_transfer_harness::{Case, Rig, Route, RuntimeVerdict};
///
/// let route = Route::host_to_sim().unwrap();
/// let device = route.destination().downcast::<SimDevice>().unwrap().clone();
/// let mut rig = Rig::new(route, Arc::new(SimUpload::new(device))).unwrap();
/// let outcome = rig.run(&Case::from_values(vec![3], vec![1.0_f32, -0.0, f32::NAN]).unwrap()).unwrap();
/// assert!(matches!(outcome.runtime, RuntimeVerdict::Accepted(_)));
/// assert_eq!(outcome.calls.len(), 1);
/// ```
pub struct Rig {
    route: Route,
    runtime: Runtime,
    spy: Arc<Spy>,
    trace: Arc<Trace>,
    source: Box<dyn ExecutionEngine>,
    destination: Box<dyn ExecutionEngine>,
    event_domains: (EventDomainId, EventDomainId),
    programs: HashMap<(DType, Vec<usize>), CompiledGraph>,
    prepared: HashMap<Signature, Prepared>,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Rig")
            .field("route", &self.route.label())
            .field("spy", &self.spy)
            .field("prepared", &self.prepared.len())
            .finish_non_exhaustive()
    }
}

impl Rig {
    /// Build the runtime for `route` with `provider` registered for it.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Config`] if the runtime rejects an engine or
    /// the provider registration.
    pub fn new(route: Route, provider: Arc<dyn TransferProvider>) -> Result<Self, HarnessError> {
        route.gate()?;
        let spy = Arc::new(Spy::with_destination(provider, route.destination().clone()));
        let mut builder = Runtime::builder();
        let config = |what: &str| {
            let what = what.to_owned();
            move |source| HarnessError::config(what.clone(), source)
        };
        builder
            .register_engine(route.source().registration(EngineRole::Source)?)
            .map_err(config("source engine"))?;
        builder
            .register_engine(route.destination().registration(EngineRole::Destination)?)
            .map_err(config("destination engine"))?;
        builder
            .register_transfer_provider(
                route.source().transfer_endpoint()?,
                route.destination().transfer_endpoint()?,
                Arc::clone(&spy) as Arc<dyn TransferProvider>,
            )
            .map_err(config("transfer provider"))?;
        let runtime = builder.build().map_err(config("runtime"))?;
        let snapshot = runtime
            .snapshot()
            .map_err(|source| HarnessError::runtime("the runtime's snapshot", source))?;
        let domain = |endpoint: &crate::Endpoint| {
            snapshot
                .engine(endpoint.engine_id())
                .map(|view| view.event_domain_id())
                .ok_or_else(|| HarnessError::HarnessFault {
                    route: route.label(),
                    reason: format!(
                        "the runtime's snapshot has no engine {}, registered just before",
                        endpoint.engine_id().as_str()
                    ),
                })
        };
        let event_domains = (domain(route.source())?, domain(route.destination())?);
        Ok(Self {
            source: route.source().engine(EngineRole::Source)?,
            destination: route.destination().engine(EngineRole::Destination)?,
            route,
            runtime,
            spy,
            trace: Arc::new(Trace::default()),
            event_domains,
            programs: HashMap::new(),
            prepared: HashMap::new(),
        })
    }

    /// The route this rig runs.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// Number of distinct prepared signatures held.
    pub fn prepared_count(&self) -> usize {
        self.prepared.len()
    }

    /// The event domains the runtime assigned to (source, destination).
    pub fn event_domains(&self) -> (EventDomainId, EventDomainId) {
        self.event_domains
    }

    /// The Spy around the provider under test.
    pub fn spy(&self) -> &Arc<Spy> {
        &self.spy
    }

    /// The trace each case records into (emptied when a case starts), for
    /// a watchdog that must say what a hung case was doing.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    /// The live allocations this thread holds on each endpoint's ledger.
    fn ledger_ids(&self) -> Vec<Vec<u64>> {
        let me = std::thread::current().id();
        [self.route.source(), self.route.destination()]
            .into_iter()
            .map(|endpoint| {
                endpoint
                    .ledger()
                    .map(|ledger| ledger.live_ids_of(me))
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Allocations made on this thread since `before` and still live.
    fn leaks_since(&self, before: &[Vec<u64>]) -> LeakCheck {
        let endpoints = [self.route.source(), self.route.destination()];
        if endpoints.iter().all(|endpoint| endpoint.ledger().is_none()) {
            return LeakCheck::Unchecked(format!(
                "neither {} nor {} keeps an allocation ledger (its adapter accounts no allocations), so leaks cannot be seen",
                self.route.source().name(),
                self.route.destination().name()
            ));
        }
        let me = std::thread::current().id();
        let mut leaked = Vec::new();
        for (endpoint, before) in endpoints.into_iter().zip(before) {
            let Some(ledger) = endpoint.ledger() else {
                continue;
            };
            leaked.extend(
                ledger
                    .live_allocations()
                    .into_iter()
                    .filter(|allocation| {
                        allocation.thread == me && !before.contains(&allocation.id)
                    })
                    .map(|allocation| LeakedAllocation {
                        endpoint: endpoint.name().to_owned(),
                        allocation,
                    }),
            );
        }
        LeakCheck::Checked(leaked)
    }

    /// Run one case.
    ///
    /// A provider's `Err` or panic is part of the [`Outcome`], not an error
    /// of this call; the rig stays usable afterwards.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Prepare`] if the runtime refuses to plan the
    /// route, or a staging error if tenferro rejects the case's input.
    pub fn run(&mut self, case: &Case) -> Result<Outcome, HarnessError> {
        let signature: Signature = (case.dtype(), case.shape().to_vec(), case.layout().clone());
        let program_key = (case.dtype(), case.shape().to_vec());
        if self.prepared.len() >= CACHE_LIMIT && !self.prepared.contains_key(&signature) {
            self.prepared.clear();
        }
        if self.programs.len() >= CACHE_LIMIT && !self.programs.contains_key(&program_key) {
            self.programs.clear();
        }
        self.trace.take();
        let _traced = trace::install(Arc::clone(&self.trace));
        let ledgers_before = self.ledger_ids();
        let Self {
            route,
            runtime,
            spy,
            source,
            destination,
            programs,
            prepared,
            ..
        } = self;
        let program = match programs.entry(program_key) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(identity_program(case.dtype(), case.shape())?),
        };
        spy.take();
        let runtime_verdict = with_input(
            route.source(),
            case,
            |input| -> Result<RuntimeVerdict, HarnessError> {
                let plan = match prepared.entry(signature) {
                    Entry::Occupied(entry) => entry.into_mut(),
                    Entry::Vacant(entry) => entry.insert(
                        runtime
                            .prepare(
                                program,
                                std::slice::from_ref(&input),
                                &[source.target(), destination.target()],
                            )
                            .map_err(|error| HarnessError::Prepare {
                                route: route.label(),
                                source: Box::new(error),
                            })?,
                    ),
                };
                let run = catch_unwind(AssertUnwindSafe(|| {
                    let mut engines: [&mut dyn ExecutionEngine; 2] =
                        [source.as_mut(), destination.as_mut()];
                    match runtime.run(&mut engines, plan, std::slice::from_ref(&input)) {
                        Ok(outputs) => match outputs.first() {
                            Some(output) => Ok(observe(output.read())),
                            None => Err(RuntimeVerdict::Other {
                                message: "the run returned no output".into(),
                                chain: vec![],
                            }),
                        },
                        Err(error) => Err(RuntimeVerdict::classify(&error, spy.last().as_ref())),
                    }
                }));
                Ok(match run {
                    Ok(Ok(output)) => RuntimeVerdict::Accepted(output),
                    Ok(Err(verdict)) => verdict,
                    Err(payload) => RuntimeVerdict::Unwound {
                        message: panic_message(payload.as_ref()),
                    },
                })
            },
        )??;
        let calls = spy.take();
        if calls.is_empty() {
            lost_call(&runtime_verdict, route)?;
        }
        // Every tensor of the case (input, transfer, output) is dropped now.
        let leaks = self.leaks_since(&ledgers_before);
        Ok(Outcome {
            runtime: runtime_verdict,
            calls,
            snapshot_event_domains: self.event_domains,
            trace: self.trace.take(),
            leaks,
        })
    }
}

/// A run that ended as if the provider had been called, with no call in
/// the Spy's record, is the harness's fault (a record lost, or a panic
/// before the transfer), never the provider's or the runtime's.
fn lost_call(verdict: &RuntimeVerdict, route: &Route) -> Result<(), HarnessError> {
    let message = match verdict {
        RuntimeVerdict::Unwound { message } => {
            format!("Runtime::run panicked before the provider was called: {message}")
        }
        RuntimeVerdict::Accepted(_)
        | RuntimeVerdict::ContractError { .. }
        | RuntimeVerdict::ProviderError { .. }
        | RuntimeVerdict::ProviderPanicked { .. } => {
            "the runtime's verdict needs a provider call, but the Spy holds no record of one"
                .to_owned()
        }
        _ => return Ok(()),
    };
    Err(HarnessError::HarnessFault {
        route: route.label(),
        reason: message,
    })
}

fn observe(read: TensorRead<'_>) -> RuntimeOutput {
    let bytes = with_element!(read.dtype(), T => {
        read_compact::<T>(&read).map(|values| {
            let mut bytes = Vec::new();
            <T as tenferro_mock_devices::Element>::extend_bytes(&values, &mut bytes);
            bytes
        }).map_err(|error| error.to_string())
    }, external => Err("external dtype".to_owned()));
    RuntimeOutput {
        dtype: read.dtype(),
        shape: read.shape().to_vec(),
        bytes,
    }
}

/// `x.reshape(shape)`: one transfer, and values left exactly as they arrive.
fn identity_program(dtype: DType, shape: &[usize]) -> Result<CompiledGraph, HarnessError> {
    let build = |error: tenferro_runtime::Error| {
        HarnessError::runtime(
            format!("building the identity program for {dtype:?} {shape:?}"),
            error,
        )
    };
    let x = TracedTensor::input_concrete_shape(dtype, shape).map_err(build)?;
    let y = x.reshape(shape.to_vec()).map_err(build)?;
    GraphCompiler::new()
        .compile_with_input_specs(&y, &[(&x, dtype, shape)])
        .map_err(build)
}
