//! Every case can be replayed alone: a fixed case, a
//! special-values case and a case outside the capabilities carry the
//! recipe that rebuilds them, and replaying it runs that one case; the
//! seeds of failing generated cases land in the caller's regression file
//! and are tried first next time.

use std::sync::{Arc, Mutex};

use tenferro_runtime::TransferRequest;
use tenferro_tensor::{Error, Tensor};
use tenferro_transfer_conformance::harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_conformance::harness::{Case, Layout};
use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{BoxError, Verdict};

fn broken(fault: Fault) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        let Some(device) = route.destination().downcast::<SimDevice>() else {
            return Err("a simulated destination".into());
        };
        Ok(Arc::new(Broken::new(
            Arc::new(SimUpload::new(device.clone())),
            vec![fault],
        )))
    }
}

#[test]
fn a_failing_fixed_case_replays_alone_and_fails_again() {
    let suite = ProviderSuite::new("p", Level::V1)
        .route("upload", Route::host_to_sim, broken(Fault::IgnoreStrides))
        .invoked_from("my-crate", "conformance")
        .seed(1);
    let report = suite.run();
    let fixed = report
        .rows()
        .iter()
        .find(|row| {
            row.verdict == Verdict::Fail
                && row
                    .replay
                    .as_deref()
                    .is_some_and(|json| json.contains(r#""values":"patterned""#))
        })
        .expect("a failing fixed case with a replay recipe");
    let json = fixed.replay.as_deref().unwrap();
    // The rule test prints the line that replays exactly this case.
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("values passed");
    };
    assert!(
        text.contains(&format!(
            "replay: TRANSFER_CONFORMANCE_REPLAY='{json}' cargo test -p my-crate --test conformance upload::values"
        )),
        "{text}"
    );
    let replayed = suite.replay(json);
    assert_eq!(replayed.rows().len(), 1, "{}", replayed.to_table());
    let row = &replayed.rows()[0];
    assert_eq!(
        (&row.dtype, &row.shape, &row.layout),
        (&fixed.dtype, &fixed.shape, &fixed.layout)
    );
    assert!(
        row.violations
            .iter()
            .any(|violation| violation.rule == "values")
    );
}

#[test]
fn a_failing_run_of_several_inputs_replays_every_input_and_fails_again() {
    // A content cache that compares only the first and last elements
    // answers a twin (a few interior elements changed) from the earlier
    // input: seen only when the twin moves after its case.
    let suite = ProviderSuite::new("p", Level::V1)
        .route(
            "upload",
            Route::host_to_sim,
            broken(Fault::SampledContentCache),
        )
        .seed(3);
    let report = suite.run();
    let row = report
        .rows()
        .iter()
        .find(|row| {
            row.verdict == Verdict::Fail
                && row
                    .replay
                    .as_deref()
                    .is_some_and(|json| json.contains(r#""with":"#))
        })
        .unwrap_or_else(|| panic!("a failing run of several inputs: {}", report.to_table()));
    let json = row.replay.as_deref().unwrap();
    let replayed = suite.replay(json);
    assert_eq!(replayed.rows().len(), 1, "{}", replayed.to_table());
    assert_eq!(
        replayed.rows()[0].verdict,
        Verdict::Fail,
        "{json}: {}",
        replayed.to_table()
    );
}

#[test]
fn fixed_recipes_rebuild_the_fixed_cases_bit_for_bit() {
    for dtype in [DType::F32, DType::C64] {
        let special = Case::special_values(dtype).unwrap().unwrap();
        let recipe = Recipe::fixed(
            dtype,
            special.shape().to_vec(),
            special.layout().clone(),
            ValueSource::SpecialValues,
        );
        let replayed: Recipe = recipe.to_json().parse().unwrap();
        assert_eq!(replayed.case().unwrap(), special);
        let patterned = Case::patterned(dtype, vec![3, 2], Layout::Owned).unwrap();
        let recipe = Recipe::fixed(dtype, vec![3, 2], Layout::Owned, ValueSource::Patterned);
        assert_eq!(
            recipe.to_json().parse::<Recipe>().unwrap().case().unwrap(),
            patterned
        );
    }
    // A special-values recipe of another shape, or of an integer dtype, is
    // refused with the reason.
    let wrong = Recipe::fixed(
        DType::F32,
        vec![3],
        Layout::Owned,
        ValueSource::SpecialValues,
    );
    assert!(wrong.case().unwrap_err().to_string().contains("shape [20]"));
    let integer = Recipe::fixed(
        DType::I32,
        vec![20],
        Layout::Owned,
        ValueSource::SpecialValues,
    );
    assert!(
        integer
            .case()
            .unwrap_err()
            .to_string()
            .contains("no special float values")
    );
}

#[test]
fn a_case_outside_the_capabilities_replays_as_outside() {
    // SimUpload serves F64, which is declared away: capability-honesty.
    let suite = ProviderSuite::new("p", Level::V1)
        .route("upload", Route::host_to_sim, broken(Fault::Leaky))
        .capabilities(Capabilities::all().dtypes([DType::F32]))
        .seed(1);
    let report = suite.run();
    let outside = report
        .rows()
        .iter()
        .find(|row| row.layout.contains("[outside: dtype F64"))
        .expect("an outside row for F64");
    let replayed = suite.replay(outside.replay.as_deref().unwrap());
    assert_eq!(replayed.rows().len(), 1);
    assert!(
        replayed.rows()[0]
            .violations
            .iter()
            .any(|violation| violation.rule == "capability-honesty"),
        "{}",
        replayed.to_table()
    );
}

/// An input's dtype and shape.
type Input = (DType, Vec<usize>);

/// SimUpload that refuses inputs of exactly seven elements (a typed `Err`,
/// breaking `no-error`), and records the shape of every input.
#[derive(Debug)]
struct RefusesSeven {
    inner: SimUpload,
    seen: Arc<Mutex<Vec<Input>>>,
}

impl TransferProvider for RefusesSeven {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        let shape = input.shape().to_vec();
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((input.dtype(), shape.clone()));
        }
        if shape.iter().product::<usize>() == 7 {
            return Err(Error::unsupported("RefusesSeven", "seven elements").into());
        }
        self.inner.transfer_blocking(request)
    }
}

/// Run the suite on `RefusesSeven` with `seed`, keeping regressions in
/// `dir`; the inputs it saw, and how many fixed cases ran before the
/// generated ones.
fn run_refuses_seven(seed: u64, dir: &std::path::Path) -> (Vec<Input>, usize) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&seen);
    let suite = ProviderSuite::new("p", Level::V1)
        .route("upload", Route::host_to_sim, move |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("a simulated destination".into());
            };
            Ok(Arc::new(RefusesSeven {
                inner: SimUpload::new(device.clone()),
                seen: Arc::clone(&recorder),
            }) as Arc<dyn TransferProvider>)
        })
        .regressions_dir(dir)
        .seed(seed);
    let report = suite.run();
    assert!(!suite.check(&report, "upload", Rule::NoError).is_pass());
    let fixed = report
        .rows()
        .iter()
        .filter(|row| row.replay.is_some())
        .count();
    let seen = seen.lock().unwrap().clone();
    (seen, fixed)
}

