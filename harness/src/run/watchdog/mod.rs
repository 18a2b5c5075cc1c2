//! `Watchdog`: runs each case on a worker thread under a deadline, so a
//! provider that hangs becomes a `deadline` verdict and the suite goes on.

mod deadline;
mod hung;
mod worker;

use std::any::Any;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use tenferro_runtime::TransferProvider;

pub use deadline::RouteDeadline;
use worker::{Job, Message, Worker, receive};

use crate::{Case, DEFAULT_PLAN_LIMIT, HarnessError, Outcome, Rig, Route, RuntimeVerdict};

/// The deadline of a case unless a caller chooses another: long enough for
/// a million-element case in a debug build on a loaded two-core machine.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// After a deadline passes, how long the watchdog waits for a released
/// worker to come back before it gives the worker up for lost.
const GRACE: Duration = Duration::from_secs(1);

/// The same after a call overran the wall clock without parking in a
/// simulated hang: releasing it does nothing, so waiting long for it only
/// adds to the cost of a real hang; a call about to finish still comes
/// back in time.
const WALL_CLOCK_GRACE: Duration = Duration::from_millis(20);

/// A call still running after this long is announced on stderr, and again
/// every time as long again passes.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(10);

use crate::run::rig::case_words;

/// Say on stderr (past the test harness's capture) that a call has been
/// running for `elapsed`: a hung provider otherwise leaves a test silent
/// for the whole deadline.
fn announce_wait(route: &Route, cases: &[Case], elapsed: Duration, limit: Duration) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "transfer-conformance: waiting on the provider of route {} for {} s (deadline {} s): case {}",
        route.label(),
        elapsed.as_secs(),
        limit.as_secs(),
        cases
            .iter()
            .map(case_words)
            .collect::<Vec<_>>()
            .join(" with ")
    );
}

/// Each input's outcome handed to `then`, in order.
fn each_then<R>(
    then: &impl Fn(&Route, &Case, Outcome) -> R,
    route: &Route,
    cases: &[Case],
    outcomes: Vec<Outcome>,
) -> Vec<R> {
    cases
        .iter()
        .zip(outcomes)
        .map(|(case, outcome)| then(route, case, outcome))
        .collect()
}

/// Runs cases through a [`Rig`] on a worker thread, each under a deadline.
///
/// A case that overruns is reported as [`RuntimeVerdict::TimedOut`], with
/// the request the provider was serving and the case's event-domain trace.
/// The watchdog then releases the hung thread (simulated hangs park in
/// [`hold`](crate::hold)); if the thread does not come back, it is given up and a fresh
/// rig runs the next case. Made with [`Watchdog::inline`], it runs cases
/// on the calling thread instead, with no deadline.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tenferro_runtime::{TransferProvider, TransferRequest};
/// use tenferro_tensor::Tensor;
/// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Route, Rule, Watchdog, hold};
///
/// // A copy that hangs in the harness's simulated hold on its first call.
/// #[derive(Debug, Default)]
/// struct HangsOnce(std::sync::atomic::AtomicBool);
/// impl TransferProvider for HangsOnce {
///     fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
///         if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
///             hold::park_until_released();
///         }
///         HostProvider::new().transfer_blocking(request)
///     }
/// }
///
/// let route = Route::host_to_host().unwrap();
/// let hang = Arc::new(HangsOnce::default());
/// let mut watchdog = Watchdog::new(route.clone(), hang, Duration::from_millis(50)).unwrap();
/// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
/// let judgement = Oracle.judge(&case, &route, &watchdog.run(&case).unwrap());
/// assert_eq!(judgement.rules(), vec![Rule::Deadline]);
/// // The watchdog survives to run the next case.
/// assert!(watchdog.run(&case).is_ok());
/// ```
pub struct Watchdog {
    route: Route,
    provider: Arc<dyn TransferProvider>,
    deadline: RouteDeadline,
    worker: Option<Worker>,
    /// The rig of a watchdog that runs its cases on the calling thread
    /// ([`Watchdog::inline`]); `None`: cases run on the worker.
    inline: Option<Box<Rig>>,
    lost_workers: usize,
    /// The most elements of an output the worker holds, where it holds
    /// outputs ([`Watchdog::keep_outputs_up_to`]).
    keeping: Option<usize>,
    /// The most plans a rig keeps ([`Watchdog::keep_plans`]).
    plan_limit: usize,
    /// Whether the rig reads each input beside its call
    /// ([`Watchdog::watch_inputs`]).
    watching: bool,
    /// Whether the rig hands owned inputs over unread
    /// ([`Watchdog::hand_inputs_unread`]).
    unread: bool,
    /// Whether the rig reads a run's outputs only after the next run
    /// ([`Watchdog::defer_output_reads`]).
    defers: bool,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Watchdog")
            .field("route", &self.route.label())
            .field("deadline", &self.deadline)
            .field("lost_workers", &self.lost_workers)
            .finish_non_exhaustive()
    }
}

