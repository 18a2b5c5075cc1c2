//! Every profile reaches every size class: the `quick` profile (what the
//! guide tells a vendor to run) meets a tensor above 1 Mi elements, a view
//! above 4,096 elements, every rank up to the maximum and every special
//! value of every float dtype in both signs, as far as the declared
//! capabilities admit them.

use std::sync::Arc;

use crate::support::fast_path::{CompactFastPath, LayoutCheck};
use crate::support::verdicts::{failing_rows, no_rule_fails};
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::strategy::MAX_RANK;
use tenferro_transfer_conformance::{
    ABOVE_1MI_ELEMENTS, BoxError, CaseResult, Verdict, special_values_case,
};

fn sim_upload(route: &Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let Some(device) = route.destination().downcast::<SimDevice>() else {
        return Err("upload serves a simulated destination".into());
    };
    Ok(Arc::new(SimUpload::new(device.clone())))
}

#[test]
fn the_quick_profile_reaches_every_size_class() {
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .profile(Profile::Quick)
        .seed(1);
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    let passed: Vec<_> = report
        .rows()
        .iter()
        .filter(|row| row.verdict == Verdict::Pass && row.dtype != "*")
        .collect();
    const { assert!(ABOVE_1MI_ELEMENTS > 1 << 20) };
    let elements = |shape: &[usize]| shape.iter().product::<usize>();
    for dtype in ["F32", "F64", "I32", "I64", "Bool", "C32", "C64"] {
        let of_dtype: Vec<_> = passed.iter().filter(|row| row.dtype == dtype).collect();
        assert!(
            of_dtype
                .iter()
                .any(|row| elements(&row.shape) == ABOVE_1MI_ELEMENTS && row.layout == "owned"),
            "{dtype}: no case above 1 Mi elements"
        );
        assert!(
            of_dtype
                .iter()
                .any(|row| elements(&row.shape) > 4096 && row.layout.starts_with("view(")),
            "{dtype}: no view above 4,096 elements"
        );
        for rank in 0..=MAX_RANK {
            assert!(
                of_dtype.iter().any(|row| row.shape.len() == rank),
                "{dtype}: no case of rank {rank}"
            );
        }
        assert!(
            of_dtype
                .iter()
                .any(|row| row.shape.len() == MAX_RANK && row.layout.starts_with("view(")),
            "{dtype}: no view of rank {MAX_RANK}"
        );
    }
    for dtype in [DType::F32, DType::F64, DType::C32, DType::C64] {
        let case = special_values_case(dtype).unwrap().unwrap();
        assert!(
            passed
                .iter()
                .any(|row| row.dtype == format!("{dtype:?}") && row.shape == case.shape()),
            "{dtype:?}: the special values were not run"
        );
    }
}

#[test]
fn special_values_come_in_both_signs_for_every_float_dtype() {
    for (dtype, width, sign) in [
        (DType::F32, 4, 0x8000_0000_u64),
        (DType::F64, 8, 1 << 63),
        (DType::C32, 4, 0x8000_0000),
        (DType::C64, 8, 1 << 63),
    ] {
        let case = special_values_case(dtype).unwrap().unwrap();
        let parts: Vec<u64> = case
            .values()
            .chunks_exact(width)
            .map(|chunk| {
                let mut bytes = [0_u8; 8];
                bytes[..width].copy_from_slice(chunk);
                u64::from_le_bytes(bytes)
            })
            .collect();
        let is_complex = matches!(dtype, DType::C32 | DType::C64);
        // Real parts, and for complex dtypes imaginary parts, separately.
        for part in 0..(1 + usize::from(is_complex)) {
            let step = 1 + usize::from(is_complex);
            let values: Vec<u64> = parts.iter().skip(part).step_by(step).copied().collect();
            for value in &values {
                assert!(
                    values.contains(&(value ^ sign)),
                    "{dtype:?}: {value:#x} has no twin of the other sign"
                );
            }
            let exponent_all_ones = |bits: u64| {
                if width == 4 {
                    bits & 0x7f80_0000 == 0x7f80_0000 && bits & 0x007f_ffff != 0
                } else {
                    bits & 0x7ff0_0000_0000_0000 == 0x7ff0_0000_0000_0000
                        && bits & 0x000f_ffff_ffff_ffff != 0
                }
            };
            // Zero, a subnormal and a NaN are among them.
            assert!(values.contains(&0) && values.contains(&1), "{dtype:?}");
            assert!(
                values.iter().any(|bits| exponent_all_ones(*bits)),
                "{dtype:?}"
            );
        }
    }
    assert!(special_values_case(DType::I32).unwrap().is_none());
}

