//! `Rig`: a real tenferro `Runtime` built around the provider under test
//! for one route, with a program that can only run if its inputs move.
//!
//! The program (`program.rs`) and its plans (`plans.rs`), the outputs a
//! caller holds (`held.rs`), the inputs moved lately (`recent.rs`), the
//! memory a run left (`memory.rs`) and each input's [`Outcome`] once the
//! run ended (`ending.rs`) are apart; this file stages a run's inputs,
//! runs it and gathers what it did.

mod ending;
mod held;
mod memory;
mod plans;
mod program;
mod recent;

use std::sync::{Arc, Weak};

use crate::EngineRole;
use crate::trace::{self, Trace};
use tenferro_runtime::{EventDomainId, ExecutionEngine, Runtime, TransferProvider};
use tenferro_tensor::Tensor;

use crate::Compared;
use crate::device::stage::with_inputs;
use crate::run::accounting::Sample;
use crate::run::effects::{InputBefore, read_before, reread_backing};
use crate::run::spy::Expected;
use crate::values::compared::Reference;
use crate::{
    Case, HarnessError, HeldOutputs, Layout, Outcome, Route, RuntimeOutput, RuntimeVerdict, Spy,
    SpyRecord,
};

pub(crate) use ending::sole_outcome;
use ending::{RunEnd, calls_by_input, lost_call};
use held::HeldAcrossRuns;
pub use held::{HOLD_RECENT, HOLD_SAME_SIZE};
use plans::{Engines, Plans};
use recent::RecentInputs;

/// Runs cases on one route through a real runtime around one provider.
///
/// The source engine has no capabilities and the destination refuses the
/// raw input, so the only plan is: input enters on the source, the provider
/// moves it, and an identity reshape runs on the destination. The reshape
/// leaves values untouched, so the runtime's output is what arrived.
///
/// [`Rig::run_together`] moves several inputs in one run, as a program
/// with several inputs on a device does: the runtime keeps each
/// transferred value until the program ends, and the program reads each
/// again after the last transfer (`output-stable`).
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
    plans: Plans,
    /// Whether runtime outputs are held ([`Rig::keep_outputs`]).
    keeping: bool,
    /// The most elements of an output held ([`Rig::keep_outputs_up_to`]).
    hold_limit: usize,
    /// The outputs held across runs.
    held: HeldAcrossRuns,
    /// The inputs moved lately.
    recent: RecentInputs,
    /// Runs whose memory kept growing when they were repeated.
    leaking_runs: usize,
    /// Providers replaced ([`Rig::replace_provider`]) after runs of theirs
    /// were shown to leak, with the number of those runs, oldest first;
    /// not kept alive by the rig.
    set_aside: Vec<(Weak<dyn TransferProvider>, usize)>,
    /// Told before each repetition of a run that judges its memory
    /// ([`Rig::on_repetition`]).
    on_repetition: Option<RepetitionHook>,
}

/// What a rig calls before each repetition of a run ([`Rig::on_repetition`]).
pub(crate) type RepetitionHook = Box<dyn Fn() + Send>;

/// How many replaced providers a rig remembers the leaking runs of.
const PROVIDERS_REMEMBERED: usize = 1024;