impl Watchdog {
    /// A watchdog running `provider` on `route` with `deadline` per case:
    /// a `Duration`, or a [`RouteDeadline`] the route's other watchdogs
    /// share (so that a hang is judged once per route).
    ///
    /// # Errors
    ///
    /// The rig's setup error when the runtime cannot be built.
    pub fn new(
        route: Route,
        provider: Arc<dyn TransferProvider>,
        deadline: impl Into<RouteDeadline>,
    ) -> Result<Self, HarnessError> {
        let worker = Worker::spawn(&route, &provider)?;
        Ok(Self {
            route,
            provider,
            deadline: deadline.into(),
            worker: Some(worker),
            inline: None,
            lost_workers: 0,
            keeping: None,
            plan_limit: DEFAULT_PLAN_LIMIT,
            watching: false,
            unread: false,
            defers: false,
        })
    }

    /// A watchdog that runs every case on the calling thread, with no
    /// deadline and no hand-off to a worker: for a caller that bounds the
    /// time itself (libFuzzer's `-timeout`, say) and runs providers that
    /// cannot hang. A hang there blocks the caller; a panic is still
    /// caught and judged, as in [`Rig::run`].
    ///
    /// The fuzz targets run their fault-free and non-hanging inputs this
    /// way: two thread wake-ups a case were a fifth of an input's time.
    ///
    /// # Errors
    ///
    /// The rig's setup error when the runtime cannot be built.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Route, Watchdog};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut watchdog = Watchdog::inline(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// assert!(Oracle.judge(&case, &route, &watchdog.run(&case).unwrap()).passed());
    /// ```
    pub fn inline(route: Route, provider: Arc<dyn TransferProvider>) -> Result<Self, HarnessError> {
        let rig = Rig::new(route.clone(), Arc::clone(&provider))?;
        Ok(Self {
            route,
            provider,
            deadline: RouteDeadline::new(DEFAULT_DEADLINE),
            worker: None,
            inline: Some(Box::new(rig)),
            lost_workers: 0,
            keeping: None,
            plan_limit: DEFAULT_PLAN_LIMIT,
            watching: false,
            unread: false,
            defers: false,
        })
    }

    /// The route.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The configured per-case deadline ([`DEFAULT_DEADLINE`] for an
    /// inline watchdog, which enforces none).
    pub fn deadline(&self) -> Duration {
        self.deadline.configured()
    }

    /// The route's deadline, shared with its other watchdogs.
    pub fn route_deadline(&self) -> &RouteDeadline {
        &self.deadline
    }

    /// Worker threads given up for lost after a hang they never left.
    pub fn lost_workers(&self) -> usize {
        self.lost_workers
    }

    /// Hold the runtime's outputs from now on, or stop and drop them
    /// ([`Rig::keep_outputs`]).
    pub fn keep_outputs(&mut self, keep: bool) {
        self.keeping = keep.then_some(usize::MAX);
        self.tell_rig(|rig| rig.keep_outputs(keep), Job::Keep(self.keeping));
    }

