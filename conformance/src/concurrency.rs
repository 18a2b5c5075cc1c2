//! One provider instance driven from several threads at once, each thread
//! with its own runtime: values must not cross between cases, no case may
//! leak, and three repeats of the same concurrent set must give identical
//! verdicts.

use std::sync::Arc;

use serde::Serialize;
use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_mock_devices::providers::Fault;
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{Case, HarnessError, Layout, Oracle, Rig, Route, Rule};

use crate::BuiltinProvider;
use crate::suite::provider_for;

/// How hard to push one provider instance.
#[derive(Clone, Debug)]
pub struct ConcurrencyOptions {
    /// Threads, each with its own runtime.
    pub threads: usize,
    /// Cases each thread runs per repeat.
    pub cases_per_thread: usize,
    /// How many times the whole concurrent set runs.
    pub repeats: usize,
    /// Faults injected into the shared provider.
    pub inject: Vec<Fault>,
}

impl Default for ConcurrencyOptions {
    fn default() -> Self {
        Self {
            threads: 4,
            cases_per_thread: 24,
            repeats: 3,
            inject: Vec::new(),
        }
    }
}

/// What one concurrent run found.
#[derive(Clone, Debug, Serialize)]
pub struct ConcurrencyReport {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Threads.
    pub threads: usize,
    /// Cases judged over all threads and repeats.
    pub cases: usize,
    /// The first few violations, with their thread and case.
    pub failures: Vec<String>,
    /// Whether every repeat gave the same verdicts, case by case.
    pub identical_repeats: bool,
}

impl ConcurrencyReport {
    /// No violation, and identical verdicts on every repeat.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.identical_repeats
    }
}

/// The case thread `thread` runs at position `index`: distinct values on
/// every thread, so a value that crosses between cases shows.
fn case_for(thread: usize, index: usize) -> Result<Case, HarnessError> {
    let shapes: [&[usize]; 4] = [&[5, 3], &[17], &[2, 3, 4], &[]];
    let dtype = PRESET_DTYPES[(thread + index) % PRESET_DTYPES.len()];
    Recipe {
        dtype: format!("{dtype:?}"),
        shape: shapes[index % shapes.len()].to_vec(),
        layout: Layout::Owned,
        seed: (thread as u64) << 32 | index as u64,
        specials: 64,
    }
    .case()
}

type Verdicts = Vec<Vec<Vec<Rule>>>;

/// Drive one instance of `builtin` from `options.threads` threads at once.
///
/// # Errors
///
/// A setup error when the route, provider or a thread's rig cannot be
/// built, or a case cannot be run.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::builtin_provider;
/// use tenferro_transfer_conformance::concurrency::{run_concurrent, ConcurrencyOptions};
///
/// let options = ConcurrencyOptions { threads: 2, cases_per_thread: 4, ..ConcurrencyOptions::default() };
/// let report = run_concurrent(builtin_provider("sim-peer").unwrap(), &options).unwrap();
/// assert!(report.passed(), "{report:?}");
/// ```
pub fn run_concurrent(
    builtin: &BuiltinProvider,
    options: &ConcurrencyOptions,
) -> Result<ConcurrencyReport, HarnessError> {
    let route = builtin.route()?;
    let provider = provider_for(builtin, &route, &options.inject)?;
    let mut failures = Vec::new();
    let mut repeats: Vec<Verdicts> = Vec::new();
    for repeat in 0..options.repeats {
        let verdicts = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..options.threads)
                .map(|thread| {
                    let (route, provider) = (route.clone(), Arc::clone(&provider));
                    scope.spawn(move || {
                        run_thread(route, provider, thread, options.cases_per_thread)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker.join().unwrap_or_else(|_| {
                        Err(HarnessError::Runtime {
                            context: "a concurrency thread".to_owned(),
                            message: "panicked".to_owned(),
                        })
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        for (thread, cases) in verdicts.iter().enumerate() {
            for (index, (rules, message)) in cases.iter().enumerate() {
                if !rules.is_empty() && failures.len() < 5 {
                    failures.push(format!(
                        "repeat {repeat}, thread {thread}, case {index}: {message}"
                    ));
                }
            }
        }
        repeats.push(
            verdicts
                .into_iter()
                .map(|cases| cases.into_iter().map(|(rules, _)| rules).collect())
                .collect(),
        );
    }
    let identical_repeats = repeats.windows(2).all(|pair| pair[0] == pair[1]);
    Ok(ConcurrencyReport {
        provider: builtin.name.to_owned(),
        route: route.label(),
        threads: options.threads,
        cases: options.threads * options.cases_per_thread * options.repeats,
        failures,
        identical_repeats,
    })
}

/// One thread's cases through its own runtime: (rules broken, first
/// message) per case.
fn run_thread(
    route: Route,
    provider: Arc<dyn tenferro_runtime::TransferProvider>,
    thread: usize,
    cases: usize,
) -> Result<Vec<(Vec<Rule>, String)>, HarnessError> {
    let mut rig = Rig::new(route.clone(), provider)?;
    (0..cases)
        .map(|index| {
            let case = case_for(thread, index)?;
            let judgement = Oracle.judge(&case, &route, &rig.run(&case)?);
            let message = judgement
                .violations
                .first()
                .map(|violation| format!("{}: {}", violation.rule, violation.message))
                .unwrap_or_default();
            Ok((judgement.rules(), message))
        })
        .collect()
}
