//! How a case's memory is accounted for `no-leak`: a device's own counts
//! of memory in use ([`MemoryInUse`], what real devices expose), or the
//! per-allocation ledger; which calls ran beside a case on a device
//! ([`Activity`]); and the evidence that the accounting sees what it must
//! (an input staged on the device, an output returned into it) before its
//! silence counts as "no leak".

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use std::thread::ThreadId;

use crate::Allocation;

use crate::{Endpoint, LeakedAllocation};

mod kept;
mod phase;

pub use kept::KeptMemory;
pub(crate) use kept::{Repetition, kept_or_leaked, phase_kept_or_leaked};
pub use phase::PhaseMemory;

/// The memory a device has in use, as the device counts it: live
/// allocations, bytes, or both. What PyTorch's `memory_allocated`, PJRT's
/// `bytes_in_use` and `num_allocs`, or CubeCL's `MemoryUsage` report.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::MemoryInUse;
///
/// let before = MemoryInUse::allocations(3).with_bytes(96);
/// let after = MemoryInUse::allocations(4).with_bytes(128);
/// let growth = after.growth_since(&before);
/// assert_eq!((growth.allocations, growth.bytes), (Some(1), Some(32)));
/// assert!(growth.grew());
/// ```
#[derive(Clone, Copy, Debug, Default, Eq, Hash, PartialEq)]
#[non_exhaustive]
pub struct MemoryInUse {
    /// Live allocations, where the device counts them.
    pub allocations: Option<u64>,
    /// Bytes in use, where the device counts them.
    pub bytes: Option<u64>,
}

impl MemoryInUse {
    /// `count` live allocations.
    pub fn allocations(count: u64) -> Self {
        Self {
            allocations: Some(count),
            bytes: None,
        }
    }

    /// `count` bytes in use.
    pub fn bytes(count: u64) -> Self {
        Self {
            allocations: None,
            bytes: Some(count),
        }
    }

    /// The same, with `count` bytes in use too.
    #[must_use]
    pub fn with_bytes(mut self, count: u64) -> Self {
        self.bytes = Some(count);
        self
    }

    /// How much more is in use now than at `before` (negative: less), in
    /// what both samples count.
    pub fn growth_since(&self, before: &MemoryInUse) -> MemoryGrowth {
        let delta = |now: Option<u64>, then: Option<u64>| {
            Some(i128::from(now?) - i128::from(then?)).map(|delta| {
                i64::try_from(delta).unwrap_or(if delta > 0 { i64::MAX } else { i64::MIN })
            })
        };
        MemoryGrowth {
            allocations: delta(self.allocations, before.allocations),
            bytes: delta(self.bytes, before.bytes),
        }
    }
}

/// The change of a device's memory in use between two samples.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct MemoryGrowth {
    /// Live allocations gained (negative: released), where counted.
    pub allocations: Option<i64>,
    /// Bytes gained (negative: released), where counted.
    pub bytes: Option<i64>,
}

impl MemoryGrowth {
    /// Whether anything counted grew.
    pub fn grew(&self) -> bool {
        self.allocations.is_some_and(|count| count > 0) || self.bytes.is_some_and(|count| count > 0)
    }
}

impl fmt::Display for MemoryGrowth {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(count) = self.allocations {
            parts.push(format!("{count:+} allocation(s)"));
        }
        if let Some(count) = self.bytes {
            parts.push(format!("{count:+} bytes"));
        }
        formatter.write_str(&parts.join(", "))
    }
}

/// Which cases run on a device at a time: a case that ran alone owns every
/// allocation made on the device while it ran, whatever the thread; one
/// that overlapped another owns only those of its own thread.
///
/// The count of cases in flight and of cases entered change together,
/// under one lock: read apart, a case entering between another's two
/// updates could leave both believing they ran alone.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    state: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Cases on the device now.
    in_flight: usize,
    /// Cases that ever entered.
    entered: u64,
}

/// A case's stay on a device ([`Activity::enter`]).
pub(crate) struct Stay {
    activity: Arc<Activity>,
    others_in_flight: bool,
    entered_at: u64,
}

