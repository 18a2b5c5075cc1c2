//! `AllocationLedger`: every live simulated allocation, by id, domain and
//! size, so that a leak is a list a test can read rather than a guess.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::ThreadId;

use tenferro_tensor::AllocationDomainId;

/// One live allocation of a ledger.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Allocation {
    /// Process-unique allocation id.
    pub id: u64,
    /// The allocation domain it belongs to.
    pub domain: AllocationDomainId,
    /// Its size in bytes.
    pub bytes: usize,
    /// The thread that made it: a case's allocations are told apart from
    /// those of cases running at the same time on other threads.
    pub thread: ThreadId,
}

impl fmt::Display for Allocation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "allocation #{} of {} bytes in {:?}",
            self.id, self.bytes, self.domain
        )
    }
}

/// Counts and lists the live allocations of one device: its adapter opens
/// an entry when the device allocates and closes it when it frees
/// ([`DeviceEndpoint::allocation_ledger`](crate::DeviceEndpoint::allocation_ledger)).
///
/// # Examples
///
/// ```
/// use tenferro_tensor::AllocationDomainId;
/// use tenferro_transfer_harness::AllocationLedger;
///
/// let ledger = AllocationLedger::default();
/// ledger.open(1, AllocationDomainId::fresh(), 32);
/// let live = ledger.live_allocations();
/// assert_eq!(live.len(), 1);
/// assert_eq!(live[0].bytes, 32);
/// ledger.close(1);
/// assert!(ledger.live_allocations().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct AllocationLedger {
    live: Mutex<Live>,
    total: AtomicUsize,
}

/// The live allocations, by id and by the order they were opened in.
#[derive(Debug, Default)]
struct Live {
    /// Each live allocation, with its place in the opening order.
    by_id: BTreeMap<u64, (u64, Allocation)>,
    /// The live allocations' ids, by their place in the opening order.
    by_order: BTreeMap<u64, u64>,
    /// The place of the next allocation opened.
    next: u64,
    /// Bytes held by the live allocations.
    bytes: usize,
}

/// Where a ledger stood at one instant ([`AllocationLedger::mark`]).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct LedgerMark {
    next: u64,
    live: usize,
}

impl LedgerMark {
    /// The allocations live at that instant.
    pub fn live(&self) -> usize {
        self.live
    }
}

impl AllocationLedger {
    /// Allocations made and not yet dropped.
    pub fn live(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Bytes held by live allocations.
    pub fn live_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Live allocations and the bytes they hold, read at one instant (what
    /// a device's memory counters report).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::AllocationLedger;
    /// use tenferro_tensor::AllocationDomainId;
    ///
    /// let ledger = AllocationLedger::default();
    /// ledger.open(1, AllocationDomainId::fresh(), 64);
    /// ledger.open(2, AllocationDomainId::fresh(), 16);
    /// assert_eq!(ledger.in_use(), (2, 80));
    /// ```
    pub fn in_use(&self) -> (usize, usize) {
        let live = self.lock();
        (live.by_id.len(), live.bytes)
    }

    /// Allocations ever made.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    /// Every live allocation, oldest first.
    pub fn live_allocations(&self) -> Vec<Allocation> {
        let live = self.lock();
        live.by_order
            .values()
            .filter_map(|id| live.by_id.get(id).map(|(_, allocation)| allocation.clone()))
            .collect()
    }

    /// Where the ledger stands now: allocations opened later are
    /// [`Self::opened_since`] it.
    pub fn mark(&self) -> LedgerMark {
        let live = self.lock();
        LedgerMark {
            next: live.next,
            live: live.by_id.len(),
        }
    }

    /// The allocations opened after `mark` and still live, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::AllocationDomainId;
    /// use tenferro_transfer_harness::AllocationLedger;
    ///
    /// let ledger = AllocationLedger::default();
    /// ledger.open(1, AllocationDomainId::fresh(), 8);
    /// let mark = ledger.mark();
    /// ledger.open(2, AllocationDomainId::fresh(), 16);
    /// ledger.open(3, AllocationDomainId::fresh(), 32);
    /// ledger.close(2);
    /// let since: Vec<u64> = ledger.opened_since(&mark).iter().map(|allocation| allocation.id).collect();
    /// assert_eq!(since, vec![3]);
    /// assert_eq!(mark.live(), 1);
    /// ```
    pub fn opened_since(&self, mark: &LedgerMark) -> Vec<Allocation> {
        let live = self.lock();
        live.by_order
            .range(mark.next..)
            .filter_map(|(_, id)| live.by_id.get(id).map(|(_, allocation)| allocation.clone()))
            .collect()
    }

    /// Whether an allocation opened after `mark` is still live.
    pub fn any_opened_since(&self, mark: &LedgerMark) -> bool {
        self.lock().by_order.range(mark.next..).next().is_some()
    }

    /// The ids of the live allocations made by `thread`.
    pub fn live_ids_of(&self, thread: ThreadId) -> Vec<u64> {
        self.lock()
            .by_id
            .values()
            .filter(|(_, allocation)| allocation.thread == thread)
            .map(|(_, allocation)| allocation.id)
            .collect()
    }

    /// Record allocation `id` (unique in this ledger) of `bytes` in
    /// `domain`, made by the calling thread: a device's adapter calls this
    /// when its memory allocates, on the allocating thread, so `no-leak`
    /// can tell which case made it.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::AllocationLedger;
    /// use tenferro_tensor::AllocationDomainId;
    ///
    /// let ledger = AllocationLedger::default();
    /// ledger.open(7, AllocationDomainId::fresh(), 64);
    /// assert_eq!(ledger.live_ids_of(std::thread::current().id()), vec![7]);
    /// ledger.close(7);
    /// assert_eq!(ledger.live(), 0);
    /// ```
    pub fn open(&self, id: u64, domain: AllocationDomainId, bytes: usize) {
        self.total.fetch_add(1, Ordering::SeqCst);
        let mut live = self.lock();
        let order = live.next;
        live.next += 1;
        let allocation = Allocation {
            id,
            domain,
            bytes,
            thread: std::thread::current().id(),
        };
        live.bytes += bytes;
        if let Some((earlier, replaced)) = live.by_id.insert(id, (order, allocation)) {
            live.by_order.remove(&earlier);
            live.bytes = live.bytes.saturating_sub(replaced.bytes);
        }
        live.by_order.insert(order, id);
    }

    /// Record that allocation `id` was freed (unknown ids are ignored).
    pub fn close(&self, id: u64) {
        let mut live = self.lock();
        if let Some((order, allocation)) = live.by_id.remove(&id) {
            live.by_order.remove(&order);
            live.bytes = live.bytes.saturating_sub(allocation.bytes);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
