//! The conformance suite for tenferro `TransferProvider` implementations:
//! whether your provider keeps the contract, rule by rule (dtype, shape,
//! buffer length, placement, residency, completion, bit-exact values,
//! typed errors, no panic or hang, no leak, what it must not change
//! besides its output), run through the real tenferro `Runtime` on your
//! own device.
//!
//! # Testing your provider
//!
//! In three steps, each in the `tests/conformance.rs` of your provider
//! crate, with everything from one import, [`adapter`]:
//!
//! 1. **Your device**: implement [`DeviceEndpoint`](adapter::DeviceEndpoint)
//!    for it: what it is, how its tenferro engine registers, a fresh
//!    engine; optionally how to stage an input on it, read an output back,
//!    see completion and count its memory in use (each left out is a rule
//!    skipped with the reason, never a pass).
//! 2. **Your suite**: a [`ProviderSuite`] names your provider's routes
//!    (from and to your device's endpoints), how to build the provider for
//!    each, what it serves ([`Capabilities`](harness::strategy::Capabilities))
//!    and the [`Level`] of the contract it keeps.
//! 3. **Your tests**: [`conformance_tests!`] expands into one `#[test]` per
//!    rule and route (`upload::values`, ...), run by `cargo test` and
//!    `cargo nextest run`; a failure names each failing case and the
//!    command that replays it.
//!
//! The guide (`docs/guide.md` in the repository) walks through a whole
//! adapter for a device with memory of its own.
//!
//! # Examples
//!
//! A device of one's own (here a second tenferro-cpu engine, under the
//! vendor's own identities), a provider into it (the built-in
//! [`HostProvider`](harness::HostProvider) stands in for yours), and the
//! suite over the route, run and read rule by rule; in a test file,
//! `conformance_tests!(level = V2, suite = suite, routes = [upload]);`
//! does the last two lines, one test per rule:
//!
//! ```
//! use std::sync::Arc;
//! use tenferro_cpu::CpuEngine;
//! use tenferro_transfer_conformance::adapter::*;
//!
//! /// Your device, as the suite sees it.
//! #[derive(Debug)]
//! struct MyCpu {
//!     description: DeviceDescription,
//! }
//!
//! impl MyCpu {
//!     fn open() -> Result<Self, HarnessError> {
//!         let id = EngineId::new("my-vendor.cpu0.v1").adapter_context("engine id")?;
//!         let class = StorageClass::new("tenferro-cpu.host.v1").adapter_context("storage class")?;
//!         let description =
//!             DeviceDescription::new("cpu0", "my-cpu", id, class, PlacementRule::Host, StorageRule::PlainHost);
//!         Ok(Self { description })
//!     }
//!     fn cpu(&self) -> CpuEngine {
//!         CpuEngine::serial().with_runtime_engine_id(self.description.engine_id.clone())
//!     }
//! }
//!
//! impl DeviceEndpoint for MyCpu {
//!     fn describe(&self) -> DeviceDescription {
//!         self.description.clone()
//!     }
//!     fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
//!         let id = &self.description.engine_id;
//!         let stock = tenferro_cpu::runtime_engine_registration_with_id(&self.cpu(), id.clone())
//!             .adapter_context("cpu0's stock registration")?;
//!         let provider = ProviderId::new("my-vendor.cpu").adapter_context("provider id")?;
//!         let identity = ProviderDeviceIdentity::new(provider, "cpu0").adapter_context("identity")?;
//!         let hardware = tenferro_cpu::runtime_hardware_class().adapter_context("hardware class")?;
//!         self.description
//!             .registration::<CpuEngine>(role, identity, hardware, stock.capabilities().clone())
//!     }
//!     fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
//!         Ok(Box::new(self.cpu()))
//!     }
//! }
//!
//! /// Your suite: one route, from the host into your device.
//! fn suite() -> ProviderSuite {
//!     ProviderSuite::new("my-upload", Level::V2)
//!         .route("upload", || Route::new(Endpoint::host("host")?, Endpoint::new(MyCpu::open()?)), |_route| {
//!             Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
//!         })
//!         .profile(Profile::Quick)
//! }
//!
//! let (suite, report) = (suite(), suite().run());
//! assert!(suite.check(&report, "upload", Rule::Values).is_pass(), "{}", report.to_table());
//! ```
//!
//! # What else is here
//!
//! The built-in providers and routes and the fixed suite over them
//! ([`run_fixed_suite`]), the self-test of deliberately broken providers
//! ([`selftest`]), generated cases ([`generated`]), concurrent calls
//! ([`concurrency`]), fuzzing your suite ([`ProviderSuite::fuzzer`]) and
//! the reports ([`Report`]: table, Markdown, JSON, JUnit, with the
//! coverage map). The command-line runner, `transfer-conformance`, is the
//! crate `tenferro-transfer-conformance-cli`, so that a provider crate's
//! dev-dependency on this one compiles no argument parser or progress
//! bar. The moving parts (rig, spy, oracle, rules) live in
//! [`tenferro_transfer_harness`]; simulated devices and broken providers
//! in [`tenferro_mock_devices`]. Both are re-exported.
//!
//! ```
//! use tenferro_transfer_conformance::{run_fixed_suite, SuiteOptions, BUILTIN_PROVIDERS};
//! use tenferro_tensor::DType;
//!
//! let report = run_fixed_suite(&BUILTIN_PROVIDERS, &SuiteOptions::quick(&[DType::F64]));
//! assert!(!report.failed(), "{}", report.to_table());
//! ```

// No function past 80 lines of code (clippy.toml); the oracle's
// rule-by-rule checks are the allowed exception, marked where they are.
#![warn(clippy::too_many_lines)]

pub mod adapter;
mod allocator;
mod builtin;
pub mod concurrency;
pub mod coverage;
#[cfg(doctest)]
pub mod doc_pages;
mod fixed_pass;
pub mod fuzzing;
pub mod generated;
mod held;
mod level;
pub mod prelude;
pub mod progress;
mod provider_suite;
pub mod record;
mod report;
mod runner;
pub mod selftest;
mod sequences;
mod shapes;
mod suite;
mod tests_macro;

pub use builtin::{
    BUILTIN_PROVIDERS, BuiltinProvider, CUDA_PROVIDERS, NativeBroken, all_builtin_providers,
    builtin_provider,
};
pub use held::STACKED_RUN_INPUTS;
pub use level::{Level, UnknownLevel};
pub use provider_suite::{
    BoxError, FuzzFailure, FuzzStats, MAX_FUZZ_CALLS, NEXTEST_RUN_ID_ENV, NO_SKIP_ENV,
    ProviderSuite, REPORT_FILE_ENV, RuleVerdict, SuiteFuzzer,
};
pub use report::{
    CaseResult, CoverageGap, KeptSummary, KindCount, Mark, Report, ReportError, ReportFormat,
    RouteCoverage, RouteMatrix, RowHead, RuleCoverage, RuleMatrix, RuleTally, RunOutcome, SETUP,
    Summary, Verdict, ViolationRow,
};
pub use shapes::{
    ABOVE_1MI_ELEMENTS, FixedShape, LARGE_ELEMENTS, fixed_shapes, size_classes, special_values_case,
};
pub use suite::{SuiteOptions, run_fixed_suite, run_fixed_suite_with_progress};
pub use tenferro_mock_devices as mock_devices;
pub use tenferro_transfer_cuda as cuda;
pub use tenferro_transfer_harness as harness;
