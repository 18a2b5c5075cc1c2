//! How a case's memory is accounted for `no-leak`: a device's own counts
//! of memory in use ([`MemoryInUse`], what real devices expose), or the
//! per-allocation ledger; which calls ran beside a case on a device
//! ([`Activity`]); and the evidence that the accounting sees what it must
//! (an input staged on the device, an output returned into it) before its
//! silence counts as "no leak".

use std::fmt;

use std::thread::ThreadId;

use crate::Allocation;

use crate::{Endpoint, LeakedAllocation};

mod kept;
mod phase;

pub use kept::KeptMemory;
pub(crate) use kept::{Repetition, kept_or_leaked, phase_kept_or_leaked};
pub use phase::{PhaseEvidence, PhaseMemory};

use crate::device::memory::Stay;
use crate::{MemoryGrowth, MemoryInUse};

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
    #[non_exhaustive]
    Growth {
        /// The endpoint's name.
        endpoint: String,
        /// How much it grew.
        growth: MemoryGrowth,
        /// Where the memory in use stood, from where it was before the
        /// case, after each repetition of the case that judged it (empty:
        /// not repeated), so a failure shows how it rose.
        repeated: Vec<MemoryGrowth>,
    },
}

impl Leak {
    /// A device's count of memory in use that grew by `growth` on
    /// `endpoint`, not repeated.
    pub fn growth(endpoint: impl Into<String>, growth: MemoryGrowth) -> Self {
        Leak::Growth {
            endpoint: endpoint.into(),
            growth,
            repeated: Vec::new(),
        }
    }
}

impl fmt::Display for Leak {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Leak::Allocation(leaked) => {
                write!(formatter, "{} on {}", leaked.allocation, leaked.endpoint)
            }
            Leak::Growth {
                endpoint, growth, ..
            } => write!(
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
        Finding::Checked(vec![Leak::growth(endpoint.name(), growth)])
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
