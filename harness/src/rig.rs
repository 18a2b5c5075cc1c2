//! `Rig`: a real tenferro `Runtime` built around the provider under test
//! for one route, with a program that can only run if the input moves.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::trace::{self, Trace};
use crate::{EngineRole, read_compact, with_element};
use tenferro_ops::ShapeExtent;
use tenferro_ops::dim_expr::DimExpr;
use tenferro_runtime::program::{CoreSemanticOp, ProgramInputSpec, ProgramValueMetadata};
use tenferro_runtime::{
    CompiledGraph, EventDomainId, ExecutionEngine, GraphCompiler, Prepared, Runtime, TraceContext,
    TracedTensor, TransferProvider,
};
use tenferro_tensor::{DType, TensorRead};

use crate::accounting::{CaseOnEndpoint, Sample, combine, judge_endpoint};
use crate::effects::{output_image, read_backing};
use crate::image_diff::compare_images;
use crate::spy::panic_message;
use crate::stage::with_input;
use crate::{
    Case, HarnessError, InputReads, Layout, LeakCheck, Outcome, Route, RuntimeOutput,
    RuntimeVerdict, Spy,
};

/// The cases that share a `Prepared`: the rig's program is shape-generic
/// (its input's extents are symbolic), so one plan serves every shape of
/// a dtype and rank, and owned tensors (`false`) and views (`true`) each
/// have their own. Where the engines cannot plan it, or refuse a kept
/// plan for a case's shape, the case runs on a plan of its own
/// ([`Rig::run`]).
type Signature = (DType, usize, bool);

/// The most programs and plans a rig keeps; past this many both caches
/// start again. Each plan holds the runtime's specialisation of it, so an
/// unbounded cache would grow with every signature of a long run.
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
/// use tenferro_transfer_harness::{Case, HostProvider, Rig, Route, RuntimeVerdict};
///
/// let route = Route::host_to_host().unwrap();
/// let mut rig = Rig::new(route, Arc::new(HostProvider::new())).unwrap();
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
    programs: HashMap<(DType, usize), CompiledGraph>,
    prepared: HashMap<Signature, Prepared>,
    /// Signatures whose engines could not prepare or run the shape-generic
    /// program: their cases run on a plan of their own.
    shape_specific: HashSet<Signature>,
    /// Whether runtime outputs are held ([`Rig::keep_outputs`]).
    keeping: bool,
    /// The outputs held, oldest first.
    held: VecDeque<Held>,
}

/// How many recent outputs a rig holds, besides the previous one of each
/// dtype and length.
pub const HOLD_RECENT: usize = 4;

/// An output the rig holds, with the bytes it had when it was returned.
struct Held {
    case: String,
    dtype: DType,
    shape: Vec<usize>,
    len: usize,
    output: tenferro_tensor::Tensor,
    bytes: Vec<u8>,
}

