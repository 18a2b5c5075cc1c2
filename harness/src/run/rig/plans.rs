//! The plans a rig keeps, and one run of a plan.
//!
//! The rig's programs are shape-generic (their inputs' extents are
//! symbolic), so one compiled program serves every shape of a list of
//! dtypes and ranks, and one `Prepared` every shape of a list of dtypes,
//! ranks and layout kinds (owned or view). Where the engines cannot plan
//! the shape-generic program, or refuse a kept plan for a run's shapes,
//! the run goes on a program of its own shapes, prepared for it, whose
//! verdict stands.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use tenferro_runtime::{CompiledGraph, EngineTarget, ExecutionEngine, Prepared, Runtime};
use tenferro_tensor::{DType, Tensor, TensorRead};

use super::program::{Extents, identity_program};
use crate::panic_message;
use crate::run::effects::read_output;
use crate::settings::DEFAULT_PLAN_LIMIT;
use crate::values::compared::ReferenceView;
use crate::{
    Case, Compared, Endpoint, HarnessError, Layout, Route, RuntimeOutput, RuntimeVerdict, Spy,
};

/// The runs that share a `Prepared`: each input's dtype, rank and whether
/// it is a view.
type Signature = Vec<(DType, usize, bool)>;

/// The runs that share a compiled program: each input's dtype and rank.
type ProgramKey = Vec<(DType, usize)>;

/// The compiled programs and prepared plans of one rig, each with the
/// number of the run that used it last.
pub(super) struct Plans {
    programs: HashMap<ProgramKey, (CompiledGraph, u64)>,
    prepared: HashMap<Signature, (Prepared, u64)>,
    /// The most programs, and the most plans, kept.
    limit: usize,
    /// Runs so far: the clock of the entries' last use.
    runs: u64,
    /// Signatures whose engines could not prepare or run the shape-generic
    /// program: their runs go on a plan of their own.
    shape_specific: HashSet<Signature>,
}

/// When a run reads the runtime's outputs.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) enum OutputReads {
    /// Once the engines have finished the run's work, before it ends.
    Now,
    /// Never: only the run's memory is looked at (a repetition that tells
    /// kept memory from a leak).
    MemoryOnly,
    /// After the next run, as held outputs: the run neither synchronizes
    /// the engines nor reads ([`super::Rig::defer_output_reads`]).
    Deferred,
}

/// What one run of the runtime produced.
pub(super) struct Executed {
    /// The runtime's outputs, read (`y_1..y_k`, then `z_1..z_k` for a run
    /// of several inputs), or how the run ended instead.
    pub(super) outputs: Result<Vec<RuntimeOutput>, RuntimeVerdict>,
    /// The outputs `y_1..y_k`, when asked to keep them.
    pub(super) kept: Vec<Tensor>,
}

/// What a run needs of its rig.
pub(super) struct Engines<'a> {
    pub(super) runtime: &'a Runtime,
    pub(super) source: &'a mut dyn ExecutionEngine,
    pub(super) destination: &'a mut dyn ExecutionEngine,
    pub(super) spy: &'a Spy,
    pub(super) route: &'a Route,
}

impl Default for Plans {
    fn default() -> Self {
        Self {
            programs: HashMap::new(),
            prepared: HashMap::new(),
            limit: DEFAULT_PLAN_LIMIT,
            runs: 0,
            shape_specific: HashSet::new(),
        }
    }
}

