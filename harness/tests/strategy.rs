//! The strategies ask a provider only what it declares it handles, and
//! recipes replay exactly.

use proptest::prelude::*;
use tenferro_tensor::DType;
use tenferro_transfer_harness::Layout;
use tenferro_transfer_harness::strategy::{
    Capabilities, Profile, Recipe, ViewKind, ViewKinds, recipe,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn declared_capabilities_bound_every_case(
        recipe in recipe(Profile::Default, &Capabilities::all().dtypes([DType::I32, DType::C64]).views(ViewKinds::NONE).max_elements(100))
    ) {
        let case = recipe.case().unwrap();
        prop_assert!(matches!(case.dtype(), DType::I32 | DType::C64));
        prop_assert_eq!(case.layout(), &Layout::Owned);
        prop_assert!(case.len() <= 100);
        prop_assert!(case.shape().len() <= 6);
    }

    /// Any subset of view kinds, rank and byte limit: every drawn case is
    /// inside the declaration (a view has only declared kinds).
    #[test]
    fn every_drawn_case_is_inside_any_declaration(
        kinds in 0_u8..16,
        max_rank in 0_usize..7,
        max_bytes in 1_usize..4096,
        seed in any::<u64>(),
    ) {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

        let kinds: ViewKinds = ViewKind::ALL
            .into_iter()
            .enumerate()
            .filter(|(bit, _)| kinds & (1 << bit) != 0)
            .map(|(_, kind)| kind)
            .collect();
        let declared = Capabilities::all().views(kinds).max_rank(max_rank).max_bytes(max_bytes);
        let strategy = recipe(Profile::Quick, &declared);
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed as u8; 32]);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        for _ in 0..32 {
            let case = strategy.new_tree(&mut runner).unwrap().current().case().unwrap();
            prop_assert!(declared.admits(&case), "{:?} outside {:?}: {:?}", case.layout(), declared, declared.exceeded(&case));
        }
    }

    #[test]
    fn recipes_round_trip_through_json(recipe in recipe(Profile::Quick, &Capabilities::all())) {
        let replayed: Recipe = recipe.to_json().parse().unwrap();
        prop_assert_eq!(replayed.case().unwrap(), recipe.case().unwrap());
    }
}

#[test]
fn the_default_profile_draws_views_negative_steps_permutations_and_large_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let strategy = recipe(Profile::Default, &Capabilities::all());
    let mut runner = TestRunner::deterministic();
    let (mut views, mut negative, mut permuted, mut large, mut empty) = (0, 0, 0, 0, 0);
    for _ in 0..512 {
        let recipe = strategy.new_tree(&mut runner).unwrap().current();
        let count: usize = recipe.shape.iter().product();
        large += usize::from(count > 4096);
        empty += usize::from(count == 0);
        if let Layout::View(spec) = &recipe.layout {
            views += 1;
            negative += usize::from(spec.strides().iter().any(|&stride| stride < 0));
            permuted += usize::from(!spec.permutation.is_empty());
        }
    }
    assert!(
        views > 50 && negative > 10 && permuted > 10 && large > 5 && empty > 5,
        "{views} {negative} {permuted} {large} {empty}"
    );
}

#[test]
fn runs_of_several_inputs_are_drawn_and_only_of_small_inputs() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use tenferro_transfer_harness::strategy::MAX_RUN_ELEMENTS;

    let strategy = recipe(Profile::Deep, &Capabilities::all());
    let mut runner = TestRunner::deterministic();
    let (mut runs, mut large_alone) = (0, 0);
    for _ in 0..2048 {
        let recipe = strategy.new_tree(&mut runner).unwrap().current();
        let elements = |recipe: &Recipe| recipe.shape.iter().product::<usize>();
        if recipe.with.is_empty() {
            large_alone += usize::from(elements(&recipe) > MAX_RUN_ELEMENTS);
            continue;
        }
        runs += 1;
        for input in std::iter::once(&recipe).chain(&recipe.with) {
            assert!(
                elements(input) <= MAX_RUN_ELEMENTS,
                "a run of several inputs moves {:?}",
                input.shape
            );
        }
    }
    assert!(
        runs > 100 && large_alone > 10,
        "{runs} runs, {large_alone} large alone"
    );
}

#[test]
fn profiles_are_chosen_by_name() {
    assert_eq!("deep".parse::<Profile>().unwrap(), Profile::Deep);
    assert!(Profile::Deep.cases() >= 100_000);
    let error = "thorough".parse::<Profile>().unwrap_err().to_string();
    assert!(error.contains("unknown profile `thorough`"), "{error}");
}

#[test]
fn each_declared_view_kind_is_drawn_and_no_other() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    for kind in ViewKind::ALL {
        let declared = Capabilities::all().views([kind]);
        let strategy = recipe(Profile::Default, &declared);
        let mut runner = TestRunner::deterministic();
        let mut drawn = 0;
        for _ in 0..512 {
            let recipe = strategy.new_tree(&mut runner).unwrap().current();
            if let Layout::View(spec) = &recipe.layout {
                let kinds = ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset());
                assert!(kinds.iter().all(|found| found == kind), "{kind}: {spec:?}");
                drawn += usize::from(kinds.contains(kind));
            }
        }
        assert!(drawn > 10, "{kind}: only {drawn} views of the kind");
    }
}
