//! Broadcast views (a zero stride, as tenferro's `broadcast_in_dim_view`
//! makes them) reach every provider: the fixed `broadcast-view` and the
//! generator's views with a zero step, where the declared view kinds
//! admit them.

use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::strategy::{Capabilities, ViewKind, ViewKinds};
use tenferro_transfer_conformance::{CaseResult, Verdict};

use crate::support::fast_path::{CompactFastPath, LayoutCheck};

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
    let suite = ProviderSuite::new("fast-path", Level::V2)
        .route(
            "knows_broadcasts",
            Route::host_to_sim,
            CompactFastPath::factory(LayoutCheck::RIGHT),
        )
        .route(
            "zero_is_still",
            Route::host_to_sim,
            CompactFastPath::factory(LayoutCheck {
                zero_stride_is_still: true,
                ..LayoutCheck::RIGHT
            }),
        )
        .profile(Profile::Quick)
        .seed(1);
    let report = suite.run();
    crate::support::verdicts::no_rule_fails(&suite, &report, "knows_broadcasts", Level::V2.rules());
    let rows = |route: &str| -> Vec<&CaseResult> {
        report
            .rows()
            .iter()
            .filter(|row| row.route.starts_with(&format!("{route} (")))
            .collect()
    };
    let moved = rows("knows_broadcasts");
    assert!(
        moved
            .iter()
            .any(|row| row.shape == [3, 2] && broadcast(row)),
        "the fixed broadcast view was not moved:\n{}",
        report.to_table()
    );
    let failing: Vec<&CaseResult> = rows("zero_is_still")
        .into_iter()
        .filter(|row| row.verdict == Verdict::Fail)
        .collect();
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

/// A provider that declares no broadcast views is never handed one, but
/// capability honesty stages one just outside its declaration: a typed
/// refusal there is right.
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