impl Plans {
    /// Keep at most `limit` programs and plans (at least one), dropping
    /// those used least recently now if more are held.
    pub(super) fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        while self.prepared.len() > self.limit {
            evict_least_recent(&mut self.prepared);
        }
        while self.programs.len() > self.limit {
            evict_least_recent(&mut self.programs);
        }
    }

    /// Number of prepared plans held.
    pub(super) fn prepared_count(&self) -> usize {
        self.prepared.len()
    }

    /// Run `cases` (staged as `inputs`) on a kept or fresh shape-generic
    /// plan, else on a plan of their own shapes; `keep` keeps the outputs
    /// `y_1..y_k`.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Prepare`] when the runtime cannot plan the run even
    /// for its own shapes, or the program cannot be built.
    pub(super) fn run(
        &mut self,
        engines: Engines<'_>,
        cases: &[Case],
        inputs: &[TensorRead<'_>],
        (keep, reads): (bool, OutputReads),
    ) -> Result<Executed, HarnessError> {
        let signature = signature_of(cases);
        let key = program_key(cases);
        self.make_room(&signature, &key);
        let Engines {
            runtime,
            source,
            destination,
            spy,
            route,
        } = engines;
        let run = RunOn {
            runtime,
            spy,
            route,
            cases,
            inputs,
            targets: [source.target(), destination.target()],
            keep,
            reads,
        };
        let mut engines: [&mut dyn ExecutionEngine; 2] = [source, destination];
        if !self.shape_specific.contains(&signature)
            && let Some(executed) = self.run_shape_generic(&run, &mut engines, signature, key)?
        {
            return Ok(executed);
        }
        let exact: Vec<(DType, &[usize])> = cases
            .iter()
            .map(|case| (case.dtype(), case.shape()))
            .collect();
        let own = identity_program(&Extents::Exact(&exact))?;
        let plan = run.prepare(&own)?;
        Ok(run.execute(&mut engines, &plan))
    }

    /// Start both caches again when they are full and hold neither this
    /// run's `signature` nor its program `key`.
    fn make_room(&mut self, signature: &Signature, key: &ProgramKey) {
        self.runs += 1;
        if self.prepared.len() >= self.limit && !self.prepared.contains_key(signature) {
            evict_least_recent(&mut self.prepared);
        }
        if self.shape_specific.len() >= DEFAULT_PLAN_LIMIT
            && !self.shape_specific.contains(signature)
        {
            self.shape_specific.clear();
        }
        if self.programs.len() >= self.limit && !self.programs.contains_key(key) {
            evict_least_recent(&mut self.programs);
        }
    }

    /// Run on the kept or a fresh shape-generic plan of `signature`; `None`
    /// when that run never reached the provider (or the plan could not be
    /// prepared), so the run goes on a plan of its own shapes.
    fn run_shape_generic(
        &mut self,
        run: &RunOn<'_, '_, '_>,
        engines: &mut [&mut dyn ExecutionEngine; 2],
        signature: Signature,
        key: ProgramKey,
    ) -> Result<Option<Executed>, HarnessError> {
        let now = self.runs;
        let program = match self.programs.entry(key) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let program = identity_program(&Extents::Symbolic(entry.key()))?;
                entry.insert((program, now))
            }
        };
        program.1 = now;
        let program = &program.0;
        let kept = match self.prepared.entry(signature.clone()) {
            Entry::Occupied(entry) => {
                let (plan, used) = entry.into_mut();
                *used = now;
                Some((&*plan, true))
            }
            Entry::Vacant(entry) => run
                .prepare(program)
                .ok()
                .map(|plan| (&entry.insert((plan, now)).0, false)),
        };
        match kept {
            Some((plan, reused)) => {
                let attempt = run.execute(engines, plan);
                if !run.untouched() {
                    return Ok(Some(attempt));
                }
                if !reused {
                    // Its own fresh plan never reached the provider:
                    // the engines cannot run the shape-generic program.
                    self.prepared.remove(&signature);
                    self.shape_specific.insert(signature);
                }
                // A kept plan refused for these shapes (an engine that
                // specialises on extents) stays for its own.
            }
            None => {
                self.shape_specific.insert(signature);
            }
        }
        Ok(None)
    }
}

/// Drop the entry of `cache` used least recently.
fn evict_least_recent<K: Clone + Eq + std::hash::Hash, V>(cache: &mut HashMap<K, (V, u64)>) {
    let oldest = cache
        .iter()
        .min_by_key(|(_, (_, used))| *used)
        .map(|(key, _)| key.clone());
    if let Some(oldest) = oldest {
        cache.remove(&oldest);
    }
}

/// Each input's dtype, rank and whether it is a view: the runs that share
/// a `Prepared`.
fn signature_of(cases: &[Case]) -> Signature {
    cases
        .iter()
        .map(|case| {
            (
                case.dtype(),
                case.shape().len(),
                matches!(case.layout(), Layout::View(_)),
            )
        })
        .collect()
}

/// Each input's dtype and rank: the runs that share a compiled program.
fn program_key(cases: &[Case]) -> ProgramKey {
    cases
        .iter()
        .map(|case| (case.dtype(), case.shape().len()))
        .collect()
}

/// What one run prepares and executes its plans with.
struct RunOn<'a, 'inputs, 'read> {
    runtime: &'a Runtime,
    spy: &'a Spy,
    route: &'a Route,
    /// The run's cases, whose values its outputs must hold.
    cases: &'a [Case],
    inputs: &'inputs [TensorRead<'read>],
    /// The (source, destination) engines' targets.
    targets: [EngineTarget; 2],
    /// Whether to keep the outputs `y_1..y_k`.
    keep: bool,
    /// When the outputs are read.
    reads: OutputReads,
}