    /// Hold the runtime's outputs of at most `max_elements` elements from
    /// now on ([`Rig::keep_outputs_up_to`]), in a worker started after a
    /// hang too.
    pub fn keep_outputs_up_to(&mut self, max_elements: usize) {
        self.keeping = Some(max_elements);
        self.tell_rig(
            |rig| rig.keep_outputs_up_to(max_elements),
            Job::Keep(self.keeping),
        );
    }

    /// Change the inline rig with `change`, or ask the worker's with `job`.
    fn tell_rig(&mut self, change: impl FnOnce(&mut Rig), job: Job) {
        if let Some(rig) = &mut self.inline {
            change(rig);
        }
        if let Some(worker) = &self.worker {
            let _ = worker.jobs.send(job);
        }
    }

    /// Read each later call's input beside the call while it is in flight,
    /// or stop ([`Rig::watch_inputs`]), in a worker started after a hang
    /// too.
    pub fn watch_inputs(&mut self, watch: bool) {
        self.watching = watch;
        if let Some(rig) = &mut self.inline {
            rig.watch_inputs(watch);
        }
        if let Some(worker) = &self.worker {
            worker.spy.watch_inputs(watch);
        }
    }

    /// Hand each later call's owned input to the provider unread, or read
    /// it first ([`Rig::hand_inputs_unread`]), in a worker started after
    /// a hang too.
    pub fn hand_inputs_unread(&mut self, unread: bool) {
        self.unread = unread;
        if let Some(rig) = &mut self.inline {
            rig.hand_inputs_unread(unread);
        }
        if let Some(worker) = &self.worker {
            worker.spy.hand_inputs_unread(unread);
        }
    }

    /// Read each later run's outputs only after the run after it
    /// ([`Rig::defer_output_reads`]), in a worker started after a hang
    /// too.
    pub fn defer_output_reads(&mut self, defer: bool) {
        self.defers = defer;
        if let Some(rig) = &mut self.inline {
            rig.defer_output_reads(defer);
        }
        if let Some(worker) = &self.worker {
            worker.spy.defer_output_reads(defer);
        }
    }

    /// Keep at most `limit` prepared plans ([`Rig::keep_plans`]), in a
    /// worker started after a hang too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Route, Watchdog, DEFAULT_DEADLINE};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut watchdog = Watchdog::new(route.clone(), Arc::new(HostProvider::new()), DEFAULT_DEADLINE).unwrap();
    /// watchdog.keep_plans(8);
    /// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// assert!(Oracle.judge(&case, &route, &watchdog.run(&case).unwrap()).passed());
    /// ```
    pub fn keep_plans(&mut self, limit: usize) {
        self.plan_limit = limit;
        self.tell_rig(|rig| rig.keep_plans(limit), Job::KeepPlans(limit));
    }

    /// Run the later cases with `provider` instead, on the same runtime,
    /// devices and prepared plans ([`Rig::replace_provider`]); a worker
    /// started after a hang runs it too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Route, Watchdog};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut watchdog = Watchdog::inline(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
    /// watchdog.run(&case).unwrap();
    /// watchdog.replace_provider(Arc::new(HostProvider::new()));
    /// assert!(Oracle.judge(&case, &route, &watchdog.run(&case).unwrap()).passed());
    /// ```
    pub fn replace_provider(&mut self, provider: Arc<dyn TransferProvider>) {
        self.provider = Arc::clone(&provider);
        self.keeping = None;
        if let Some(rig) = &mut self.inline {
            rig.replace_provider(provider);
        } else if let Some(worker) = &self.worker {
            // A worker that is gone is started again with the new provider.
            let _ = worker.jobs.send(Job::Replace(provider));
        }
    }

