//! The conformance suite for tenferro `TransferProvider` implementations:
//! built-in providers and routes, the fixed suite, the self-test of
//! deliberately broken providers, and the reports. The command-line runner,
//! `transfer-conformance`, is the crate `tenferro-transfer-conformance-cli`,
//! so that a provider crate's dev-dependency on this one compiles no
//! argument parser or progress bar.
//!
//! The moving parts (rig, spy, oracle, rules) live in
//! [`tenferro_transfer_harness`]; simulated devices and broken providers in
//! [`tenferro_mock_devices`]. Both are re-exported.
//!
//! # Examples
//!
//! ```
//! use tenferro_transfer_conformance::{run_fixed_suite, SuiteOptions, BUILTIN_PROVIDERS};
//! use tenferro_tensor::DType;
//!
//! let report = run_fixed_suite(&BUILTIN_PROVIDERS, &SuiteOptions::quick(&[DType::F64]));
//! assert!(!report.failed(), "{}", report.to_table());
//! ```

pub mod adapter;
mod builtin;
pub mod concurrency;
pub mod coverage;
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
pub use tenferro_transfer_harness as harness;
