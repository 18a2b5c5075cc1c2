//! Named edge cases, on every built-in provider.

use rstest::rstest;
use tenferro_tensor::{Complex, DType};
use tenferro_transfer_conformance::harness::strategy::Profile;
use tenferro_transfer_conformance::harness::{Case, Layout, Oracle, Rig};
use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, BuiltinProvider};

fn passes_everywhere(case: &Case) {
    for provider in &BUILTIN_PROVIDERS {
        check(provider, case);
    }
}

fn check(provider: &BuiltinProvider, case: &Case) {
    let route = provider.route().unwrap();
    let mut rig = Rig::new(route.clone(), provider.provider(&route).unwrap()).unwrap();
    let judgement = Oracle.judge(case, &route, &rig.run(case).unwrap());
    assert!(
        judgement.passed(),
        "{} {:?} {:?}: {:?}",
        provider.name,
        case.dtype(),
        case.shape(),
        judgement.violations()
    );
}

#[rstest]
#[case::empty(vec![0])]
#[case::empty_inner(vec![4, 0, 3])]
#[case::scalar(vec![])]
#[case::one_element(vec![1])]
#[case::maximum_rank(vec![2, 1, 3, 1, 2, 2])]
#[case::largest_quick_size(vec![Profile::Quick.max_elements()])]
fn named_shapes(
    #[case] shape: Vec<usize>,
    #[values(
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::C32,
        DType::C64
    )]
    dtype: DType,
) {
    passes_everywhere(&Case::patterned(dtype, shape, Layout::Owned).unwrap());
}

#[rstest]
#[case::quiet_nan_with_payload(0x7fc0_1234)]
#[case::signalling_nan(0x7fa0_0001)]
#[case::negative_nan(0xffc0_0001)]
#[case::negative_zero(0x8000_0000)]
#[case::positive_zero(0x0000_0000)]
#[case::smallest_subnormal(0x0000_0001)]
#[case::largest_negative_subnormal(0x807f_ffff)]
#[case::infinity(0x7f80_0000)]
#[case::negative_infinity(0xff80_0000)]
#[case::max(0x7f7f_ffff)]
#[case::min(0xff7f_ffff)]
fn each_f32_special_alone(#[case] bits: u32) {
    passes_everywhere(&Case::from_values(vec![1], vec![f32::from_bits(bits)]).unwrap());
    passes_everywhere(
        &Case::from_values(vec![1], vec![Complex::new(f32::from_bits(bits), -0.0)]).unwrap(),
    );
}

#[rstest]
#[case::quiet_nan_with_payload(0x7ff8_0000_dead_beef)]
#[case::signalling_nan(0x7ff4_0000_0000_0001)]
#[case::negative_zero(0x8000_0000_0000_0000)]
#[case::smallest_subnormal(0x0000_0000_0000_0001)]
#[case::largest_negative_subnormal(0x800f_ffff_ffff_ffff)]
#[case::infinity(0x7ff0_0000_0000_0000)]
#[case::negative_infinity(0xfff0_0000_0000_0000)]
#[case::max(0x7fef_ffff_ffff_ffff)]
#[case::min(0xffef_ffff_ffff_ffff)]
fn each_f64_special_alone(#[case] bits: u64) {
    passes_everywhere(&Case::from_values(vec![1], vec![f64::from_bits(bits)]).unwrap());
    passes_everywhere(
        &Case::from_values(vec![1], vec![Complex::new(0.5, f64::from_bits(bits))]).unwrap(),
    );
}

#[rstest]
#[case::i32_min(Case::from_values(vec![1], vec![i32::MIN]).unwrap())]
#[case::i32_max(Case::from_values(vec![1], vec![i32::MAX]).unwrap())]
#[case::i64_min(Case::from_values(vec![1], vec![i64::MIN]).unwrap())]
#[case::i64_max(Case::from_values(vec![1], vec![i64::MAX]).unwrap())]
#[case::minus_one(Case::from_values(vec![1], vec![-1_i64]).unwrap())]
#[case::bool_true(Case::from_values(vec![1], vec![true]).unwrap())]
#[case::bool_false(Case::from_values(vec![1], vec![false]).unwrap())]
fn each_integer_and_bool_special_alone(#[case] case: Case) {
    passes_everywhere(&case);
}