    /// Read the held outputs a last time and drop them
    /// ([`Rig::release_outputs`]); held outputs lost with a hung worker
    /// are not read.
    ///
    /// # Errors
    ///
    /// [`HarnessError::WorkerDied`] when the worker does not answer within
    /// the deadline.
    pub fn release_outputs(&mut self) -> Result<crate::HeldOutputs, HarnessError> {
        if let Some(rig) = &mut self.inline {
            return Ok(rig.release_outputs());
        }
        let Some(worker) = &self.worker else {
            return Ok(crate::HeldOutputs::default());
        };
        let died = || HarnessError::WorkerDied {
            route: self.route.label(),
        };
        worker.jobs.send(Job::Release).map_err(|_| died())?;
        match receive(&worker.replies, Some(self.deadline.configured())) {
            Ok(Message::Released(held)) => Ok(held),
            _ => Err(died()),
        }
    }

    /// Run one case under the deadline.
    ///
    /// # Errors
    ///
    /// As [`Rig::run`], or a worker that could not be started or died.
    pub fn run(&mut self, case: &Case) -> Result<Outcome, HarnessError> {
        let outcomes = self.run_together(std::slice::from_ref(case))?;
        crate::run::rig::sole_outcome(&self.route, outcomes)
    }

    /// Move the inputs of `cases` in one run ([`Rig::run_together`]) under
    /// the deadline, which is the per-case deadline times the number of
    /// inputs.
    ///
    /// # Errors
    ///
    /// As [`Rig::run_together`], or a worker that could not be started or
    /// died.
    pub fn run_together(&mut self, cases: &[Case]) -> Result<Vec<Outcome>, HarnessError> {
        self.run_together_then(cases, |_, _, outcome| outcome)
    }

    /// As [`Watchdog::run_together`], with each input's outcome handed to
    /// `then` (with the route and the input's case) on the thread that ran
    /// the case, and only what `then` returns handed back.
    ///
    /// An outcome is dozens of small allocations made by the worker: judged
    /// and dropped there, they are never freed on the caller's core, which
    /// made a case of a few elements about a sixth cheaper than judging and
    /// dropping it on the caller (`rig_overhead`, row 1b). On a watchdog
    /// without a worker ([`Watchdog::inline`]), and for the outcomes of a
    /// run that overran its deadline, `then` runs on the caller. A panic in
    /// `then` is resumed on the caller.
    ///
    /// # Errors
    ///
    /// As [`Watchdog::run_together`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, DEFAULT_DEADLINE, HostProvider, Oracle, Route, Watchdog};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut watchdog = Watchdog::new(route, Arc::new(HostProvider::new()), DEFAULT_DEADLINE).unwrap();
    /// let cases = [Case::from_values(vec![2], vec![1_i32, 2]).unwrap()];
    /// // Judged on the worker; only whether it passed comes back.
    /// let passed = watchdog
    ///     .run_together_then(&cases, |route, case, outcome| Oracle.judge(case, route, &outcome).passed())
    ///     .unwrap();
    /// assert_eq!(passed, vec![true]);
    /// ```
    pub fn run_together_then<R, F>(
        &mut self,
        cases: &[Case],
        then: F,
    ) -> Result<Vec<R>, HarnessError>
    where
        R: Send + 'static,
        F: Fn(&Route, &Case, Outcome) -> R + Clone + Send + 'static,
    {
        if let Some(rig) = &mut self.inline {
            let outcomes = rig.run_together(cases)?;
            return Ok(each_then(&then, rig.route(), cases, outcomes));
        }
        if let Some(reason) = self.deadline.exhausted() {
            return Err(HarnessError::Unavailable { reason });
        }
        let worker = self.take_worker()?;
        let died = || HarnessError::WorkerDied {
            route: self.route.label(),
        };
        let limit = self.deadline.limit_for(cases);
        let hung_before = self.deadline.hung_on();
        let remote = then.clone();
        let job = Job::Run(
            cases.to_vec(),
            Box::new(move |route: &Route, cases: &[Case], reply: worker::Reply| {
                Box::new(reply.map(|outcomes| each_then(&remote, route, cases, outcomes)))
                    as Box<dyn Any + Send>
            }),
        );
        if worker.jobs.send(job).is_err() {
            return Err(died());
        }
        let mut start = Instant::now();
        let outcomes = match self.reply(&worker, cases, &mut start, limit) {
            Ok(Message::Done(reply)) => {
                self.deadline.returned_after(start.elapsed(), cases);
                self.worker = Some(worker);
                return match reply.downcast::<Result<Vec<R>, HarnessError>>() {
                    Ok(reply) => *reply,
                    Err(_) => Err(HarnessError::HarnessFault {
                        route: self.route.label(),
                        reason: "the case worker answered a run with another run's reply"
                            .to_owned(),
                    }),
                };
            }
            Ok(Message::ThenPanicked(payload)) => {
                self.deadline.returned_after(start.elapsed(), cases);
                self.worker = Some(worker);
                std::panic::resume_unwind(payload)
            }
            // A simulated hang: the test owns its clock, so the deadline
            // passes now rather than on the wall clock. Real hangs (a
            // vendor's provider, a real device) never park here and keep
            // the wall-clock deadline.
            Ok(Message::Parked) => self.give_up(worker, cases, limit, GRACE),
            Ok(Message::Released(_) | Message::Repeating) => {
                return Err(HarnessError::HarnessFault {
                    route: self.route.label(),
                    reason: "the case worker answered a case with another job's message".to_owned(),
                });
            }
            // A call that overran the wall clock: the route remembers it,
            // so that its later cases do not each wait a whole deadline.
            Err(RecvTimeoutError::Timeout) => {
                let (hung, mut outcomes) = self.give_up_at(worker, cases, limit, WALL_CLOCK_GRACE);
                self.deadline.hung(&cases[hung.min(cases.len() - 1)]);
                if let Some(first) = hung_before {
                    // Overran the short deadline: not proven to hang.
                    for outcome in &mut outcomes {
                        outcome.runtime = RuntimeVerdict::Abandoned {
                            limit,
                            hung_on: first.clone(),
                        };
                    }
                }
                outcomes
            }
            Err(RecvTimeoutError::Disconnected) => return Err(died()),
        };
        Ok(each_then(&then, &self.route, cases, outcomes))
    }

