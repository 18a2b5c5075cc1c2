//! Running the fixed suite against the built-in providers.

use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_harness::{
    Case, DEFAULT_DEADLINE, HarnessError, Route, Rule, Watchdog, describe_error,
};

use crate::fixed_pass::FixedPass;
use crate::progress::Progress;
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{CaseResult, Report, RowHead};
use crate::runner::into_record;
use crate::shapes::FixedShape;
use crate::{BuiltinProvider, fixed_shapes};

/// What the fixed suite runs.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// Dtypes to run (all seven by default).
    pub dtypes: Vec<DType>,
    /// Whether to include the million-element shape (yes by default).
    pub include_large: bool,
    /// Faults to inject into every provider (none by default): a way to see
    /// what a failing provider looks like.
    pub inject: Vec<Fault>,
    /// The per-case deadline ([`DEFAULT_DEADLINE`] by default).
    pub deadline: Duration,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        Self {
            dtypes: PRESET_DTYPES.to_vec(),
            include_large: true,
            inject: Vec::new(),
            deadline: DEFAULT_DEADLINE,
        }
    }
}

impl SuiteOptions {
    /// The default options restricted to `dtypes`, without the large shape.
    pub fn quick(dtypes: &[DType]) -> Self {
        Self {
            dtypes: dtypes.to_vec(),
            include_large: false,
            inject: Vec::new(),
            deadline: DEFAULT_DEADLINE,
        }
    }
}

/// Why the fixed suite never checks `capability-honesty`.
const BUILTIN_HONESTY: &str = "the built-in providers declare every capability, so there is nothing to refuse (the self-test checks the rule)";

/// The provider under test for `route`, with `inject` faults if any.
pub(crate) fn provider_for(
    provider: &BuiltinProvider,
    route: &Route,
    inject: &[Fault],
) -> Result<Arc<dyn TransferProvider>, HarnessError> {
    let inner = provider.provider(route)?;
    Ok(if inject.is_empty() {
        inner
    } else {
        Arc::new(Broken::new(inner, inject.to_vec()))
    })
}

/// Run every dtype over the fixed shapes for each provider.
///
/// Never panics on a provider's behalf: a provider's error or panic is a
/// failed row, and a route that cannot be built fails all of its rows.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::{builtin_provider, run_fixed_suite, SuiteOptions};
/// use tenferro_tensor::DType;
///
/// let provider = builtin_provider("sim-peer").unwrap();
/// let report = run_fixed_suite(&[*provider], &SuiteOptions::quick(&[DType::I32]));
/// assert_eq!(report.summary().failed, 0);
/// assert!(report.summary().passed > 0);
/// ```
pub fn run_fixed_suite(providers: &[BuiltinProvider], options: &SuiteOptions) -> Report {
    run_fixed_suite_with_progress(providers, options, &mut ())
}

/// [`run_fixed_suite`], telling `progress` about every case (the CLI's
/// progress bar).
pub fn run_fixed_suite_with_progress(
    providers: &[BuiltinProvider],
    options: &SuiteOptions,
    progress: &mut dyn Progress,
) -> Report {
    let mut records = Vec::new();
    let shapes = fixed_shapes(options.include_large);
    let total = providers.len() * options.dtypes.len() * shapes.len();
    progress.start(u64::try_from(total).unwrap_or(u64::MAX));
    let injected = options
        .inject
        .iter()
        .map(|fault| fault.name())
        .collect::<Vec<_>>()
        .join("+");
    for provider in providers {
        let mut run = ProviderRun::set_up(provider, options, &injected);
        for &dtype in &options.dtypes {
            for shape in &shapes {
                let record = run.fixed_record(dtype, shape);
                progress.case_done(&CaseResult::from(&record));
                records.push(record);
            }
        }
        records.extend(run.held_records());
    }
    progress.finish();
    Report::from_records(records)
}

/// One built-in provider's run of the fixed suite: its name in the report,
/// its route, and the watchdog its cases run on (or why there is none).
struct ProviderRun {
    /// The provider's name in the report, with the injected faults if any.
    name: String,
    /// The route's label in the report.
    route_label: String,
    /// The route and its watchdog, or the outcome every case of the route gets.
    watchdog: Result<(Route, Watchdog), CaseOutcome>,
    /// What the fixed cases left behind, for the state rows and the held
    /// pass.
    pass: FixedPass,
}