/// What the staged part of a run produced.
struct Ran {
    executed: plans::Executed,
    /// What each input's backing held before the run, and its read after
    /// it compared with that (`None`: nothing to compare with).
    input_reads: Vec<(InputBefore, Option<Compared>)>,
    /// Whether the source's accounting showed the staged inputs.
    staged: bool,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Rig")
            .field("route", &self.route.label())
            .field("spy", &self.spy)
            .field("prepared", &self.plans.prepared_count())
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
            plans: Plans::default(),
            keeping: false,
            hold_limit: usize::MAX,
            held: HeldAcrossRuns::default(),
            recent: RecentInputs::default(),
            leaking_runs: 0,
            set_aside: Vec::new(),
            on_repetition: None,
        })
    }

    /// Call `hook` before each repetition of a run whose memory is judged
    /// (`no-leak` repeats a run whose memory grew, to tell memory the
    /// provider keeps from a leak): a watchdog's worker tells the watchdog,
    /// so that each repetition gets a deadline of its own and a slow
    /// provider does not overrun it for the harness's own repetitions.
    pub(crate) fn on_repetition(&mut self, hook: Option<RepetitionHook>) {
        self.on_repetition = hook;
    }

    /// The route this rig runs.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// Number of prepared plans held: one per list of dtypes, ranks and
    /// layout kinds (owned or view) of the runs made, since a plan serves
    /// every shape.
    pub fn prepared_count(&self) -> usize {
        self.plans.prepared_count()
    }

    /// Keep at most `limit` prepared plans (and compiled programs), at
    /// least one; [`DEFAULT_PLAN_LIMIT`](crate::DEFAULT_PLAN_LIMIT) until
    /// told otherwise. Past the limit, the plan used least recently makes
    /// room, and a run whose plan is gone prepares it again: a run that draws a few signatures many
    /// times wants them all kept, while a run of large cases whose
    /// signatures rarely repeat spends its host memory better on the
    /// cases (each plan holds about 16 KB of the runtime's). No verdict
    /// depends on it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// rig.keep_plans(1);
    /// let ints = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// let floats = Case::from_values(vec![2, 1], vec![1.0_f64, 2.0]).unwrap();
    /// for case in [&ints, &floats, &ints] {
    ///     assert!(Oracle.judge(case, &route, &rig.run(case).unwrap()).passed());
    /// }
    /// assert_eq!(rig.prepared_count(), 1);
    /// ```
    pub fn keep_plans(&mut self, limit: usize) {
        self.plans.set_limit(limit);
    }

    /// Read each later call's borrowed input on a thread beside the call,
    /// over and over for as long as the call is in flight, or stop
    /// (`false`, as a rig starts): `input-intact` then also fails a
    /// provider that writes into its input and puts it back before it
    /// returns, which a reader of the same input at the same time (another
    /// transfer of it, an engine) would have seen changed. Each watched
    /// call costs a thread and reads of the whole input; the reads after
    /// the call are made either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// rig.watch_inputs(true);
    /// let case = Case::from_values(vec![3], vec![1.0_f32, -0.0, 2.5]).unwrap();
    /// let outcome = rig.run(&case).unwrap();
    /// assert!(Oracle.judge(&case, &route, &outcome).passed());
    /// ```
    pub fn watch_inputs(&mut self, watch: bool) {
        self.spy.watch_inputs(watch);
    }

    /// Hand each later call's owned input to the provider as the source
    /// staged it, without reading it through the source first (`true`),
    /// or read it first, as a rig starts (`false`).
    ///
    /// Reading an input through a device that cannot map its memory waits
    /// for the writes still queued into it (an adapter's `read_back`
    /// does): a provider then always meets a finished input. A device's
    /// `stage` may leave its upload queued, as a kernel still writing a
    /// tensor leaves it when a program moves it; unread, the input
    /// reaches the provider so, and one that copies it without waiting for
    /// those writes delivers stale values (`values`). The input is still
    /// read after the call and compared with the case's values
    /// (`input-intact`); a view input is read first either way (its
    /// backing holds more than the case's values).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// rig.hand_inputs_unread(true);
    /// let case = Case::from_values(vec![3], vec![1.0_f32, -0.0, 2.5]).unwrap();
    /// let outcome = rig.run(&case).unwrap();
    /// assert!(Oracle.judge(&case, &route, &outcome).passed());
    /// ```
    pub fn hand_inputs_unread(&mut self, unread: bool) {
        self.spy.hand_inputs_unread(unread);
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

    /// Keep the runtime's outputs of every later run alive (up to
    /// [`HOLD_RECENT`] recent ones, and always the latest
    /// [`HOLD_SAME_SIZE`] of the dtype and length being moved), and read the held outputs again after each
    /// run (`output-stable`). While outputs are held, `no-leak` is not
    /// judged run by run: memory kept alive on purpose is no leak, and the
    /// caller judges the memory around the whole pass. Release them with
    /// [`Rig::release_outputs`].
    pub fn keep_outputs(&mut self, keep: bool) {
        self.keeping = keep;
        self.hold_limit = usize::MAX;
        if !keep {
            self.held.clear();
        }
    }

    /// As [`Rig::keep_outputs`]`(true)`, holding only outputs of at most
    /// `max_elements` elements: the larger ones are read and dropped as
    /// usual. Many calls in flight, each holding its recent outputs, keep
    /// their memory within a few small cases this way. `no-leak` is still
    /// judged over the whole pass, not run by run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// rig.keep_outputs_up_to(4);
    /// let small = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// let large = Case::from_values(vec![8], vec![7_i32; 8]).unwrap();
    /// assert!(Oracle.judge(&small, &route, &rig.run(&small).unwrap()).passed());
    /// assert!(Oracle.judge(&large, &route, &rig.run(&large).unwrap()).passed());
    /// // Only the small output was held and read again.
    /// assert_eq!(rig.release_outputs().reread, 1);
    /// ```
    pub fn keep_outputs_up_to(&mut self, max_elements: usize) {
        self.keep_outputs(true);
        self.hold_limit = max_elements;
    }

    /// Read every held output one last time, then drop them all: the
    /// outputs that changed since they were returned (`output-stable` at
    /// the end of a route).
    pub fn release_outputs(&mut self) -> HeldOutputs {
        let seen = self.held.reread(None, self.route.destination());
        self.held.clear();
        seen
    }

    /// Run the later cases with `provider` instead, on the same runtime,
    /// devices and prepared plans: as [`Rig::new`] on this rig's route
    /// would, without building the runtime and preparing its plans again
    /// (most of a fresh rig's cost on its first cases).
    ///
    /// What the rig learned of the provider before is put aside: the
    /// outputs it held are dropped and no longer kept, and the inputs it
    /// moved lately are no longer named in messages. The runs it was shown
    /// to leak count again only if that same provider (the same `Arc`)
    /// comes back while others still hold it (the rig does not keep it
    /// alive), for the last 1,024 set aside. What a provider left on the
    /// devices (memory it leaked, a copy it never completed) stays there,
    /// as it would for a fresh rig on the same route: `no-leak` judges each
    /// run by what changed during it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
    /// rig.replace_provider(Arc::new(HostProvider::new()));
    /// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
    /// // The plan prepared for the first provider served the second.
    /// assert_eq!(rig.prepared_count(), 1);
    /// ```
    pub fn replace_provider(&mut self, provider: Arc<dyn TransferProvider>) {
        let before = self.spy.replace_inner(Arc::clone(&provider));
        self.keep_outputs(false);
        self.recent = RecentInputs::default();
        // A provider no one else holds can never come back.
        self.set_aside.retain(|(known, _)| known.strong_count() > 0);
        if self.leaking_runs > 0 {
            if self.set_aside.len() >= PROVIDERS_REMEMBERED {
                self.set_aside.remove(0);
            }
            self.set_aside
                .push((Arc::downgrade(&before), self.leaking_runs));
        }
        let provider = Arc::downgrade(&provider);
        self.leaking_runs = self
            .set_aside
            .iter()
            .position(|(known, _)| Weak::ptr_eq(known, &provider))
            .map_or(0, |index| self.set_aside.remove(index).1);
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
        let outcomes = self.run_together(std::slice::from_ref(case))?;
        sole_outcome(&self.route, outcomes)
    }

    /// Move every input of `cases` through the provider in one run, in
    /// order, and return one [`Outcome`] per input, each with its own call.
    ///
    /// The runtime keeps each transferred value until the program ends,
    /// and the program reads each again after the last transfer: an output
    /// that changed meanwhile (a provider handing out an allocation the
    /// runtime still holds) is an `output-stable` finding on the run's last
    /// input. What the run did to the devices' memory is judged once, on
    /// the last input the run reached. An input the run never reached (an
    /// earlier transfer failed) is [`RuntimeVerdict::NotReached`].
    ///
    /// # Errors
    ///
    /// As [`Rig::run`]; [`HarnessError::InvalidCase`] for no case at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let cases = [
    ///     Case::from_values(vec![2], vec![1.0_f64, -0.0]).unwrap(),
    ///     Case::from_values(vec![2], vec![f64::NAN, 2.5]).unwrap(),
    /// ];
    /// let outcomes = rig.run_together(&cases).unwrap();
    /// for (case, outcome) in cases.iter().zip(&outcomes) {
    ///     assert!(Oracle.judge(case, &route, outcome).passed());
    /// }
    /// // The first output was read again after the second transfer.
    /// assert_eq!(outcomes[1].held.as_ref().unwrap().reread, 1);
    /// ```
    pub fn run_together(&mut self, cases: &[Case]) -> Result<Vec<Outcome>, HarnessError> {
        if cases.is_empty() {
            return Err(HarnessError::InvalidCase {
                reason: "a run moves at least one input".to_owned(),
            });
        }
        self.trace.clear();
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
        self.spy.take();
        let ran = self.stage_and_run(cases, &before[0], counted)?;
        let calls = self.spy.take();
        if calls.is_empty() {
            lost_call(ran.executed.outputs.as_ref().err(), &self.route)?;
        }
        self.check_call_order(cases, &calls)?;
        let reached = calls.len().clamp(1, cases.len());
        let saw_output = calls
            .iter()
            .filter_map(|call| call.destination_saw_output)
            .reduce(|all, seen| all && seen);
        let held = self.held_outputs(cases, &calls, &ran);
        self.hold_kept(cases, ran.executed.kept, &ran.executed.outputs);
        // Every tensor of the run (inputs, transfers, outputs) is dropped
        // now, but the outputs held on purpose.
        let leaks = self.memory_after(cases, &before, &stays, ran.staged, saw_output);
        drop(stays);
        let ended = RunEnd {
            cases,
            outputs: &ran.executed.outputs,
            reached,
            leaks,
            held,
            source_saw_input: before[0].accounts().then_some(ran.staged),
        };
        let mut trace = self.trace.take();
        let mut calls = calls_by_input(calls, cases.len());
        let outcomes = ran
            .input_reads
            .into_iter()
            .enumerate()
            .map(|(index, reads)| {
                // Each input's outcome has the run's trace; the last takes
                // it, the others a copy.
                let trace = if index + 1 == cases.len() {
                    std::mem::take(&mut trace)
                } else {
                    trace.clone()
                };
                let call = std::mem::take(&mut calls[index]);
                self.outcome_of(&ended, index, call, reads, trace)
            })
            .collect();
        self.recent.remember(cases);
        Ok(outcomes)
    }

    /// The runtime moves a run's inputs in the order the program first
    /// uses them, which is theirs: call `i` is input `i`'s. A call that
    /// moved another dtype or shape than its input is the harness's fault.
    fn check_call_order(&self, cases: &[Case], calls: &[SpyRecord]) -> Result<(), HarnessError> {
        if let Some((index, _)) = calls
            .iter()
            .zip(cases)
            .enumerate()
            .find(|(_, (call, case))| {
                call.request.input_dtype != case.dtype() || call.request.input_shape != case.shape()
            })
        {
            return Err(HarnessError::HarnessFault {
                route: self.route.label(),
                reason: format!(
                    "the runtime's transfer {} of the run moved {:?} {:?}, not input {} ({})",
                    index + 1,
                    calls[index].request.input_dtype,
                    calls[index].request.input_shape,
                    index + 1,
                    case_words(&cases[index])
                ),
            });
        }
        Ok(())
    }

    /// Hold each kept output whose values the run read, beside its case.
    fn hold_kept(
        &mut self,
        cases: &[Case],
        kept: Vec<Tensor>,
        outputs: &Result<Vec<RuntimeOutput>, RuntimeVerdict>,
    ) {
        if let Ok(observed) = outputs {
            for (case, (output, seen)) in cases.iter().zip(kept.into_iter().zip(observed)) {
                if case.len() > self.hold_limit {
                    continue;
                }
                match &seen.bytes {
                    Compared::Same => self.held.hold(case, output, case.shared_values()),
                    Compared::Image(bytes) => {
                        self.held
                            .hold(case, output, Reference::Held(bytes.as_slice().into()));
                    }
                    Compared::Failed { .. } | Compared::NotReadable { .. } => {}
                }
            }
        }
    }

    /// Stage `cases` on the source, read their backing, run them, and read
    /// their backing again.
    fn stage_and_run(
        &mut self,
        cases: &[Case],
        source_before: &Sample,
        counted: bool,
    ) -> Result<Ran, HarnessError> {
        let Self {
            route,
            runtime,
            spy,
            source,
            destination,
            plans,
            keeping,
            ..
        } = self;
        with_inputs(
            route.source(),
            cases,
            |inputs| -> Result<Ran, HarnessError> {
                // An owned input handed over unread is taken to hold the
                // case's values: the read after the call compares with them.
                let unread = spy.hands_inputs_unread();
                let before: Vec<InputBefore> = inputs
                    .iter()
                    .zip(cases)
                    .map(|(input, case)| match case.layout() {
                        Layout::Owned if unread => InputBefore::CaseValues,
                        _ => read_before(route.source(), input, case),
                    })
                    .collect();
                spy.expect(
                    before
                        .iter()
                        .zip(cases)
                        .map(|(before, case)| Expected {
                            input: before.shared_reference(case),
                            output: Some(case.shared_values()),
                        })
                        .collect(),
                );
                let staged = source_before.shown_more_on(route.source(), counted);
                let engines = Engines {
                    runtime,
                    source: source.as_mut(),
                    destination: destination.as_mut(),
                    spy,
                    route,
                };
                let executed = plans.run(engines, cases, inputs, *keeping);
                spy.expect(Vec::new());
                let executed = executed?;
                // The transfers' outputs were read and dropped (unless held).
                let input_reads = before
                    .into_iter()
                    .zip(inputs.iter().zip(cases))
                    .map(|(before, (input, case))| {
                        let after = before
                            .reference_view(case)
                            .map(|reference| reread_backing(route.source(), input, reference));
                        (before, after)
                    })
                    .collect();
                Ok(Ran {
                    executed,
                    input_reads,
                    staged,
                })
            },
        )?
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
