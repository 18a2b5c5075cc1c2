//! The self-test: every deliberately broken provider on every route, dtype
//! and fixed shape where its fault applies, the kill matrix of which rules
//! caught it, and the reference providers, which must show no violation.

//!
//! [`catalogue`] and [`device_faults`] declare what must be caught; [`run`]
//! exercises them and returns a [`SelfTestReport`].

mod catalogue;
mod controls;
mod devices;
mod faults;
mod report;
mod run;
mod schedule;

pub use catalogue::{
    BrokenSpec, DeviceFaultSpec, Devices, Exercised, HANG_DEADLINE, SELFTEST_DEADLINE, catalogue,
    device_faults,
};
pub use controls::{ControlSpec, controls};
pub use devices::{on_copying_kernels, on_counting_devices, on_devices};
pub use faults::install;
pub use report::{CaseCheck, ProviderRow, SelfTestReport, SkippedProvider};
pub use run::run;
pub use schedule::judge_exercised;