/// What the staged part of a case produced.
struct Ran {
    verdict: RuntimeVerdict,
    kept: Option<tenferro_tensor::Tensor>,
    input_before: crate::ReadBack,
    input_after: crate::ReadBack,
    /// Whether the source's accounting showed the staged input.
    staged: bool,
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
        let spy = Arc::new(Spy::on_route(provider, &route));
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
            shape_specific: HashSet::new(),
            keeping: false,
            held: VecDeque::new(),
        })
    }

    /// The route this rig runs.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// Number of prepared plans held: one per dtype, rank and layout kind
    /// (owned or view) of the cases run, since a plan serves every shape.
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

    /// Keep the runtime's output of every later case alive (up to
    /// four recent ones, and always the previous output of the
    /// same dtype and length), and read the held outputs again after each
    /// case (`output-stable`). While outputs are held, `no-leak` is not
    /// judged case by case: memory kept alive on purpose is no leak, and
    /// the caller judges the memory around the whole pass. Release them
    /// with [`Rig::release_outputs`].
    pub fn keep_outputs(&mut self, keep: bool) {
        self.keeping = keep;
        if !keep {
            self.held.clear();
        }
    }

    /// Read every held output one last time, then drop them all: the
    /// outputs that changed since they were returned (`output-stable` at
    /// the end of a route).
    pub fn release_outputs(&mut self) -> crate::HeldOutputs {
        let seen = self.reread_held(None, None);
        self.held.clear();
        seen
    }

    /// Read the held outputs again (`except` the one just kept), after the
    /// call of case `after` (`None`: as they are released).
    fn reread_held(&self, except: Option<usize>, after: Option<&str>) -> crate::HeldOutputs {
        let mut seen = crate::HeldOutputs::default();
        for (index, held) in self.held.iter().enumerate() {
            if Some(index) == except {
                continue;
            }
            seen.reread += 1;
            let difference = match output_image(&held.output) {
                Ok(now) => compare_images(held.dtype, &held.shape, &held.bytes, &now),
                Err(reason) => Some(format!("it could not be read again: {reason}")),
            };
            if let Some(difference) = difference {
                seen.changed.push(crate::ChangedOutput {
                    case: held.case.clone(),
                    after: after.map(str::to_owned),
                    difference,
                });
            }
        }
        seen
    }

    /// Hold `output` of `case` (whose bytes are `bytes`), evicting the
    /// oldest beyond the four most recent but never the latest of a dtype and
    /// length; returns the index of the one just held.
    fn hold(&mut self, case: &Case, output: tenferro_tensor::Tensor, bytes: Vec<u8>) -> usize {
        let key = (case.dtype(), case.len());
        // The previous output of the same size is kept whatever its age;
        // so are the most recent ones.
        let same_size: Option<usize> = self
            .held
            .iter()
            .rposition(|held| (held.dtype, held.len) == key);
        while self.held.len() >= HOLD_RECENT {
            match (0..self.held.len()).find(|&index| Some(index) != same_size) {
                Some(oldest) => {
                    self.held.remove(oldest);
                }
                None => break,
            }
            if self.held.len() < HOLD_RECENT {
                break;
            }
        }
        self.held.push_back(Held {
            case: case_words(case),
            dtype: case.dtype(),
            shape: case.shape().to_vec(),
            len: case.len(),
            output,
            bytes,
        });
        self.held.len() - 1
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
        let rank = case.shape().len();
        let signature: Signature = (case.dtype(), rank, matches!(case.layout(), Layout::View(_)));
        let program_key = (case.dtype(), rank);
        if self.prepared.len() >= CACHE_LIMIT && !self.prepared.contains_key(&signature) {
            self.prepared.clear();
            self.shape_specific.clear();
        }
        if self.programs.len() >= CACHE_LIMIT && !self.programs.contains_key(&program_key) {
            self.programs.clear();
        }
        self.trace.take();
        let _traced = trace::install(Arc::clone(&self.trace));
        let counted = self.route.counts_memory();
        let stays = [
            self.route.source().enter(),
            self.route.destination().enter(),
        ];
        let before = [
            Sample::of(self.route.source(), counted),
            Sample::of(self.route.destination(), counted),
        ];
        let keeping = self.keeping;
        let Self {
            route,
            runtime,
            spy,
            source,
            destination,
            programs,
            prepared,
            shape_specific,
            ..
        } = self;
        let program = match programs.entry(program_key) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(identity_program(case.dtype(), rank)?),
        };
        spy.take();
        let ran = with_input(route.source(), case, |input| -> Result<Ran, HarnessError> {
            let input_before = read_backing(route.source(), &input);
            let staged = Sample::of(route.source(), counted).shows_more_than(&before[0]);
            let targets = [source.target(), destination.target()];
            let prepare = |program: &CompiledGraph| {
                runtime
                    .prepare(program, std::slice::from_ref(&input), &targets)
                    .map_err(|error| HarnessError::Prepare {
                        route: route.label(),
                        source: Box::new(error),
                    })
            };
            // A run that never called the provider: refused before it got
            // there (or done without a transfer), so nothing of the case
            // has happened yet, and it runs again on its own program.
            let untouched = || spy.last().is_none();
            let mut engines: [&mut dyn ExecutionEngine; 2] =
                [source.as_mut(), destination.as_mut()];
            let mut ran = None;
            if !shape_specific.contains(&signature) {
                let kept = match prepared.entry(signature) {
                    Entry::Occupied(entry) => Some((entry.into_mut(), true)),
                    Entry::Vacant(entry) => prepare(program)
                        .ok()
                        .map(|plan| (entry.insert(plan), false)),
                };
                match kept {
                    Some((plan, reused)) => {
                        let attempt = execute(runtime, &mut engines, plan, &input, keeping, spy);
                        if !untouched() {
                            ran = Some(attempt);
                        } else if !reused {
                            // Its own fresh plan never reached the provider:
                            // the engines cannot run the shape-generic
                            // program.
                            prepared.remove(&signature);
                            shape_specific.insert(signature);
                        }
                        // A kept plan refused for this shape (an engine
                        // that specialises on extents) stays for its own.
                    }
                    None => {
                        shape_specific.insert(signature);
                    }
                }
            }
            // Otherwise the case runs as it would with no cache: on the
            // program of its own shape, prepared for it, whose verdict
            // stands.
            let (verdict, kept) = match ran {
                Some(ran) => ran,
                None => {
                    let own = shape_program(case.dtype(), case.shape())?;
                    let plan = prepare(&own)?;
                    execute(runtime, &mut engines, &plan, &input, keeping, spy)
                }
            };
            // The transfer's output was read and dropped (unless held).
            let input_after = read_backing(route.source(), &input);
            Ok(Ran {
                verdict,
                kept,
                input_before,
                input_after,
                staged,
            })
        })??;
        let runtime_verdict = ran.verdict;
        let mut calls = spy.take();
        if calls.is_empty() {
            lost_call(&runtime_verdict, route)?;
        }
        // Moved, not copied: the input's image is as large as the case, and
        // the outcome carries it in `input`.
        let after_return = calls
            .first_mut()
            .and_then(|call| call.input_after_return.take());
        let saw_output = calls.first().and_then(|call| call.destination_saw_output);
        let held = match (ran.kept, &runtime_verdict) {
            (Some(output), RuntimeVerdict::Accepted(observed)) => match &observed.bytes {
                Ok(bytes) => {
                    let index = self.hold(case, output, bytes.clone());
                    Some(self.reread_held(Some(index), Some(&case_words(case))))
                }
                Err(_) => Some(self.reread_held(None, Some(&case_words(case)))),
            },
            _ if self.keeping => Some(self.reread_held(None, Some(&case_words(case)))),
            _ => None,
        };
        // Every tensor of the case (input, transfer, output) is dropped
        // now, but the outputs held on purpose.
        let leaks = if self.keeping {
            LeakCheck::Unchecked(
                "the outputs of this pass are kept alive on purpose (output-stable), so its memory is judged over the whole pass, not case by case".to_owned(),
            )
        } else {
            let thread = std::thread::current().id();
            let findings = [
                CaseOnEndpoint {
                    endpoint: self.route.source(),
                    before: &before[0],
                    saw_its_tensor: before[0].accounts().then_some(ran.staged),
                    tensor: "the staged input",
                    stay: Some(&stays[0]),
                    thread,
                },
                CaseOnEndpoint {
                    endpoint: self.route.destination(),
                    before: &before[1],
                    saw_its_tensor: saw_output,
                    tensor: "the output the provider returned",
                    stay: Some(&stays[1]),
                    thread,
                },
            ]
            .iter()
            .map(|case| judge_endpoint(case, counted))
            .collect();
            combine(findings, || {
                format!(
                    "neither {} nor {} accounts its memory (its adapter keeps no ledger{}), so leaks cannot be seen",
                    self.route.source().name(),
                    self.route.destination().name(),
                    if counted {
                        " and counts nothing"
                    } else {
                        "; counts of memory in use judge no-leak from level v2"
                    }
                )
            })
        };
        drop(stays);
        Ok(Outcome {
            runtime: runtime_verdict,
            calls,
            snapshot_event_domains: self.event_domains,
            trace: self.trace.take(),
            leaks,
            input: InputReads {
                before: ran.input_before,
                after_return,
                after_drop: Some(ran.input_after),
            },
            held,
        })
    }
}

