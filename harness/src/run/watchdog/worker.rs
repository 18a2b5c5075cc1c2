//! The worker thread that owns a watchdog's rig, and the messages between
//! them.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use tenferro_runtime::{EventDomainId, TransferProvider};

use crate::{Case, HarnessError, Outcome, Rig, Route, Spy, Trace, hold};

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
pub(super) fn receive<T>(
    channel: &Receiver<T>,
    deadline: Option<Duration>,
) -> Result<T, RecvTimeoutError> {
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

pub(super) type Reply = Result<Vec<Outcome>, HarnessError>;

/// What the worker does with a run's reply before it answers: hands each
/// outcome to the caller's `then` ([`super::Watchdog::run_together_then`]),
/// on the thread that made it, and answers with what `then` returned.
pub(super) type Then = Box<dyn FnOnce(&Route, &[Case], Reply) -> Box<dyn Any + Send> + Send>;

/// What the watchdog asks the worker.
pub(super) enum Job {
    /// Run the inputs of one run ([`Rig::run_together`]) and hand the
    /// reply to `Then`.
    Run(Vec<Case>, Then),
    /// Hold outputs of at most this many elements from now on, or stop
    /// (`None`) ([`Rig::keep_outputs_up_to`]).
    Keep(Option<usize>),
    /// Keep at most this many plans ([`Rig::keep_plans`]).
    KeepPlans(usize),
    /// Read the held outputs once more and drop them
    /// ([`Rig::release_outputs`]).
    Release,
    /// Run the later cases with another provider
    /// ([`Rig::replace_provider`]).
    Replace(Arc<dyn TransferProvider>),
    /// Answer with the number of plans the rig keeps: the watchdog's
    /// tests look at a worker's rig this way.
    #[cfg(test)]
    CountPlans,
}

/// What the worker tells the watchdog.
pub(super) enum Message {
    /// What the run's `Then` made of its reply.
    Done(Box<dyn Any + Send>),
    /// The run's `Then` panicked: the payload, for the caller to resume.
    ThenPanicked(Box<dyn Any + Send>),
    /// The held outputs, read a last time before they were dropped.
    Released(crate::HeldOutputs),
    /// The worker parked in a simulated hang ([`hold`]): only a release
    /// ends it, so the case will overrun any deadline.
    Parked,
    /// The run is about to be repeated to judge its memory
    /// ([`Rig::on_repetition`]): the repetition gets a deadline of its own.
    Repeating,
}

pub(super) struct Worker {
    pub(super) jobs: Sender<Job>,
    pub(super) replies: Receiver<Message>,
    pub(super) thread: ThreadId,
    pub(super) spy: Arc<Spy>,
    pub(super) trace: Arc<Trace>,
    pub(super) event_domains: (EventDomainId, EventDomainId),
}

impl Worker {
    pub(super) fn spawn(
        route: &Route,
        provider: &Arc<dyn TransferProvider>,
    ) -> Result<Self, HarnessError> {
        let (jobs, job_queue) = mpsc::channel::<Job>();
        let (reply, replies) = mpsc::channel::<Message>();
        let (ready, started) = mpsc::channel();
        let label = route.label();
        let (route, provider) = (route.clone(), Arc::clone(provider));
        let handle = std::thread::Builder::new()
            .name("transfer-case".to_owned())
            .spawn(move || {
                let rig = match Rig::new(route, provider) {
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
                serve(rig, &job_queue, &reply);
            })
            .map_err(|source| HarnessError::Worker {
                route: label.clone(),
                source,
            })?;
        let (spy, trace, event_domains) = started
            .recv()
            .map_err(|_| HarnessError::WorkerDied { route: label })??;
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

/// The worker's loop: run the jobs of `job_queue` on `rig`, answering on
/// `reply` (and telling it of simulated hangs and of a run's repetitions),
/// until the watchdog is gone.
fn serve(mut rig: Rig, job_queue: &Receiver<Job>, reply: &Sender<Message>) {
    let repeating = reply.clone();
    rig.on_repetition(Some(Box::new(move || {
        let _ = repeating.send(Message::Repeating);
    })));
    let parked = reply.clone();
    hold::on_park(Some(Box::new(move || {
        let _ = parked.send(Message::Parked);
    })));
    while let Ok(job) = receive(job_queue, None) {
        let message = match job {
            Job::Run(cases, then) => {
                let reply = rig.run_together(&cases);
                match catch_unwind(AssertUnwindSafe(|| then(rig.route(), &cases, reply))) {
                    Ok(done) => Message::Done(done),
                    Err(payload) => Message::ThenPanicked(payload),
                }
            }
            Job::Keep(Some(limit)) => {
                rig.keep_outputs_up_to(limit);
                continue;
            }
            Job::Keep(None) => {
                rig.keep_outputs(false);
                continue;
            }
            Job::KeepPlans(limit) => {
                rig.keep_plans(limit);
                continue;
            }
            Job::Replace(provider) => {
                rig.replace_provider(provider);
                continue;
            }
            Job::Release => Message::Released(rig.release_outputs()),
            #[cfg(test)]
            Job::CountPlans => Message::Done(Box::new(rig.prepared_count())),
        };
        if reply.send(message).is_err() {
            return;
        }
    }
}
