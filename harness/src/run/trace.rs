//! The event-domain trace of a case: which domain launched the transfer,
//! which tokens were waited on, which copies a simulated device queued,
//! finished or failed, and which faults it injected.
//!
//! A harness installs a [`Trace`] on the thread that runs a case; the
//! simulated event domains, streams and devices record into whatever trace
//! is installed on the calling thread (a copy remembers its trace, so its
//! completion is recorded even when another thread releases it). When a case
//! hangs, the trace says what the provider was doing.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_runtime::EventDomainId;

/// One thing that happened during a case.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum TraceEvent {
    /// A simulated event domain began a run.
    BeginRun {
        /// The engine's device.
        device: String,
        /// The run's domain.
        domain: EventDomainId,
    },
    /// A simulated event domain admitted a launch after its dependencies.
    Launch {
        /// The engine's device.
        device: String,
        /// The domain that launched.
        domain: EventDomainId,
        /// Origins of the dependency tokens it waited on.
        waited_on: Vec<EventDomainId>,
    },
    /// A simulated event domain drained its run.
    Drain {
        /// The engine's device.
        device: String,
        /// The drained domain.
        domain: EventDomainId,
    },
    /// The runtime called the provider under test.
    ProviderCalled {
        /// The domain whose launch called it, when a simulated domain did.
        launch_domain: Option<EventDomainId>,
    },
    /// The provider returned (Ok or Err) or unwound.
    ProviderReturned {
        /// How: `ok`, `err` or `panic`.
        how: &'static str,
    },
    /// A copy was queued on a simulated stream.
    CopyQueued {
        /// The device.
        device: String,
        /// The copy's number on that device.
        copy: u64,
        /// Bytes it writes.
        bytes: usize,
    },
    /// A copy completed.
    CopyCompleted {
        /// The device.
        device: String,
        /// The copy's number.
        copy: u64,
    },
    /// A copy failed.
    CopyFailed {
        /// The device.
        device: String,
        /// The copy's number.
        copy: u64,
        /// Why.
        reason: String,
    },
    /// Someone waited on a copy's completion token.
    TokenWaited {
        /// The device.
        device: String,
        /// The copy's number.
        copy: u64,
    },
    /// A simulated device injected a fault from its fault plan.
    FaultInjected {
        /// The device.
        device: String,
        /// What it did.
        fault: String,
    },
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.describe(&|domain| format!("{domain:?}")))
    }
}

impl TraceEvent {
    /// The event in words, with each event domain named by `name` (a
    /// trace names its domains once, then shortly: `domain 1`).
    pub(crate) fn describe(&self, name: &dyn Fn(&EventDomainId) -> String) -> String {
        match self {
            Self::BeginRun { device, domain } => {
                format!("{device}: begin run in {}", name(domain))
            }
            Self::Launch {
                device,
                domain,
                waited_on,
            } => format!(
                "{device}: launch in {} after waiting on {} token(s) [{}]",
                name(domain),
                waited_on.len(),
                waited_on.iter().map(name).collect::<Vec<_>>().join(", ")
            ),
            Self::Drain { device, domain } => format!("{device}: drain {}", name(domain)),
            Self::ProviderCalled { launch_domain } => match launch_domain {
                Some(domain) => format!("provider called from a launch in {}", name(domain)),
                None => "provider called (no simulated event domain traces this route's launches)"
                    .to_owned(),
            },
            Self::ProviderReturned { how } => format!("provider returned ({how})"),
            Self::CopyQueued {
                device,
                copy,
                bytes,
            } => format!("{device}: copy #{copy} queued ({bytes} bytes)"),
            Self::CopyCompleted { device, copy } => format!("{device}: copy #{copy} completed"),
            Self::CopyFailed {
                device,
                copy,
                reason,
            } => format!("{device}: copy #{copy} failed: {reason}"),
            Self::TokenWaited { device, copy } => {
                format!("{device}: waiting on the token of copy #{copy}")
            }
            Self::FaultInjected { device, fault } => format!("{device}: injected fault: {fault}"),
        }
    }

