//! A small real report for the renderer tests: passes, failures from broken
//! providers, a case the harness could not set up, and a skip.

#![allow(dead_code)] // Each test file uses a part of it.

pub mod blocks;
pub mod fast_path;
pub mod filling_cache;
pub mod kernels;
pub mod vendor_sim;
pub mod verdicts;

use std::sync::Arc;

use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_tensor::DType;
use tenferro_transfer_conformance::coverage::Coverage;
use tenferro_transfer_conformance::harness::{
    Case, DEFAULT_DEADLINE, Layout, Oracle, Route, ViewAxis, ViewSpec, Watchdog,
};
use tenferro_transfer_conformance::record::{CaseOutcome, CaseRecord, Origin};
use tenferro_transfer_conformance::{Report, RowHead, builtin_provider, fixed_shapes};

/// Run one case of a built-in provider, with `faults` injected, as the suite
/// does.
pub fn judged(
    builtin: &str,
    faults: &[Fault],
    dtype: DType,
    shape: Vec<usize>,
    layout: Layout,
) -> CaseRecord {
    let builtin = builtin_provider(builtin).unwrap();
    let route = builtin.route().unwrap();
    let inner = builtin.provider(&route).unwrap();
    let provider: Arc<dyn tenferro_runtime::TransferProvider> = if faults.is_empty() {
        inner
    } else {
        Arc::new(Broken::new(inner, faults.to_vec()))
    };
    let case = Case::patterned(dtype, shape, layout).unwrap();
    let mut rig = Watchdog::new(route.clone(), provider, DEFAULT_DEADLINE).unwrap();
    let outcome = rig.run(&case).unwrap();
    let judgement = Oracle.judge(&case, &route, &outcome);
    CaseRecord::new(
        builtin.name,
        Origin::Fixed,
        head(builtin.name, faults, &route, &case),
        CaseOutcome::judged(&judgement),
    )
    .with_expected_errors(judgement.expected_errors().to_vec())
    .with_coverage(Coverage::of(&case, &judgement))
}

fn provider_label(name: &str, faults: &[Fault]) -> String {
    if faults.is_empty() {
        return name.to_owned();
    }
    let faults: Vec<&str> = faults.iter().map(|fault| fault.name()).collect();
    format!("{name}[{}]", faults.join("+"))
}

fn head(name: &str, faults: &[Fault], route: &Route, case: &Case) -> RowHead {
    RowHead {
        provider: provider_label(name, faults),
        route: route.label(),
        dtype: format!("{:?}", case.dtype()),
        shape: case.shape().to_vec(),
        layout: case.layout_label(),
    }
}

/// The fixed suite's strided view (offset and negative step).
pub fn strided_view() -> (Vec<usize>, Layout) {
    let shape = fixed_shapes(false)
        .into_iter()
        .find(|shape| shape.name == "strided-view")
        .unwrap();
    (shape.shape, shape.layout)
}

/// A case whose view reaches past its backing: the harness refuses to build
/// it, a real setup failure.
pub fn setup_failure(builtin: &str, dtype: DType) -> CaseRecord {
    let builtin = builtin_provider(builtin).unwrap();
    let route = builtin.route().unwrap();
    let layout = Layout::View(ViewSpec {
        backing_shape: vec![2],
        axes: vec![ViewAxis {
            first: 5,
            step: 1,
            len: 3,
        }],
        permutation: Vec::new(),
    });
    let error = Case::patterned(dtype, vec![3], layout).unwrap_err();
    CaseRecord::new(
        builtin.name,
        Origin::Fixed,
        RowHead {
            provider: builtin.name.to_owned(),
            route: route.label(),
            dtype: format!("{dtype:?}"),
            shape: vec![3],
            layout: String::new(),
        },
        CaseOutcome::NotSetUp {
            message: error.to_string(),
        },
    )
}

/// A skipped case, as a provider's declared capabilities produce one.
pub fn skipped(builtin: &str, dtype: DType, reason: &str) -> CaseRecord {
    let builtin = builtin_provider(builtin).unwrap();
    CaseRecord::new(
        builtin.name,
        Origin::Fixed,
        RowHead {
            provider: builtin.name.to_owned(),
            route: builtin.route().unwrap().label(),
            dtype: format!("{dtype:?}"),
            shape: vec![7, 3],
            layout: "owned".to_owned(),
        },
        CaseOutcome::Skipped {
            reason: reason.to_owned(),
        },
    )
}

/// sim-upload: passes on F32 and I32, a setup failure beside a pass on
/// F64, a skip on C64; sim-download with one-ulp injected: a values
/// failure; sim-peer with err-on-valid: a no-error failure whose output
/// rules are not checked.
pub fn small_report() -> Report {
    Report::from_records(small_records())
}

/// The records of [`small_report`].
pub fn small_records() -> Vec<CaseRecord> {
    let (view_shape, view) = strided_view();
    vec![
        judged("sim-upload", &[], DType::F32, vec![7, 3], Layout::Owned),
        judged(
            "sim-upload",
            &[],
            DType::F32,
            view_shape.clone(),
            view.clone(),
        ),
        judged("sim-upload", &[], DType::I32, vec![7, 3], Layout::Owned),
        judged("sim-upload", &[], DType::F64, vec![5], Layout::Owned),
        setup_failure("sim-upload", DType::F64),
        skipped(
            "sim-upload",
            DType::C64,
            "C64 is not among the provider's declared dtypes",
        ),
        judged(
            "sim-download",
            &[Fault::OneUlp],
            DType::F32,
            vec![7, 3],
            Layout::Owned,
        ),
        judged(
            "sim-download",
            &[Fault::OneUlp],
            DType::F32,
            view_shape,
            view,
        ),
        judged(
            "sim-peer",
            &[Fault::ErrOnValid],
            DType::F32,
            vec![7, 3],
            Layout::Owned,
        ),
    ]
}

/// Snapshots live in `snapshots/` at the workspace root, and process-unique
/// numbers are redacted. (Not every test file that shares this module
/// takes snapshots.)
#[allow(unused_macros)]
macro_rules! with_snapshot_settings {
    ($body:block) => {
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            filters => vec![
                (r"AllocationDomainId\(\d+\)", "AllocationDomainId([domain])"),
                (r"EventDomainId\s*\{[^}]*\}", "EventDomainId { [domain] }"),
                (r"0x[0-9a-f]{12,16}\b", "[address]"),
                (r"copy #\d+", "copy #[n]"),
                (r"allocation #\d+", "allocation #[id]"),
            ],
        }, $body)
    };
}
#[allow(unused_imports)]
pub(crate) use with_snapshot_settings;

/// Run one ignored test, `test` of the module `module` (its
/// `module_path!()`), in this test binary with `variable=value`; the output
/// says whether it passed. The test ran: a name that matched nothing would
/// pass without running it.
pub fn rerun_with(module: &str, test: &str, variable: &str, value: &str) -> std::process::Output {
    // libtest names a test by its path below the crate root.
    let module = module.split_once("::").map_or("", |(_, path)| path);
    let name = if module.is_empty() {
        test.to_owned()
    } else {
        format!("{module}::{test}")
    };
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", &name, "--ignored", "--nocapture"])
        .env(variable, value)
        .output()
        .expect("rerun the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("running 1 test"),
        "{name} is not a test of this binary:\n{stdout}"
    );
    output
}