impl ProviderRun {
    /// Gate the provider's route and build its watchdog.
    ///
    /// The route is gated (`BuiltinProvider::route`): an absent device
    /// skips (or, where the settings require it, fails) every case of the
    /// route, before anything is built on it.
    fn set_up(provider: &BuiltinProvider, options: &SuiteOptions, injected: &str) -> Self {
        let name = if injected.is_empty() {
            provider.name.to_owned()
        } else {
            format!("{}[{injected}]", provider.name)
        };
        let route = provider.route();
        let route_label = route
            .as_ref()
            .map_or_else(|_| provider.route_label.to_owned(), Route::label);
        let watchdog = route.and_then(|route| {
            let inner = provider_for(provider, &route, &options.inject)?;
            let watchdog = Watchdog::new(route.clone(), inner, options.deadline)?;
            Ok((route, watchdog))
        });
        let watchdog = watchdog.map_err(|error| match error {
            HarnessError::Unavailable { reason } => CaseOutcome::Skipped { reason },
            error => CaseOutcome::NotSetUp {
                message: describe_error(&error),
            },
        });
        Self {
            name,
            route_label,
            watchdog,
            pass: FixedPass::default(),
        }
    }

    /// The row head of a case of this provider.
    fn head(&self, dtype: String, shape: Vec<usize>, layout: String) -> RowHead {
        RowHead {
            provider: self.name.clone(),
            route: self.route_label.clone(),
            dtype,
            shape,
            layout,
        }
    }

    /// Run the patterned case of `dtype` and `shape`, and record it.
    fn fixed_record(&mut self, dtype: DType, shape: &FixedShape) -> CaseRecord {
        let head = self.head(
            format!("{dtype:?}"),
            shape.shape.clone(),
            shape.layout.label(),
        );
        let case = Case::patterned(dtype, shape.shape.clone(), shape.layout.clone());
        match (&mut self.watchdog, case) {
            (Ok((route, watchdog)), Ok(case)) => {
                let head = RowHead {
                    layout: case.layout_label(),
                    ..head
                };
                let recipe = fixed_recipe(dtype, shape);
                let run = self.pass.run(watchdog, route, &recipe, &case);
                let mut record = into_record(run, &case, &self.name, Origin::Fixed, head);
                record
                    .outcome
                    .explain_unchecked(Rule::CapabilityHonesty, BUILTIN_HONESTY);
                record
            }
            (Err(outcome), _) => CaseRecord::new(&self.name, Origin::Fixed, head, outcome.clone()),
            (_, Err(error)) => CaseRecord::new(
                &self.name,
                Origin::Fixed,
                head,
                CaseOutcome::NotSetUp {
                    message: describe_error(&error),
                },
            ),
        }
    }

    /// The state rows, then the same cases again with their outputs held
    /// as a caller holds them (output-stable), and the devices' memory
    /// over that pass. Nothing where the route has no watchdog.
    fn held_records(&mut self) -> Vec<CaseRecord> {
        let Ok((route, watchdog)) = &mut self.watchdog else {
            return Vec::new();
        };
        let head = RowHead {
            provider: self.name.clone(),
            route: self.route_label.clone(),
            dtype: "*".to_owned(),
            shape: Vec::new(),
            layout: String::new(),
        };
        let end = std::mem::take(&mut self.pass).finish(watchdog, route, &self.name, &head, true);
        let mut records = Vec::new();
        for mut record in end.state.into_iter().chain(end.held) {
            record
                .outcome
                .explain_unchecked(Rule::CapabilityHonesty, BUILTIN_HONESTY);
            records.push(record);
        }
        records
    }
}

/// The recipe of the fixed, patterned case of `dtype` and `shape`.
fn fixed_recipe(dtype: DType, shape: &FixedShape) -> Recipe {
    Recipe::fixed(
        dtype,
        shape.shape.clone(),
        shape.layout.clone(),
        ValueSource::Patterned,
    )
}