impl Activity {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A case starts on the device.
    pub(crate) fn enter(self: &Arc<Self>) -> Stay {
        let mut entries = self.entries();
        let others_in_flight = entries.in_flight > 0;
        entries.in_flight += 1;
        entries.entered += 1;
        let entered_at = entries.entered;
        drop(entries);
        Stay {
            activity: Arc::clone(self),
            others_in_flight,
            entered_at,
        }
    }
}

impl Stay {
    /// Whether no other case ran on the device at any time during this
    /// one (none in flight when it started, none started since).
    pub(crate) fn alone(&self) -> bool {
        !self.others_in_flight && self.activity.entries().entered == self.entered_at
    }
}

impl Drop for Stay {
    fn drop(&mut self) {
        let mut entries = self.activity.entries();
        entries.in_flight = entries.in_flight.saturating_sub(1);
    }
}

/// One endpoint's accounting at one instant.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sample {
    /// The ledger's live allocations, where the adapter keeps a ledger.
    /// Where the ledger stood, where the adapter keeps one.
    pub(crate) ledger: Option<crate::LedgerMark>,
    /// The device's counts, where it counts and the route uses them.
    pub(crate) counts: Option<MemoryInUse>,
}

impl Sample {
    /// `endpoint`'s accounting now (counts only when `counted`).
    pub(crate) fn of(endpoint: &Endpoint, counted: bool) -> Self {
        Self {
            ledger: endpoint.ledger().map(|ledger| ledger.mark()),
            counts: if counted {
                endpoint.memory_in_use()
            } else {
                None
            },
        }
    }

    /// Whether `endpoint`'s accounting shows, now, something allocated
    /// since this sample and still live: the evidence that it sees what
    /// it must.
    pub(crate) fn shown_more_on(&self, endpoint: &Endpoint, counted: bool) -> bool {
        let ledger = match (&self.ledger, endpoint.ledger()) {
            (Some(mark), Some(ledger)) => ledger.any_opened_since(mark),
            _ => false,
        };
        let counts = match (
            &self.counts,
            counted.then(|| endpoint.memory_in_use()).flatten(),
        ) {
            (Some(then), Some(now)) => now.growth_since(then).grew(),
            _ => false,
        };
        ledger || counts
    }

    /// Whether there is any accounting to show anything.
    pub(crate) fn accounts(&self) -> bool {
        self.ledger.is_some() || self.counts.is_some()
    }
}

/// A case's leak left behind on one device.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Leak {
    /// An allocation the device's ledger lists, made during the case (on
    /// any thread, when the case ran alone on the device) and still live
    /// after its tensors were dropped.
    Allocation(LeakedAllocation),
    /// The device's count of memory in use grew over the case and stayed
    /// grown after its tensors were dropped and the device settled.
    Growth {
        /// The endpoint's name.
        endpoint: String,
        /// How much it grew.
        growth: MemoryGrowth,
    },
}

impl fmt::Display for Leak {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Leak::Allocation(leaked) => {
                write!(formatter, "{} on {}", leaked.allocation, leaked.endpoint)
            }
            Leak::Growth { endpoint, growth } => write!(
                formatter,
                "memory in use on {endpoint} grew by {growth} and stayed grown"
            ),
        }
    }
}

/// What one endpoint's accounting says of a case.
pub(crate) enum Finding {
    /// The endpoint accounts nothing.
    Silent,
    /// Checked: what was left behind (empty: nothing).
    Checked(Vec<Leak>),
    /// Its accounting cannot vouch for this case, and why.
    Unchecked(String),
}

/// What a case did on one endpoint, for [`judge_endpoint`].
pub(crate) struct CaseOnEndpoint<'a> {
    pub(crate) endpoint: &'a Endpoint,
    /// Before the case.
    pub(crate) before: &'a Sample,
    /// Whether the accounting showed the input (source) or the output
    /// (destination) while it was alive; `None`: nothing to show.
    pub(crate) saw_its_tensor: Option<bool>,
    /// The tensor it had to see, in words (`the staged input`).
    pub(crate) tensor: &'a str,
    /// The case's stay on the device, asked whether it ran alone only
    /// after the device settled and was sampled (a case that starts on
    /// another thread in between makes it not alone); `None`: a whole
    /// phase, alone by construction.
    pub(crate) stay: Option<&'a Stay>,
    /// The case's thread.
    pub(crate) thread: ThreadId,
}