/// `F32 [7, 3] owned`: a case in words, for messages.
pub(crate) fn case_words(case: &Case) -> String {
    format!(
        "{:?} {:?} {}",
        case.dtype(),
        case.shape(),
        case.layout_label()
    )
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
            <T as crate::Element>::extend_bytes(&values, &mut bytes);
            bytes
        }).map_err(|error| error.to_string())
    }, external => Err("external dtype".to_owned()));
    RuntimeOutput {
        dtype: read.dtype(),
        shape: read.shape().to_vec(),
        bytes,
    }
}

/// One run of `plan` on `input`: the runtime's verdict, and the output
/// when `keeping`. A panic anywhere in it is caught and becomes the
/// verdict.
fn execute(
    runtime: &Runtime,
    engines: &mut [&mut dyn ExecutionEngine; 2],
    plan: &Prepared,
    input: &TensorRead<'_>,
    keeping: bool,
    spy: &Spy,
) -> (RuntimeVerdict, Option<tenferro_tensor::Tensor>) {
    let run = catch_unwind(AssertUnwindSafe(|| {
        match runtime.run(engines, plan, std::slice::from_ref(input)) {
            Ok(outputs) => match outputs.into_iter().next() {
                Some(output) => {
                    let observed = observe(output.read());
                    // Held only when asked: held, it keeps the provider's
                    // allocation alive where the destination engine's
                    // reshape aliases it.
                    let kept = keeping.then(|| output.into_owned()).flatten();
                    Ok((observed, kept))
                }
                None => Err(RuntimeVerdict::Other {
                    message: "the run returned no output".into(),
                    chain: vec![],
                }),
            },
            Err(error) => Err(RuntimeVerdict::classify(&error, spy.last().as_ref())),
        }
    }));
    match run {
        Ok(Ok((output, kept))) => (RuntimeVerdict::Accepted(output), kept),
        Ok(Err(verdict)) => (verdict, None),
        Err(payload) => (
            RuntimeVerdict::Unwound {
                message: panic_message(payload.as_ref()),
            },
            None,
        ),
    }
}

