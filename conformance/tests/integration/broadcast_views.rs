//! Broadcast views (a zero stride, as tenferro's `broadcast_in_dim_view`
//! makes them) reach every provider: the fixed `broadcast-view` and the
//! generator's views with a zero step, where the declared view kinds
//! admit them.

use tenferro_transfer_conformance::CaseResult;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::strategy::{Capabilities, ViewKind, ViewKinds};

use crate::support::fast_path::{CompactFastPath, LayoutCheck};
use crate::support::verdicts::{failing_rows, no_rule_fails};

/// Whether `row` moved a broadcast view: its layout label shows a step of
/// zero.
fn broadcast(row: &CaseResult) -> bool {
    let Some(steps) = row.layout.split("step=[").nth(1) else {
        return false;
    };
    let steps = steps.split(']').next().unwrap_or_default();
    steps.split(", ").any(|step| step == "0")
}

/// A fast path that takes a zero stride for an axis that moves nowhere
/// copies the backing straight from the view's offset: wrong elements on
/// the broadcast rows, and only there (blind probe 13's M55, when no
/// broadcast view was moved); past the backing's end, its copy comes up
/// short and it errs. Knowing a broadcast, it passes every rule.
#[test]
fn a_layout_check_that_skips_zero_strides_fails_values_on_broadcast_views() {
    let check = LayoutCheck {
        zero_stride_is_still: true,
        ..LayoutCheck::RIGHT
    };
    let suite = CompactFastPath::suite("zero_is_still", check);
    let report = suite.run();
    no_rule_fails(&suite, &report, "right", Level::V2.rules());
    assert!(
        report
            .rows()
            .iter()
            .any(|row| row.route.starts_with("right (") && row.shape == [3, 2] && broadcast(row)),
        "the fixed broadcast view was not moved:\n{}",
        report.to_table()
    );
    let failing = failing_rows(&report, "zero_is_still");
    assert!(
        failing
            .iter()
            .any(|row| row.shape == [3, 2] && broadcast(row)),
        "{}",
        report.to_table()
    );
    // The generator draws broadcast views too: its failing case shrinks
    // to one.
    let zero_step = |text: &str| text.contains("\"step\":0,");
    assert!(
        failing
            .iter()
            .any(|row| row.layout.starts_with("generated: ") && zero_step(&row.layout)),
        "{}",
        report.to_table()
    );
    // Every failure is on a broadcast view: the fixed one, a drawn one (its
    // minimal case), or a state, held or concurrent row's case that names
    // one; of values, or of no-error where the copy ran past the backing's
    // end and the provider's own length check refused it.
    for row in &failing {
        let names_one = |message: &str| zero_step(message) || message.contains("step=[0, 1]");
        assert!(
            broadcast(row)
                || zero_step(&row.layout)
                || row
                    .violations
                    .iter()
                    .all(|violation| names_one(&violation.message)),
            "{row:#?}"
        );
        assert!(
            row.violations
                .iter()
                .all(|violation| [Rule::Values.id(), Rule::NoError.id()]
                    .contains(&violation.rule.as_str())),
            "{row:#?}"
        );
    }
}

/// A provider that declares no broadcast views is staged one just outside
/// its declaration by capability honesty, and only there: the view of that
/// case has the broadcast kind and no other (that drawn cases stay inside
/// is `capabilities.rs`'s vendor, which refuses zero strides and passes).
#[test]
fn an_undeclared_broadcast_is_staged_only_as_an_outside_case() {
    let declared = Capabilities::all().views(
        ViewKinds::ALL
            .iter()
            .filter(|kind| *kind != ViewKind::Broadcast)
            .collect::<ViewKinds>(),
    );
    let outside = declared.outside_cases().unwrap();
    let broadcasts: Vec<_> = outside
        .iter()
        .filter(|case| case.why.contains("broadcast views"))
        .collect();
    assert!(!broadcasts.is_empty(), "{outside:#?}");
    for case in broadcasts {
        let Layout::View(spec) = case.case.layout() else {
            panic!("{case:#?}");
        };
        assert_eq!(
            ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset()),
            ViewKinds::from([ViewKind::Broadcast])
        );
    }
}
