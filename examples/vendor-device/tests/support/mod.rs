//! The vendor device as the conformance suite sees it: an adapter of the
//! suite's `DeviceEndpoint` trait, and the suites declared over it.
//! Test-side code, so the crate itself does not depend on the suite; the
//! fuzz target (`fuzz/fuzz_targets/transfer_contract.rs`) includes this
//! file too.
//!
//! The adapter is in three parts: the device's identity and engine (what
//! every route needs), the device as a source (`stage`), and its memory
//! accounting (`memory_in_use`, `settle`, and the ledger where the adapter
//! keeps one).

#![allow(dead_code)] // Each test target uses part of it.

use std::any::Any;
use std::sync::Arc;

use example_vendor_device::{
    AllocationObserver, CopyState, EarlyReturnUpload, MAX_ELEMENTS, VENDOR_FAMILY, VendorDevice,
    VendorDownload, VendorError, VendorUpload,
};
use tenferro_runtime::{EngineId, EngineRegistration, ExecutionEngine, StorageClass};
use tenferro_tensor::{AllocationDomainId, Tensor, TensorRead};
use tenferro_transfer_conformance::harness::{
    AllocationLedger, Case, CompletionState, DeviceEndpoint, EngineRole, HarnessError, MemoryInUse,
    PlacementRule, StorageRule, stage_via_host,
};
use tenferro_transfer_conformance::prelude::{
    Capabilities, Endpoint, Level, Profile, ProviderSuite, Report, Route, Rule, RuleVerdict,
    TransferProvider,
};

/// Device kind of the vendor's devices in `TRANSFER_CONFORMANCE_REQUIRE_DEVICES`.
pub const KIND: &str = "vendor-npu";

/// The level the crate pins.
pub const LEVEL: Level = Level::V2;

/// A [`VendorDevice`] as a route endpoint, a source or a destination.
#[derive(Debug)]
pub struct VendorEndpoint {
    device: VendorDevice,
    /// Every allocation, as the harness's ledger lists them: the precise
    /// mode of `no-leak`. `None`: the device's counts only, as a real
    /// device reports its memory.
    ledger: Option<Arc<AllocationLedger>>,
}

impl VendorEndpoint {
    /// Open device `npu<ordinal>`, counted and listed in a ledger.
    pub fn open(ordinal: usize) -> Result<Self, HarnessError> {
        let device = VendorDevice::open(ordinal).map_err(setup)?;
        Ok(Self::over(device))
    }