impl CaseOnEndpoint<'_> {
    /// Whether no other case has run on the device during this one, up to
    /// now: asked after each sample, so that the sample belongs to it.
    fn alone(&self) -> bool {
        self.stay.is_none_or(Stay::alone)
    }
}

/// What `case`'s endpoint accounting says once the case's tensors were
/// dropped: the device is asked to settle first, then sampled once.
pub(crate) fn judge_endpoint(case: &CaseOnEndpoint<'_>, counted: bool) -> Finding {
    let endpoint = case.endpoint;
    if !case.before.accounts() {
        return Finding::Silent;
    }
    if case.saw_its_tensor == Some(false) {
        return Finding::Unchecked(format!(
            "the accounting of {} did not see {} while it was alive (no allocation listed or counted): accounting that misses it cannot vouch for no leak",
            endpoint.name(),
            case.tensor
        ));
    }
    endpoint.settle();
    if let (Some(ledger), Some(before)) = (endpoint.ledger(), &case.before.ledger) {
        let opened = ledger.opened_since(before);
        let (own, foreign): (Vec<Allocation>, Vec<Allocation>) = opened
            .into_iter()
            .partition(|allocation| allocation.thread == case.thread);
        let leaked = |allocations: Vec<Allocation>| {
            allocations
                .into_iter()
                .map(|allocation| {
                    Leak::Allocation(LeakedAllocation {
                        endpoint: endpoint.name().to_owned(),
                        allocation,
                    })
                })
                .collect::<Vec<Leak>>()
        };
        if case.alone() {
            let mut leaks = leaked(own);
            leaks.extend(leaked(foreign));
            return Finding::Checked(leaks);
        }
        if !own.is_empty() || foreign.is_empty() {
            return Finding::Checked(leaked(own));
        }
        return Finding::Unchecked(format!(
            "other calls ran on {} beside this one, and {} allocation(s) made meanwhile on other threads are still live: they cannot be told apart from this case's",
            endpoint.name(),
            foreign.len()
        ));
    }
    let (Some(before), true) = (case.before.counts, counted) else {
        return Finding::Silent;
    };
    let Some(now) = endpoint.memory_in_use() else {
        return Finding::Unchecked(format!(
            "{} stopped counting its memory in use during the case",
            endpoint.name()
        ));
    };
    if !case.alone() {
        return Finding::Unchecked(format!(
            "other calls ran on {} beside this one: its counts of memory in use cannot tell whose memory is whose (the counts over the whole phase judge them)",
            endpoint.name()
        ));
    }
    // Settled, the count is final: memory a device frees late, past
    // `settle`, shows as growth that the repetitions of the run then see
    // come back (no leak), never as a leak.
    let growth = now.growth_since(&before);
    if growth.grew() {
        Finding::Checked(vec![Leak::Growth {
            endpoint: endpoint.name().to_owned(),
            growth,
        }])
    } else {
        Finding::Checked(Vec::new())
    }
}

/// The route's verdict from its endpoints' findings: a leak anywhere is
/// checked and found; otherwise an endpoint that cannot vouch makes the
/// rule unchecked; otherwise checked, when any endpoint accounts at all.
pub(crate) fn combine(
    findings: Vec<Finding>,
    nothing_accounts: impl FnOnce() -> String,
) -> crate::LeakCheck {
    let mut leaks = Vec::new();
    let mut reasons = Vec::new();
    let mut checked = false;
    for finding in findings {
        match finding {
            Finding::Silent => {}
            Finding::Checked(found) => {
                checked = true;
                leaks.extend(found);
            }
            Finding::Unchecked(reason) => reasons.push(reason),
        }
    }
    if !leaks.is_empty() {
        return crate::LeakCheck::Checked(leaks);
    }
    if !reasons.is_empty() {
        return crate::LeakCheck::Unchecked(reasons.join("; "));
    }
    if checked {
        crate::LeakCheck::Checked(Vec::new())
    } else {
        crate::LeakCheck::Unchecked(nothing_accounts())
    }
}
