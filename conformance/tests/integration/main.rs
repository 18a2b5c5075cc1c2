//! The conformance crate's integration tests, one binary: each file of this
//! folder is a module, so `cargo test --workspace` links tenferro once for
//! them all instead of once per file. Run one file's tests with its module
//! path: `cargo test -p tenferro-transfer-conformance --test integration hang::`.
//!
//! Tests that read the repository's files (`docs/`, `snapshots.rs`,
//! `fuzz_regressions.rs`) are binaries of their own, left out of the
//! published package; so are `generated.rs` (the replay command the docs
//! print names it: `cargo test --test generated`) and `cuda.rs` (the GPU
//! check runs it alone).

#[path = "../support/mod.rs"]
mod support;

mod backing_cache;
mod bounded_caches;
mod broadcast_views;
mod builtin_suites;
mod capabilities;
mod concurrent_reuse;
mod declared_limits;
mod download_leak;
mod draining_reads;
mod edges;
mod equal_as_numbers;
mod failure_invariant;
mod generated_values;
mod hang;
mod hostile_outputs;
mod in_order_stream;
mod input_in_flight;
mod lazy_kernels;
mod offset_plans;
mod phase_memory;
mod plain_host;
mod pressure;
mod provider_suite;
mod quarantine;
mod queued_kernels;
mod queued_stage;
mod replaced_provider;
mod replay;
mod report_renderings;
mod reused_block_copy;
mod rig;
mod route_selection;
mod run_length;
mod shape_specialised_plans;
mod size_classes;
mod slow_filling_cache;
mod staging_ring;
mod state_dependent;
mod suite;
mod suite_fuzzer;
mod unavailable_devices;
mod unchecked_rules;
mod verdicts_agree;
mod zero_skipping;
