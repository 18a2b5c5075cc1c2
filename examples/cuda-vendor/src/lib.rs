//! An example CUDA provider crate, written the way a CUDA vendor writes its
//! first one: thin wrappers around tenferro-gpu 0.9's own transfer helpers
//! (`upload_tensor`, `download_tensor`).
//!
//! - `VendorUpload`: host (tenferro-cpu) to CUDA. `upload_tensor` only
//!   enqueues the copy, so it then waits (`CudaRuntime::synchronize`).
//! - `VendorDownload`: CUDA to host. `download_tensor` waits by itself.
//! - `NaiveUpload`: the upload a vendor writes first, returning right
//!   after `upload_tensor`, before the copy has landed. The conformance
//!   suite's `completion` rule exists for exactly this bug.
//!
//! Everything is behind the `cuda` feature (tenferro-gpu's CUDA support);
//! without it the crate is empty and its tests say how to enable it. The
//! tests (`tests/conformance.rs`, `tests/naive_upload.rs`) run the
//! conformance suite with `cargo test --features cuda`: on a GPU every rule
//! is checked, without one every rule test is a visible skip, and
//! `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1` turns the skips into failures.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// How to build this crate's providers: they need the `cuda` feature.
pub const ENABLE_CUDA: &str = "build with `--features cuda` (cargo test --features cuda)";

#[cfg(feature = "cuda")]
mod providers;

#[cfg(feature = "cuda")]
pub use providers::{NaiveUpload, RuntimeSource, VendorDownload, VendorError, VendorUpload};