/// Above the generator's rank 6, the size classes move a view too, compact
/// on its first six axes with its only offset and gap on the seventh: a
/// layout check that stops at six axes copies the wrong elements there,
/// and only there (blind probe 13's M45, when only owned tensors were
/// moved above rank 6).
#[test]
fn a_layout_check_that_stops_at_six_axes_fails_the_rank_seven_view() {
    let check = LayoutCheck {
        axes_checked: MAX_RANK,
        ..LayoutCheck::RIGHT
    };
    let suite = CompactFastPath::suite("six_axes", check);
    let report = suite.run();
    no_rule_fails(&suite, &report, "right", Level::V2.rules());
    let failing = failing_rows(&report, "six_axes");
    // The rank-7 view's rows, and the state rows that move it again (at
    // another offset, right after it); nothing else.
    let rank_seven_view =
        |row: &&CaseResult| row.shape.len() > MAX_RANK && row.layout.starts_with("view(");
    let names_it = |row: &&CaseResult| {
        row.violations
            .iter()
            .all(|violation| violation.message.contains("[2, 3, 1, 2, 1, 1, 2] view("))
    };
    assert!(failing.iter().any(rank_seven_view), "{}", report.to_table());
    assert!(
        failing
            .iter()
            .all(|row| rank_seven_view(row) || names_it(row)),
        "{}",
        report.to_table()
    );
}

/// A gather whose plan keeps six axes of more than one element (after
/// dropping those of one) loses the seventh of `rank-7-gapped-view`,
/// seven axes of two elements each two apart, none of which merges: it
/// fails `values` there and on the state rows that move it again, and
/// nowhere else (blind probe 14's M27; the rank-7 view compact on six axes
/// has only four axes of more than one element).
#[test]
fn a_gather_that_keeps_six_axes_fails_the_rank_seven_gapped_view() {
    let check = LayoutCheck {
        plan_axes: MAX_RANK,
        ..LayoutCheck::RIGHT
    };
    let suite = CompactFastPath::suite("six_slots", check);
    let report = suite.run();
    no_rule_fails(&suite, &report, "right", Level::V2.rules());
    let failing = failing_rows(&report, "six_slots");
    let gapped = |text: &str| text.contains("step=[2, 2, 2, 2, 2, 2, 2]");
    assert!(
        failing.iter().any(|row| gapped(&row.layout)),
        "{}",
        report.to_table()
    );
    for row in &failing {
        assert!(
            row.violations
                .iter()
                .all(|violation| violation.rule == Rule::Values.id()
                    && (gapped(&row.layout) || gapped(&violation.message))),
            "{row:#?}"
        );
    }
}

/// A layout check that sorts the strides before it compares them with
/// compact ones takes a transpose for compact and copies it as it lies:
/// the fixed `transposed-view` (a whole 3x4 backing read transposed) fails
/// `values`; every other row that fails moves a permuted view (blind probe
/// 14's M17; the generator's permuted views almost always have gaps or an
/// offset, and then look strided sorted or not).
#[test]
fn a_layout_check_that_sorts_strides_fails_the_transposed_view() {
    let check = LayoutCheck {
        sorts_strides: true,
        ..LayoutCheck::RIGHT
    };
    let suite = CompactFastPath::suite("sorted", check);
    let report = suite.run();
    no_rule_fails(&suite, &report, "right", Level::V2.rules());
    let transposed = "view(backing=[3, 4], first=[0, 0], step=[1, 1], perm=[1, 0])";
    let failing = failing_rows(&report, "sorted");
    assert!(
        failing.iter().any(|row| row.layout == transposed),
        "{}",
        report.to_table()
    );
    for row in &failing {
        assert!(
            row.layout == transposed
                || row
                    .violations
                    .iter()
                    .all(|violation| violation.message.contains("perm=[")
                        || violation.message.contains("\"permutation\":[1")),
            "{row:#?}"
        );
    }
}