    /// The event domains the event names, in order.
    pub(crate) fn domains(&self) -> Vec<EventDomainId> {
        match self {
            Self::BeginRun { domain, .. } | Self::Drain { domain, .. } => vec![*domain],
            Self::Launch {
                domain, waited_on, ..
            } => std::iter::once(*domain)
                .chain(waited_on.iter().copied())
                .collect(),
            Self::ProviderCalled { launch_domain } => launch_domain.iter().copied().collect(),
            _ => Vec::new(),
        }
    }
}

/// The events of one case, shared between the thread that runs it and
/// whoever watches it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_harness::{trace, Trace, TraceEvent};
///
/// let sink = Arc::new(Trace::default());
/// {
///     let _installed = trace::install(Arc::clone(&sink));
///     trace::record(TraceEvent::ProviderReturned { how: "ok" });
/// }
/// trace::record(TraceEvent::ProviderReturned { how: "err" }); // no trace installed: dropped
/// assert_eq!(sink.events().len(), 1);
/// ```
#[derive(Debug, Default)]
pub struct Trace {
    events: Mutex<Vec<TraceEvent>>,
}

/// A trace keeps at most this many events, so a runaway loop cannot eat memory.
pub const TRACE_CAPACITY: usize = 256;

impl Trace {
    /// Append one event (dropped beyond [`TRACE_CAPACITY`]).
    pub fn push(&self, event: TraceEvent) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if events.len() < TRACE_CAPACITY {
            events.push(event);
        }
    }

    /// A copy of every event so far.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Take every event, leaving the trace empty (with room for as many
    /// events again: the next case of a rig makes about as many).
    pub fn take(&self) -> Vec<TraceEvent> {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        let room = Vec::with_capacity(events.len());
        std::mem::replace(&mut *events, room)
    }

    /// Drop every event, keeping the room they took.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{Trace, TraceEvent};
    ///
    /// let trace = Trace::default();
    /// trace.push(TraceEvent::ProviderReturned { how: "ok" });
    /// trace.clear();
    /// assert!(trace.take().is_empty());
    /// ```
    pub fn clear(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

thread_local! {
    static INSTALLED: RefCell<Option<Arc<Trace>>> = const { RefCell::new(None) };
}

/// Uninstalls the trace (restoring the previous one) when dropped.
#[derive(Debug)]
pub struct Installed {
    previous: Option<Arc<Trace>>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        INSTALLED.with(|slot| *slot.borrow_mut() = previous);
    }
}

/// Install `trace` on this thread until the guard drops.
pub fn install(trace: Arc<Trace>) -> Installed {
    let previous = INSTALLED.with(|slot| slot.borrow_mut().replace(trace));
    Installed { previous }
}

/// The trace installed on this thread, if any.
pub fn current() -> Option<Arc<Trace>> {
    INSTALLED.with(|slot| slot.borrow().clone())
}

/// Record `event` into this thread's trace; without one it is dropped.
pub fn record(event: TraceEvent) {
    INSTALLED.with(|slot| {
        if let Some(trace) = slot.borrow().as_ref() {
            trace.push(event);
        }
    });
}

thread_local! {
    static LAUNCHING: Cell<Option<EventDomainId>> = const { Cell::new(None) };
}

/// The event domain whose launch is running on this thread, if a device's
/// event-domain driver marked one ([`launching`]): a provider called by the
/// runtime sees its destination's domain here, and the Spy records it.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::trace::current_launch_domain;
///
/// assert_eq!(current_launch_domain(), None);
/// ```
pub fn current_launch_domain() -> Option<EventDomainId> {
    LAUNCHING.with(Cell::get)
}

/// Mark `domain` as launching on this thread until the guard drops (also
/// when the launch unwinds): what a device's event-domain driver does
/// around a launch, so that the suite can check a transfer launched in its
/// destination's domain.
#[must_use = "the mark lasts as long as the guard"]
pub fn launching(domain: EventDomainId) -> LaunchMark {
    LaunchMark(LAUNCHING.with(|cell| cell.replace(Some(domain))))
}

/// Restores the previous launch mark when dropped ([`launching`]).
#[derive(Debug)]
pub struct LaunchMark(Option<EventDomainId>);

impl Drop for LaunchMark {
    fn drop(&mut self) {
        LAUNCHING.with(|cell| cell.set(self.0));
    }
}
