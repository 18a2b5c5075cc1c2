//! Running the fixed suite against the built-in providers.

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_tensor::DType;
use tenferro_transfer_harness::{Case, Oracle, Rig};

use crate::report::{CaseResult, Report, RowHead};
use crate::{BuiltinProvider, fixed_shapes};

/// Run every dtype over the fixed shapes for each provider.
///
/// Never panics on a provider's behalf: a provider's error or panic is a
/// failed row, and a route that cannot be built fails all of its rows.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::{builtin_provider, run_fixed_suite};
/// use tenferro_tensor::DType;
///
/// let provider = builtin_provider("sim-peer").unwrap();
/// let report = run_fixed_suite(&[*provider], &[DType::I32], false);
/// assert_eq!(report.summary.failed, 0);
/// assert!(report.summary.passed > 0);
/// ```
pub fn run_fixed_suite(
    providers: &[BuiltinProvider],
    dtypes: &[DType],
    include_large: bool,
) -> Report {
    let mut report = Report::default();
    let shapes = fixed_shapes(include_large);
    for provider in providers {
        let route = provider.route();
        let rig = route
            .as_ref()
            .map_err(ToString::to_string)
            .and_then(|route| {
                let inner = provider
                    .provider(route)
                    .map_err(|error| error.to_string())?;
                Rig::new(route.clone(), inner).map_err(|error| error.to_string())
            });
        let route_label = route
            .as_ref()
            .map_or_else(|_| "?".to_owned(), |route| route.label());
        let mut rig = rig;
        for &dtype in dtypes {
            for shape in &shapes {
                let head = RowHead {
                    provider: provider.name.to_owned(),
                    route: route_label.clone(),
                    dtype: format!("{dtype:?}"),
                    shape: shape.shape.clone(),
                    layout: String::new(),
                };
                let row = match (&mut rig, &route) {
                    (Ok(rig), Ok(route)) => {
                        match Case::patterned(dtype, shape.shape.clone(), shape.layout.clone()) {
                            Ok(case) => {
                                let head = RowHead {
                                    layout: case.layout_label(),
                                    ..head
                                };
                                match rig.run(&case) {
                                    Ok(outcome) => CaseResult::judged(
                                        head,
                                        Oracle.judge(&case, route, &outcome),
                                    ),
                                    Err(error) => {
                                        CaseResult::setup_failure(head, error.to_string())
                                    }
                                }
                            }
                            Err(error) => CaseResult::setup_failure(head, error.to_string()),
                        }
                    }
                    (Err(error), _) => CaseResult::setup_failure(head, error.clone()),
                    (_, Err(error)) => CaseResult::setup_failure(head, error.to_string()),
                };
                report.push(row);
            }
        }
    }
    report
}

/// All seven preset dtypes.
pub fn all_dtypes() -> Vec<DType> {
    PRESET_DTYPES.to_vec()
}
