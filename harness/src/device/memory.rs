//! What a device says of its memory and who is on it: its own counts of
//! memory in use ([`MemoryInUse`], what real devices expose), their growth
//! over a case, and which cases ran on it at a time ([`Activity`]).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

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
