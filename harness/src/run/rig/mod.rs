//! `Rig`: a real tenferro `Runtime` built around the provider under test
//! for one route, with a program that can only run if its inputs move.
//!
//! The program (`program.rs`) and its plans (`plans.rs`), the outputs a
//! caller holds (`held.rs`), the inputs moved lately (`recent.rs`), the
//! memory a run left (`memory.rs`), staging and running a run
//! (`running.rs`) and each input's [`Outcome`](crate::Outcome) once the
//! run ended (`ending.rs`) are apart; this file builds a rig and holds its
//! settings.

mod ending;
mod held;
mod memory;
mod plans;
mod program;
mod recent;
mod running;

use std::sync::{Arc, Weak};

use crate::EngineRole;
use crate::trace::Trace;
use tenferro_runtime::{EventDomainId, ExecutionEngine, Runtime, TransferProvider};

use crate::{Case, HarnessError, HeldOutputs, Route, Spy};

pub(crate) use ending::sole_outcome;
use held::HeldAcrossRuns;
pub use held::{HOLD_RECENT, HOLD_SAME_SIZE};
use plans::Plans;
use recent::RecentInputs;
use running::Ran;

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
    /// those writes delivers stale values (`values`). An owned input is
    /// still read after the call and compared with the case's values
    /// (`input-intact`); a view input is not read at all (its backing
    /// holds more than the case's values, as the adapter staged it), and
    /// `input-intact` is not checked on its case.
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

    /// From now on (`true`), read the runtime's outputs of a run only
    /// after the next run, as a caller that collects its results later
    /// does, where the rig keeps outputs ([`Rig::keep_outputs`]; a rig that
    /// keeps none reads every run as before): a run neither synchronizes
    /// the engines nor reads its outputs, holds each output whose provider
    /// returned its case's values as those values, and reads it with the
    /// other held outputs after the next run (`output-stable`). As each
    /// call returns, its output read, the
    /// destination's queues are stalled ([`DeviceEndpoint::stall_queues`](crate::DeviceEndpoint::stall_queues),
    /// for [`DEFERRED_READ_STALL`](crate::DEFERRED_READ_STALL)), so the
    /// destination engine's kernel over the output is still queued when
    /// the next run's call is made: a provider that writes into memory
    /// such a kernel has yet to read (a block freed in stream order and
    /// handed out again, written from the host without waiting) changes
    /// the result the caller holds. `false`, as a rig starts: every run
    /// synchronizes and reads its outputs before it ends.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{
    ///     Case, Compared, HostProvider, Oracle, Rig, Route, RuntimeVerdict,
    /// };
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// rig.defer_output_reads(true);
    /// let first = Case::from_values(vec![3], vec![1.0_f32, -0.0, 2.5]).unwrap();
    /// // A rig that keeps no output reads every run as before.
    /// let read = rig.run(&first).unwrap();
    /// assert!(matches!(&read.runtime, RuntimeVerdict::Accepted(output) if output.bytes == Compared::Same));
    /// rig.keep_outputs(true);
    /// let deferred = rig.run(&first).unwrap();
    /// assert!(matches!(
    ///     &deferred.runtime,
    ///     RuntimeVerdict::Accepted(output) if matches!(output.bytes, Compared::NotReadable { .. })
    /// ));
    /// // Its held part says so: read after the next run, not here.
    /// assert!(deferred.held.as_ref().is_some_and(|held| held.deferred && held.reread == 0));
    /// rig.defer_output_reads(false);
    /// let next = Case::from_values(vec![3], vec![4.0_f32, 5.0, 6.0]).unwrap();
    /// let outcome = rig.run(&next).unwrap();
    /// // The first run's output, read for the first time after the next.
    /// assert_eq!(outcome.held.as_ref().unwrap().reread, 1);
    /// assert!(Oracle.judge(&next, &route, &outcome).passed());
    /// ```
    pub fn defer_output_reads(&mut self, defer: bool) {
        self.spy.defer_output_reads(defer);
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