/// `x.reshape(shape)` for an input of exactly `dtype` and `shape`: the
/// program of a case whose engines cannot plan the shape-generic one.
fn shape_program(dtype: DType, shape: &[usize]) -> Result<CompiledGraph, HarnessError> {
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

/// `x.reshape(shape of x)` for an input of `dtype` and `rank` whose extents
/// are symbolic: one transfer, values left exactly as they arrive, and one
/// program (and one plan, [`Signature`]) for every shape of that rank.
fn identity_program(dtype: DType, rank: usize) -> Result<CompiledGraph, HarnessError> {
    let context = || format!("building the identity program for {dtype:?} of rank {rank}");
    let extents = || (0..rank).map(|axis| DimExpr::InputDim { input_idx: 0, axis });
    let mut trace = TraceContext::new();
    let x = trace
        .input(ProgramInputSpec::from_metadata(
            ProgramValueMetadata::from_extents(dtype, extents().map(ShapeExtent::Exact)),
        ))
        .map_err(|error| HarnessError::runtime(context(), error))?;
    // The same extents, the first written `d0 * 1`: tenferro's compiler
    // drops a reshape whose extents are literally its input's own, which
    // would hand the input back without a transfer.
    let to_shape = extents()
        .enumerate()
        .map(|(axis, extent)| match axis {
            0 => DimExpr::Mul(Box::new(extent), Box::new(DimExpr::Const(1))),
            _ => extent,
        })
        .collect();
    let reshape = CoreSemanticOp::Reshape { to_shape };
    let y = trace
        .add_op(reshape, &[x])
        .map_err(|error| HarnessError::runtime(context(), error))?;
    let graph = trace
        .finish(&y)
        .map_err(|error| HarnessError::runtime(context(), error))?;
    GraphCompiler::new()
        .compile_traced_graph(&graph)
        .map_err(|error| HarnessError::runtime(context(), error))
}
