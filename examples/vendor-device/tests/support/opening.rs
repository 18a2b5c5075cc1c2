//! Opening a vendor device as an endpoint: counted only, as real devices
//! are, or also listed in the harness's ledger, the precise mode of
//! `no-leak`. The device tells an observer of every allocation on the
//! thread that makes or frees it, so the rig attributes each allocation to
//! the case that made it and names a leaked one.

use std::sync::Arc;

use example_vendor_device::{AllocationObserver, VendorDevice};
use tenferro_transfer_conformance::adapter::*;

use super::VendorEndpoint;

impl VendorEndpoint {
    /// Open device `npu<ordinal>`, counted and listed in a ledger.
    pub fn open(ordinal: usize) -> Result<Self, HarnessError> {
        Ok(Self::over(Self::counting_only(ordinal)?.device))
    }

    /// Device `npu<ordinal>`, accounted by its counts of memory in use.
    pub fn counting_only(ordinal: usize) -> Result<Self, HarnessError> {
        Ok(Self {
            device: VendorDevice::open(ordinal).adapter_context("opening the device")?,
            ledger: None,
        })
    }

    /// List `device`'s allocations in a ledger from now on.
    pub fn over(device: VendorDevice) -> Self {
        let ledger = Arc::new(AllocationLedger::default());
        device.set_allocation_observer(Arc::new(LedgerObserver {
            ledger: Arc::clone(&ledger),
            domain: device.allocation_domain(),
        }));
        Self {
            device,
            ledger: Some(ledger),
        }
    }
}

/// Writes the device's allocations into the ledger.
struct LedgerObserver {
    ledger: Arc<AllocationLedger>,
    domain: AllocationDomainId,
}

impl AllocationObserver for LedgerObserver {
    fn allocated(&self, id: u64, bytes: usize) {
        self.ledger.open(id, self.domain, bytes);
    }

    fn freed(&self, id: u64) {
        self.ledger.close(id);
    }
}
