//! `DeviceError`: the ways a device fails, as its allocations, copies and
//! tokens report them. A provider that passes one on in its `Err`'s source
//! chain, where a fault plan injected it, has answered correctly (an
//! expected error, not a violation).

/// A failure of a device, as its allocations, copies and tokens report it:
/// the vocabulary the simulated devices fail in, and that any device's
/// adapter may use.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The fault plan ran the device out of memory.
    #[error("{device}: out of memory at allocation {allocation} ({bytes} bytes requested)")]
    OutOfMemory {
        /// The device.
        device: String,
        /// The failing allocation's number since the plan was installed.
        allocation: u64,
        /// Bytes requested.
        bytes: usize,
    },
    /// The device is lost: every operation after the loss fails.
    #[error("{device}: device lost after {operations} operations")]
    DeviceLost {
        /// The device.
        device: String,
        /// Operations it served before it was lost.
        operations: u64,
    },
    /// A copy failed part-way.
    #[error("{device}: copy #{copy} failed after {written} of {bytes} bytes")]
    CopyFailed {
        /// The device.
        device: String,
        /// The copy's number.
        copy: u64,
        /// Bytes written before the failure.
        written: usize,
        /// Bytes the copy should have written.
        bytes: usize,
    },
    /// A held copy was abandoned by the harness (its watchdog gave up).
    #[error("{device}: copy #{copy} was abandoned before it completed")]
    Abandoned {
        /// The device.
        device: String,
        /// The copy's number.
        copy: u64,
    },
}