#[test]
fn failing_seeds_land_in_the_regressions_dir_and_are_tried_first_next_time() {
    let dir = std::env::temp_dir().join(format!("transfer-regressions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (first, _) = run_refuses_seven(11, &dir);
    let file = dir.join("upload.txt");
    let kept = std::fs::read_to_string(&file).expect("a regression file in the dir");
    assert!(kept.lines().any(|line| line.starts_with("cc ")), "{kept}");
    let (second, _) = run_refuses_seven(12, &dir);
    // Without the file, that seed starts elsewhere: the two runs of seed
    // 12 make the same calls (fixed cases, twins, held pass) until the
    // first generated input, where the one with the file tries the
    // failure first.
    let fresh = dir.join("fresh");
    let (unseeded, _) = run_refuses_seven(12, &fresh);
    let generated = second
        .iter()
        .zip(&unseeded)
        .position(|(with, without)| with != without)
        .expect("the runs with and without the regression file differ");
    assert!(generated > 0);
    // The first generated input of seven elements in the first run...
    let failing = first[generated..]
        .iter()
        .find(|(_, shape)| shape.iter().product::<usize>() == 7)
        .cloned()
        .unwrap();
    // ... is the first generated input of a run with another seed.
    assert_eq!(second[generated], failing);
    assert_ne!(unseeded[generated], failing);
    let _ = std::fs::remove_dir_all(&dir);
}
