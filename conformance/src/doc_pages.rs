//! The README's and docs/ pages' Rust blocks, compiled as doctests by
//! `cargo test --workspace` (only then: the module exists under
//! `cfg(doctest)` alone), so that a page cannot drift from the code
//! silently. A block that cannot compile here (a whole file quoted from an
//! example crate, a fragment, a macro call that expands into tests) is
//! fenced `rust,ignore` with the reason in the prose just before it; the
//! test `every_rust_block_of_the_pages_compiles_or_says_why_not` keeps
//! both true, and this list whole.

#[doc = include_str!("../../README.md")]
pub struct Readme;

#[doc = include_str!("../README.md")]
pub struct ConformanceReadme;

#[doc = include_str!("../../cli/README.md")]
pub struct CliReadme;

#[doc = include_str!("../../docs/architecture.md")]
pub struct Architecture;

#[doc = include_str!("../../docs/contract.md")]
pub struct Contract;

#[doc = include_str!("../../docs/cuda.md")]
pub struct Cuda;

#[doc = include_str!("../../docs/fuzzing.md")]
pub struct Fuzzing;

#[doc = include_str!("../../docs/glossary.md")]
pub struct Glossary;

#[doc = include_str!("../../docs/guide.md")]
pub struct Guide;

#[doc = include_str!("../../docs/performance.md")]
pub struct Performance;

#[doc = include_str!("../../docs/report-format.md")]
pub struct ReportFormat;

#[doc = include_str!("../../docs/settings.md")]
pub struct Settings;
