//! Fault plans: the ways a simulated device fails, on a schedule a test
//! chooses, and the typed errors it fails with.

use std::fmt;
use std::time::Duration;

/// When a simulated device fails, and how. Counters start when the plan is
/// installed with [`crate::SimDevice::install_faults`]; numbers are 1-based.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tenferro_mock_devices::FaultPlan;
///
/// let plan = FaultPlan::new()
///     .out_of_memory_at(3)
///     .latency_spike(1, Duration::from_millis(5));
/// assert_eq!(plan.to_string(), "out-of-memory at allocation 3, latency spike of 5ms on copy 1");
/// assert!(FaultPlan::new().is_empty());
/// ```
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct FaultPlan {
    pub(crate) out_of_memory_at: Option<u64>,
    pub(crate) lost_after: Option<u64>,
    pub(crate) copy_error: Option<(u64, usize)>,
    pub(crate) partial_copy: Option<(u64, usize)>,
    pub(crate) latency_spike: Option<(u64, Duration)>,
    pub(crate) never_complete: Option<u64>,
}

impl FaultPlan {
    /// A plan with no faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allocation number `k` fails with [`DeviceError::OutOfMemory`](crate::DeviceError::OutOfMemory).
    pub fn out_of_memory_at(mut self, k: u64) -> Self {
        self.out_of_memory_at = Some(k);
        self
    }

    /// After `n` operations (allocations and copies) the device is lost:
    /// every later operation, and every copy still pending, fails with
    /// [`DeviceError::DeviceLost`](crate::DeviceError::DeviceLost).
    pub fn device_lost_after(mut self, n: u64) -> Self {
        self.lost_after = Some(n);
        self
    }

    /// Copy number `k` writes `bytes` bytes, then fails with
    /// [`DeviceError::CopyFailed`](crate::DeviceError::CopyFailed).
    pub fn copy_error_after(mut self, k: u64, bytes: usize) -> Self {
        self.copy_error = Some((k, bytes));
        self
    }

    /// Copy number `k` silently writes only its first `bytes` bytes and
    /// reports success: the rest of the destination keeps its poison.
    pub fn partial_copy(mut self, k: u64, bytes: usize) -> Self {
        self.partial_copy = Some((k, bytes));
        self
    }

    /// Copy number `k` completes `delay` later than it would.
    pub fn latency_spike(mut self, k: u64, delay: Duration) -> Self {
        self.latency_spike = Some((k, delay));
        self
    }

    /// Copy number `k` never completes: waiting on it blocks until the
    /// harness abandons the waiting thread. It holds up only its own
    /// waiters: a wait on a later copy of its stream lands that copy.
    pub fn never_complete(mut self, k: u64) -> Self {
        self.never_complete = Some(k);
        self
    }

    /// Whether the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether a copy may never complete under this plan, so a case that
    /// meets it needs a short deadline.
    pub fn stalls(&self) -> bool {
        self.never_complete.is_some()
    }

    /// Whether a provider that meets this plan should fail with an `Err`
    /// (the device reports an error it must pass on).
    pub fn fails_loudly(&self) -> bool {
        self.out_of_memory_at.is_some() || self.lost_after.is_some() || self.copy_error.is_some()
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(k) = self.out_of_memory_at {
            parts.push(format!("out-of-memory at allocation {k}"));
        }
        if let Some(n) = self.lost_after {
            parts.push(format!("device lost after {n} operations"));
        }
        if let Some((k, bytes)) = self.copy_error {
            parts.push(format!("copy {k} fails after {bytes} bytes"));
        }
        if let Some((k, bytes)) = self.partial_copy {
            parts.push(format!("copy {k} silently writes only {bytes} bytes"));
        }
        if let Some((k, delay)) = self.latency_spike {
            parts.push(format!("latency spike of {delay:?} on copy {k}"));
        }
        if let Some(k) = self.never_complete {
            parts.push(format!("copy {k} never completes"));
        }
        if parts.is_empty() {
            formatter.write_str("no faults")
        } else {
            formatter.write_str(&parts.join(", "))
        }
    }
}
