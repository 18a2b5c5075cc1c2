//! `Watchdog`: runs each case on a worker thread under a deadline, so a
//! provider that hangs becomes a `deadline` verdict and the suite goes on.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use tenferro_mock_devices::{Trace, hold};
use tenferro_runtime::{EventDomainId, TransferProvider};

use crate::{
    Case, HarnessError, LeakCheck, Outcome, ProviderResult, Rig, Route, RuntimeVerdict, Spy,
    SpyRecord,
};

/// The deadline of a case unless a caller chooses another: long enough for
/// a million-element case in a debug build on a loaded two-core machine.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// After a deadline passes, how long the watchdog waits for a released
/// worker to come back before it gives the worker up for lost.
const GRACE: Duration = Duration::from_secs(1);

/// How long a thread waiting for the other side of a case hand-off spins
/// before it blocks. A case of a few elements takes tens of microseconds,
/// and waking a blocked thread on an idle machine costs about as much again,
/// on both sides of every case: spinning that long makes the hand-off of
/// back-to-back cases nearly free. It spins (`spin_loop`) rather than
/// yields: a yield on a loaded machine hands the core to another process
/// for a whole time slice, which cost a millisecond or more a hand-off.
const STAY_AWAKE: Duration = Duration::from_micros(50);

/// The next message of `channel`: first spinning for up to [`STAY_AWAKE`],
/// then blocking (for the rest of `deadline`, if one is given).
fn receive<T>(channel: &Receiver<T>, deadline: Option<Duration>) -> Result<T, RecvTimeoutError> {
    let start = Instant::now();
    let mut spins: u32 = 0;
    loop {
        match channel.try_recv() {
            Ok(message) => return Ok(message),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        // The clock is read every 64 spins: reading it is a good part of a
        // spin's cost.
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) && start.elapsed() >= STAY_AWAKE {
            break;
        }
        std::hint::spin_loop();
    }
    match deadline {
        Some(deadline) => channel.recv_timeout(deadline.saturating_sub(start.elapsed())),
        None => channel.recv().map_err(|_| RecvTimeoutError::Disconnected),
    }
}

/// How often a released worker may park again on an abandoned case
/// before it is given up for lost.
const MAX_RELEASES: usize = 16;

type Reply = Result<Outcome, HarnessError>;

/// What the worker tells the watchdog.
enum Message {
    /// The case's outcome (boxed: an outcome is large, a park is not).
    Done(Box<Reply>),
    /// The worker parked in a simulated hang ([`hold`]): only a release
    /// ends it, so the case will overrun any deadline.
    Parked,
}

struct Worker {
    jobs: Sender<Case>,
    replies: Receiver<Message>,
    thread: ThreadId,
    spy: Arc<Spy>,
    trace: Arc<Trace>,
    event_domains: (EventDomainId, EventDomainId),
}

impl Worker {
    fn spawn(route: &Route, provider: &Arc<dyn TransferProvider>) -> Result<Self, HarnessError> {
        let (jobs, job_queue) = mpsc::channel::<Case>();
        let (reply, replies) = mpsc::channel::<Message>();
        let (ready, started) = mpsc::channel();
        let (route, provider) = (route.clone(), Arc::clone(provider));
        let handle = std::thread::Builder::new()
            .name("transfer-case".to_owned())
            .spawn(move || {
                let mut rig = match Rig::new(route, provider) {
                    Ok(rig) => rig,
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let handles = (
                    Arc::clone(rig.spy()),
                    Arc::clone(rig.trace()),
                    rig.event_domains(),
                );
                if ready.send(Ok(handles)).is_err() {
                    return;
                }
                let parked = reply.clone();
                hold::on_park(Some(Box::new(move || {
                    let _ = parked.send(Message::Parked);
                })));
                while let Ok(case) = receive(&job_queue, None) {
                    if reply.send(Message::Done(Box::new(rig.run(&case)))).is_err() {
                        return;
                    }
                }
            })
            .map_err(|error| HarnessError::Runtime {
                context: "starting the case worker".to_owned(),
                message: error.to_string(),
            })?;
        let (spy, trace, event_domains) = started.recv().map_err(|_| HarnessError::Runtime {
            context: "starting the case worker".to_owned(),
            message: "the worker died before it built its rig".to_owned(),
        })??;
        Ok(Self {
            jobs,
            replies,
            thread: handle.thread().id(),
            spy,
            trace,
            event_domains,
        })
    }
}

/// Runs cases through a [`Rig`] on a worker thread, each under a deadline.
///
/// A case that overruns is reported as [`RuntimeVerdict::TimedOut`], with
/// the request the provider was serving and the case's event-domain trace.
/// The watchdog then releases the hung thread (simulated hangs park in
/// [`hold`]); if the thread does not come back, it is given up and a fresh
/// rig runs the next case.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use tenferro_mock_devices::providers::{Broken, Fault};
/// use tenferro_mock_devices::{SimDevice, SimUpload};
/// use tenferro_transfer_harness::{Case, Oracle, Route, Rule, Watchdog};
///
/// let route = Route::host_to_sim().unwrap();
/// let device = route.destination().downcast::<SimDevice>().unwrap().clone();
/// let hang = Arc::new(Broken::new(Arc::new(SimUpload::new(device)), vec![Fault::Hang]));
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
    deadline: Duration,
    worker: Option<Worker>,
    lost_workers: usize,
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
    /// A watchdog running `provider` on `route` with `deadline` per case.
    ///
    /// # Errors
    ///
    /// The rig's setup error when the runtime cannot be built.
    pub fn new(
        route: Route,
        provider: Arc<dyn TransferProvider>,
        deadline: Duration,
    ) -> Result<Self, HarnessError> {
        let worker = Worker::spawn(&route, &provider)?;
        Ok(Self {
            route,
            provider,
            deadline,
            worker: Some(worker),
            lost_workers: 0,
        })
    }