    /// The watchdog's worker, or a fresh one (holding outputs if the
    /// watchdog does).
    fn take_worker(&mut self) -> Result<Worker, HarnessError> {
        if let Some(worker) = self.worker.take() {
            return Ok(worker);
        }
        let worker = Worker::spawn(&self.route, &self.provider)?;
        if self.keeping.is_some() {
            let _ = worker.jobs.send(Job::Keep(self.keeping));
        }
        if self.plan_limit != DEFAULT_PLAN_LIMIT {
            let _ = worker.jobs.send(Job::KeepPlans(self.plan_limit));
        }
        worker.spy.watch_inputs(self.watching);
        worker.spy.hand_inputs_unread(self.unread);
        worker.spy.defer_output_reads(self.defers);
        Ok(worker)
    }

    /// The worker's answer to the run of `cases` sent at `start`, waited
    /// for up to `limit` (announcing a long wait on stderr). Each
    /// repetition of the run that judges its memory restarts the clock
    /// (`start` is then when the last began): the deadline is a call's,
    /// not the harness's repetitions'.
    fn reply(
        &self,
        worker: &Worker,
        cases: &[Case],
        start: &mut Instant,
        limit: Duration,
    ) -> Result<Message, RecvTimeoutError> {
        let mut announced = ANNOUNCE_AFTER;
        loop {
            let wait = limit.min(announced).saturating_sub(start.elapsed());
            match receive(&worker.replies, Some(wait)) {
                Ok(Message::Repeating) => {
                    *start = Instant::now();
                    announced = ANNOUNCE_AFTER;
                }
                Err(RecvTimeoutError::Timeout) if start.elapsed() < limit => {
                    announce_wait(&self.route, cases, start.elapsed(), limit);
                    announced += ANNOUNCE_AFTER;
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests;
