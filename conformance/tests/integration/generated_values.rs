//! A large generated case holds no values of its own: they are made from
//! its seed (and compared by digests of their chunks) wherever a read is
//! compared with them. It must be judged exactly as the same values held:
//! a correct provider passes, and each broken one fails with the same
//! rules and the same words.

use std::sync::Arc;

use rstest::rstest;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_mock_devices::{SimDevice, SimPeer, SimRoutes, SimUpload};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::{HELD_UP_TO_BYTES, Recipe, ValueSource};
use tenferro_transfer_harness::{
    Case, Judgement, Layout, Oracle, Rig, Route, Rule, ViewAxis, ViewSpec,
};

/// Recipes just past what a case holds, each with a twin's changes: seeded
/// F64 with a few special values (more than one chunk, and a partial last
/// one), and the fixed cases' pattern, owned and as a strided view.
fn large_recipes() -> Vec<Recipe> {
    let count = HELD_UP_TO_BYTES / 8 + 4097;
    let seeded: Recipe = format!(
        r#"{{"dtype":"F64","shape":[{count}],"layout":{{"kind":"owned"}},"seed":11,"specials":24}}"#
    )
    .parse()
    .unwrap();
    let view = ViewSpec {
        backing_shape: vec![601, 700],
        axes: vec![
            ViewAxis {
                first: 1,
                step: 1,
                len: 600,
            },
            ViewAxis {
                first: 699,
                step: -2,
                len: 350,
            },
        ],
        permutation: vec![1, 0],
    };
    vec![
        seeded.twin(5),
        Recipe::fixed(
            DType::C32,
            vec![400, 400],
            Layout::Owned,
            ValueSource::Patterned,
        )
        .twin(2),
        Recipe::fixed(
            DType::F64,
            view.shape(),
            Layout::View(view),
            ValueSource::Patterned,
        ),
    ]
}

fn provider(route: &Route, fault: Option<Fault>) -> Arc<dyn TransferProvider> {
    let sim =
        |endpoint: &tenferro_transfer_harness::Endpoint| endpoint.downcast::<SimDevice>().cloned();
    let correct: Arc<dyn TransferProvider> = match (sim(route.source()), sim(route.destination())) {
        (Some(from), Some(to)) => Arc::new(SimPeer::new(from, to)),
        (None, Some(to)) => Arc::new(SimUpload::new(to)),
        _ => unreachable!("the routes below end on a simulated device"),
    };
    match fault {
        Some(fault) => Arc::new(Broken::new(correct, vec![fault])),
        None => correct,
    }
}

fn judge(route: &Route, fault: Option<Fault>, case: &Case) -> Judgement {
    let mut rig = Rig::new(route.clone(), provider(route, fault)).unwrap();
    let outcome = rig.run(case).unwrap();
    Oracle.judge(case, route, &outcome)
}

#[rstest]
#[case::correct(None)]
#[case::one_ulp(Some(Fault::OneUlp))]
#[case::swapped(Some(Fault::Swapped))]
#[case::partial_copy(Some(Fault::PartialCopy))]
#[case::above_4096(Some(Fault::CornerAbove4096))]
#[case::short_map_read(Some(Fault::ShortMapRead))]
#[case::negative_zero_lost(Some(Fault::NegativeZeroLost))]
#[case::writes_input(Some(Fault::WritesInput))]
fn a_large_generated_case_is_judged_as_its_values_held(
    #[case] fault: Option<Fault>,
    #[values(0, 1, 2)] which: usize,
) {
    let recipe = &large_recipes()[which];
    let generated = recipe.case().unwrap();
    // The same values, held: a second expansion of the recipe made whole.
    let again = recipe.case().unwrap();
    let held = Case::new(
        again.dtype(),
        again.shape().to_vec(),
        again.layout().clone(),
        again.values().to_vec(),
    )
    .unwrap();
    assert_eq!(generated, held, "the same values, generated or held");
    for route in [Route::host_to_sim().unwrap(), Route::sim_to_sim().unwrap()] {
        let on_generated = judge(&route, fault, &generated);
        let on_held = judge(&route, fault, &held);
        assert_eq!(on_generated.rules(), on_held.rules(), "{fault:?}");
        assert_eq!(on_generated.violations(), on_held.violations(), "{fault:?}");
        assert_eq!(on_generated.checked(), on_held.checked(), "{fault:?}");
        match fault {
            None => assert!(on_generated.passed(), "{:?}", on_generated.violations()),
            // A plain host input is left alone by this fault.
            Some(Fault::WritesInput) if route.source().downcast::<SimDevice>().is_none() => {}
            Some(Fault::WritesInput) => {
                assert_eq!(on_generated.rules(), vec![Rule::InputIntact]);
            }
            Some(_) => assert!(
                on_generated.rules().contains(&Rule::Values),
                "{fault:?}: {:?}",
                on_generated.violations()
            ),
        }
    }
}

/// Judge each case of `cases` in turn on one rig that holds its outputs
/// (`output-stable`), as the held pass does.
fn judge_in_turn(route: &Route, fault: Option<Fault>, cases: &[Case]) -> Vec<Judgement> {
    let mut rig = Rig::new(route.clone(), provider(route, fault)).unwrap();
    rig.keep_outputs(true);
    let judgements = cases
        .iter()
        .map(|case| Oracle.judge(case, route, &rig.run(case).unwrap()))
        .collect();
    rig.release_outputs();
    judgements
}

/// Providers that keep state between calls meet large made cases as they
/// meet the same values held: a content cache that samples a few elements
/// answers a twin with the first case's output (`values`), and a pool that
/// hands out an output the caller still holds changes it (`output-stable`,
/// the held output compared with its own case's made values). A correct
/// provider passes the same sequence.
#[rstest]
#[case::correct(None, None)]
#[case::sampled_content_cache(Some(Fault::SampledContentCache), Some(Rule::Values))]
#[case::reuses_live_output(Some(Fault::ReusesLiveOutput), Some(Rule::OutputStable))]
fn providers_with_state_meet_large_made_cases_as_held_ones(
    #[case] fault: Option<Fault>,
    #[case] broken: Option<Rule>,
) {
    let first = large_recipes().swap_remove(0);
    let mut other = first.clone().untwinned();
    other.seed += 1;
    let sequence = [first.clone().untwinned(), first, other];
    let made: Vec<Case> = sequence
        .iter()
        .map(|recipe| recipe.case().unwrap())
        .collect();
    let held: Vec<Case> = sequence
        .iter()
        .map(|recipe| {
            let case = recipe.case().unwrap();
            Case::new(
                case.dtype(),
                case.shape().to_vec(),
                case.layout().clone(),
                case.values().to_vec(),
            )
            .unwrap()
        })
        .collect();
    let route = Route::host_to_sim().unwrap();
    let on_made = judge_in_turn(&route, fault, &made);
    let on_held = judge_in_turn(&route, fault, &held);
    for (made, held) in on_made.iter().zip(&on_held) {
        assert_eq!(made.violations(), held.violations(), "{fault:?}");
        assert_eq!(made.checked(), held.checked(), "{fault:?}");
    }
    let broken_rules: Vec<Rule> = on_made.iter().flat_map(Judgement::rules).collect();
    match broken {
        None => assert!(broken_rules.is_empty(), "{broken_rules:?}"),
        Some(rule) => assert!(broken_rules.contains(&rule), "{fault:?}: {broken_rules:?}"),
    }
}