    /// The route.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The per-case deadline.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Worker threads given up for lost after a hang they never left.
    pub fn lost_workers(&self) -> usize {
        self.lost_workers
    }

    /// Run one case under the deadline.
    ///
    /// # Errors
    ///
    /// As [`Rig::run`], or a worker that could not be started or died.
    pub fn run(&mut self, case: &Case) -> Result<Outcome, HarnessError> {
        let worker = match self.worker.take() {
            Some(worker) => worker,
            None => Worker::spawn(&self.route, &self.provider)?,
        };
        let died = || HarnessError::Runtime {
            context: format!("running a case on route {}", self.route.label()),
            message: "the case worker died".to_owned(),
        };
        if worker.jobs.send(case.clone()).is_err() {
            return Err(died());
        }
        match receive(&worker.replies, Some(self.deadline)) {
            Ok(Message::Done(reply)) => {
                self.worker = Some(worker);
                *reply
            }
            // A simulated hang: the test owns its clock, so the deadline
            // passes now rather than on the wall clock. Real hangs (a
            // vendor's provider, a real device) never park here and keep
            // the wall-clock deadline.
            Ok(Message::Parked) => Ok(self.give_up(worker)),
            Err(RecvTimeoutError::Disconnected) => Err(died()),
            Err(RecvTimeoutError::Timeout) => Ok(self.give_up(worker)),
        }
    }

    /// The outcome of a case that overran; the worker is released and kept
    /// if it comes back within the grace period.
    fn give_up(&mut self, worker: Worker) -> Outcome {
        let request = worker.spy.in_flight();
        let stage = worker.spy.stage();
        let trace = worker.trace.events();
        let event_domains = worker.event_domains;
        hold::release(worker.thread);
        let mut releases = 1;
        loop {
            match worker.replies.recv_timeout(GRACE) {
                // Its outcome belongs to a case already judged as timed out.
                Ok(Message::Done(_)) => {
                    self.worker = Some(worker);
                    break;
                }
                // Released, it parked again on the same abandoned case.
                Ok(Message::Parked) if releases < MAX_RELEASES => {
                    releases += 1;
                    hold::release(worker.thread);
                }
                Ok(Message::Parked) | Err(_) => {
                    self.lost_workers += 1;
                    break;
                }
            }
        }
        let limit = self.deadline;
        Outcome {
            runtime: RuntimeVerdict::TimedOut { limit },
            calls: request
                .map(|request| SpyRecord {
                    request,
                    result: match stage {
                        Some(method) => ProviderResult::StorageHung { method, limit },
                        None => ProviderResult::TimedOut { limit },
                    },
                })
                .into_iter()
                .collect(),
            snapshot_event_domains: event_domains,
            trace,
            leaks: LeakCheck::Unchecked(
                "the case timed out, so its tensors were never dropped".to_owned(),
            ),
        }
    }
}