    /// Open device `npu<ordinal>`, accounted by its counts of memory in
    /// use only (no ledger), as real devices report their memory.
    pub fn counting_only(ordinal: usize) -> Result<Self, HarnessError> {
        let device = VendorDevice::open(ordinal).map_err(setup)?;
        Ok(Self {
            device,
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

    /// The device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

fn setup(error: VendorError) -> HarnessError {
    HarnessError::adapter("opening the vendor device", error)
}

/// Writes every device allocation into the harness's ledger, on the thread
/// that allocates or frees (the device calls the observer there), so the
/// rig attributes each allocation to the case that made it.
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

impl DeviceEndpoint for VendorEndpoint {
    fn name(&self) -> &str {
        self.device.name()
    }

    fn kind(&self) -> &str {
        KIND
    }

    fn engine_id(&self) -> &EngineId {
        self.device.engine_id()
    }

    fn storage_class(&self) -> Result<StorageClass, HarnessError> {
        Ok(self.device.storage_class().clone())
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let role = match role {
            EngineRole::Source => example_vendor_device::EngineRole::Source,
            _ => example_vendor_device::EngineRole::Destination,
        };
        self.device
            .registration(role)
            .map_err(|source| HarnessError::Config {
                context: format!("registration of `{}`", self.device.name()),
                source: Box::new(source),
            })
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(self.device.engine()))
    }

    fn placement_rule(&self) -> PlacementRule {
        PlacementRule::Device(self.device.device_id())
    }

    fn storage_rule(&self) -> StorageRule {
        StorageRule::Domain {
            family: VENDOR_FAMILY,
            domain: self.device.allocation_domain(),
        }
    }

    /// The device as a source: the case's values (a view's whole backing)
    /// are uploaded into device memory, and tenferro carves a view of it
    /// where the case is one.
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        stage_via_host(
            case,
            |host| {
                self.device
                    .upload(&TensorRead::from_tensor(&host))
                    .map_err(|source| HarnessError::Stage { source })
            },
            use_input,
        )
    }

    /// The device knows, per allocation, whether the copy into it landed.
    fn completion(&self, tensor: &Tensor) -> CompletionState {
        match self.device.copy_state(tensor) {
            Some(CopyState::Landed) => CompletionState::Complete,
            Some(CopyState::InFlight { copy }) => CompletionState::Pending {
                detail: format!("copy #{copy} on {} had not landed", self.device.name()),
            },
            Some(other) => CompletionState::Unknown {
                reason: format!(
                    "the device reports a copy state this adapter does not know: {other:?}"
                ),
            },
            None => CompletionState::Unknown {
                reason: format!(
                    "the output is not in {}'s memory, so its completion cannot be observed",
                    self.device.name()
                ),
            },
        }
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        self.ledger.clone()
    }

    /// What the device has in use now: live allocations and bytes.
    fn memory_in_use(&self) -> Option<MemoryInUse> {
        Some(
            MemoryInUse::allocations(self.device.live_allocations())
                .with_bytes(self.device.bytes_in_use()),
        )
    }

    /// The device frees an allocation once the copies into it are done:
    /// wait for them.
    fn settle(&self) {
        self.device.synchronize();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Host (tenferro-cpu) to a fresh vendor device `npu0`, listed in a ledger.
pub fn upload_route() -> Result<Route, HarnessError> {
    Route::new(
        Endpoint::host("host")?,
        Endpoint::new(VendorEndpoint::open(0)?),
    )
}

/// A fresh vendor device `npu0`, listed in a ledger, to the host.
pub fn download_route() -> Result<Route, HarnessError> {
    Route::new(
        Endpoint::new(VendorEndpoint::open(0)?),
        Endpoint::host("host")?,
    )
}

/// Host to a fresh vendor device `npu0` that only counts its memory.
pub fn counting_upload_route() -> Result<Route, HarnessError> {
    Route::new(
        Endpoint::host("host")?,
        Endpoint::new(VendorEndpoint::counting_only(0)?),
    )
}

/// How a test builds a provider on the route's vendor device.
pub type MakeProvider = fn(VendorDevice) -> Arc<dyn TransferProvider>;

/// The vendor device behind `endpoint`, for a provider factory.
fn device_of(endpoint: &Endpoint) -> Result<VendorDevice, String> {
    endpoint
        .downcast::<VendorEndpoint>()
        .map(|endpoint| endpoint.device().clone())
        .ok_or_else(|| format!("{} is not a vendor device", endpoint.name()))
}

/// An empty suite of the crate's level, profile and capabilities.
pub fn suite_named(name: &str) -> ProviderSuite {
    ProviderSuite::new(name, LEVEL)
        .capabilities(Capabilities::all().max_elements(MAX_ELEMENTS))
        .profile(Profile::Quick)
}

/// `suite` with route `upload`: `route` builds it, `make` the provider on
/// its destination.
pub fn with_upload(
    suite: ProviderSuite,
    route: fn() -> Result<Route, HarnessError>,
    make: MakeProvider,
) -> ProviderSuite {
    suite.route("upload", route, move |route| {
        Ok(make(device_of(route.destination())?))
    })
}

/// `suite` with route `download`: `make` builds the provider on the
/// route's source.
pub fn with_download(suite: ProviderSuite, make: MakeProvider) -> ProviderSuite {
    suite.route("download", download_route, move |route| {
        Ok(make(device_of(route.source())?))
    })
}

/// The suite of the upload `make` builds, on route `upload` alone.
pub fn upload_suite(name: &str, make: MakeProvider) -> ProviderSuite {
    with_upload(suite_named(name), upload_route, make)
}

fn vendor_upload(device: VendorDevice) -> Arc<dyn TransferProvider> {
    Arc::new(VendorUpload::new(device))
}

fn vendor_download(device: VendorDevice) -> Arc<dyn TransferProvider> {
    Arc::new(VendorDownload::new(device))
}

/// The suite of the correct providers: `VendorUpload` and `VendorDownload`.
pub fn correct_suite() -> ProviderSuite {
    let suite = with_upload(suite_named("vendor"), upload_route, vendor_upload);
    with_download(suite, vendor_download)
}

/// The suite whose upload returns before its copy lands (its download is
/// the correct one).
pub fn broken_suite() -> ProviderSuite {
    let suite = with_upload(suite_named("early-return"), upload_route, |device| {
        Arc::new(EarlyReturnUpload::new(device))
    });
    with_download(suite, vendor_download).seed(1)
}

/// The suite the tests (and the fuzz target) run: the broken upload with
/// the `demonstrate-failure` feature, the correct one without.
pub fn suite() -> ProviderSuite {
    if cfg!(feature = "demonstrate-failure") {
        broken_suite()
    } else {
        correct_suite()
    }
}

/// Every rule of the crate's level with its verdict on `route`.
pub fn verdicts(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<(Rule, RuleVerdict)> {
    LEVEL
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(report, route, *rule)))
        .collect()
}

/// The rules of the crate's level that fail on `route`, after printing
/// every verdict (shown when a test fails).
pub fn failing(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<Rule> {
    let mut failing = Vec::new();
    for (rule, verdict) in verdicts(suite, report, route) {
        match &verdict {
            RuleVerdict::Pass { cases } => {
                eprintln!("{route}::{:<20} pass ({cases} cases)", rule.id());
            }
            RuleVerdict::Skip(reason) => eprintln!("{route}::{:<20} skip: {reason}", rule.id()),
            other => {
                eprintln!("{route}::{:<20} {}", rule.id(), other.verdict_name());
                failing.push(rule);
            }
        }
    }
    failing
}

/// The rules of the crate's level that were not checked on `route`.
pub fn skipped(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<Rule> {
    verdicts(suite, report, route)
        .into_iter()
        .filter(|(_, verdict)| matches!(verdict, RuleVerdict::Skip(_)))
        .map(|(rule, _)| rule)
        .collect()
}