impl RunOn<'_, '_, '_> {
    /// Prepare `program` for the run's inputs on its engines.
    fn prepare(&self, program: &CompiledGraph) -> Result<Prepared, HarnessError> {
        self.runtime
            .prepare(program, self.inputs, &self.targets)
            .map_err(|error| HarnessError::Prepare {
                route: self.route.label(),
                source: Box::new(error),
            })
    }

    /// One run of `plan` on the run's inputs ([`execute`]).
    fn execute(&self, engines: &mut [&mut dyn ExecutionEngine; 2], plan: &Prepared) -> Executed {
        execute(
            self.runtime,
            engines,
            plan,
            (self.cases, self.inputs),
            (self.keep, self.reads),
            (self.spy, self.route.destination()),
        )
    }

    /// A run that never called the provider was refused before it got
    /// there (or done without a transfer): nothing of it has happened
    /// yet, and it runs again on its own program.
    fn untouched(&self) -> bool {
        !self.spy.has_records()
    }
}

/// The values of a runtime output, as they are now, compared with
/// `expected` as they are read ([`read_output`]).
pub(super) fn observe(
    read: TensorRead<'_>,
    expected: ReferenceView<'_>,
    destination: &Endpoint,
) -> RuntimeOutput {
    RuntimeOutput {
        dtype: read.dtype(),
        shape: read.shape().to_vec(),
        bytes: read_output(destination, &read, expected),
    }
}

/// A runtime output not read (yet), for `reason`.
fn unread(read: TensorRead<'_>, reason: &str) -> RuntimeOutput {
    RuntimeOutput {
        dtype: read.dtype(),
        shape: read.shape().to_vec(),
        bytes: Compared::NotReadable {
            reason: reason.to_owned(),
        },
    }
}

/// One run of `plan` on the `inputs` of `cases`: the outputs read (each
/// compared with its case's values as it is read: output `j` is input
/// `j mod k`'s, `y_j` then its second read `z_j`; none read unless
/// `reads` is [`OutputReads::Now`]), and `y_1..y_k` when `keep`. A panic anywhere in it is caught and becomes the verdict.
fn execute(
    runtime: &Runtime,
    engines: &mut [&mut dyn ExecutionEngine; 2],
    plan: &Prepared,
    (cases, inputs): (&[Case], &[TensorRead<'_>]),
    (keep, reads): (bool, OutputReads),
    (spy, destination): (&Spy, &Endpoint),
) -> Executed {
    let run = catch_unwind(AssertUnwindSafe(|| {
        // `Runtime::run` returns once an asynchronous engine has queued
        // the work: its outputs are read once the engines have finished it,
        // as a caller reads them (a deferred run leaves the work queued).
        // The provider's own output was read at its return, before
        // anything waited for it.
        let ran = runtime.run(engines, plan, inputs).and_then(|outputs| {
            if reads != OutputReads::Deferred {
                for engine in engines.iter_mut() {
                    engine.synchronize()?;
                }
            }
            Ok(outputs)
        });
        match ran {
            Ok(outputs) if outputs.len() >= inputs.len() => {
                let observed: Vec<RuntimeOutput> = outputs
                    .iter()
                    .zip(cases.iter().cycle())
                    .map(|(output, case)| match reads {
                        OutputReads::Now => observe(output.read(), case.expected(), destination),
                        OutputReads::MemoryOnly => unread(
                            output.read(),
                            "not read: the run was repeated for its memory only",
                        ),
                        OutputReads::Deferred => unread(
                            output.read(),
                            "not read in its run: its outputs are read after the next run, as held outputs",
                        ),
                    })
                    .collect();
                // Held only when asked: held, an output keeps the
                // provider's allocation alive where the destination
                // engine's reshape aliases it.
                let kept = if keep {
                    outputs
                        .into_iter()
                        .take(inputs.len())
                        .filter_map(|output| output.into_owned())
                        .collect()
                } else {
                    Vec::new()
                };
                Ok((observed, kept))
            }
            Ok(outputs) => Err(RuntimeVerdict::Other {
                message: format!(
                    "the run returned {} outputs for {} inputs",
                    outputs.len(),
                    inputs.len()
                ),
                chain: vec![],
            }),
            Err(error) => Err(RuntimeVerdict::classify(&error, spy.last().as_ref())),
        }
    }));
    match run {
        Ok(Ok((observed, kept))) => Executed {
            outputs: Ok(observed),
            kept,
        },
        Ok(Err(verdict)) => Executed {
            outputs: Err(verdict),
            kept: Vec::new(),
        },
        Err(payload) => Executed {
            outputs: Err(RuntimeVerdict::Unwound {
                message: panic_message(payload.as_ref()),
            }),
            kept: Vec::new(),
        },
    }
}
