//! A verdict is computed once: for any sequence of case records,
//! over every origin and every kind of outcome (passes, failures, skips,
//! cases not set up, summed generated and concurrent records), each rule's
//! test passes on exactly the records whose judgement checked it, and the
//! summary, the rows, the matrix and every rule test agree.

use proptest::prelude::*;
use tenferro_transfer_conformance::harness::strategy::Profile;
use tenferro_transfer_conformance::harness::{Rule, Unchecked, Violation};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::record::{CaseOutcome, CaseRecord, Origin, Violations};
use tenferro_transfer_conformance::{Mark, RowHead, RuleVerdict, Verdict};

fn origin() -> impl Strategy<Value = Origin> {
    prop_oneof![
        Just(Origin::Route),
        Just(Origin::Fixed),
        any::<u64>().prop_map(|seed| Origin::Generated {
            seed,
            profile: Profile::Quick
        }),
        Just(Origin::Outside {
            why: "dtype".to_owned()
        }),
        any::<u64>().prop_map(|seed| Origin::Concurrent { seed }),
        Just(Origin::Replayed),
    ]
}

/// A subset of the catalogue, as a bit mask.
fn rules(mask: u32) -> Vec<Rule> {
    Rule::ALL
        .into_iter()
        .enumerate()
        .filter(|(index, _)| mask & (1 << index) != 0)
        .map(|(_, rule)| rule)
        .collect()
}

fn outcome() -> impl Strategy<Value = CaseOutcome> {
    let judged = (any::<u32>(), any::<u32>(), any::<bool>()).prop_map(|(checked, broken, list)| {
        let checked = rules(checked);
        // Only a checked rule can be broken.
        let broken: Vec<Rule> = rules(broken)
            .into_iter()
            .filter(|rule| checked.contains(rule))
            .collect();
        // Some judgements list why a rule was not checked, some do not: a
        // rule listed nowhere is not checked either.
        let unchecked: Vec<Unchecked> = Rule::ALL
            .into_iter()
            .filter(|rule| list && !checked.contains(rule))
            .map(|rule| Unchecked {
                rule,
                reason: format!("{rule} cannot be seen here"),
            })
            .collect();
        let violations: Vec<Violation> = broken
            .iter()
            .map(|&rule| Violation {
                rule,
                message: format!("{rule} broke"),
            })
            .collect();
        match Violations::new(violations) {
            Some(violations) => CaseOutcome::Failed {
                violations,
                checked,
                unchecked,
            },
            None => CaseOutcome::Passed { checked, unchecked },
        }
    });
    prop_oneof![
        4 => judged,
        1 => Just(CaseOutcome::NotSetUp { message: "no rig".to_owned() }),
        1 => Just(CaseOutcome::Skipped { reason: "no device".to_owned() }),
    ]
}

/// A record, or several summed into one (what the generated and the
/// concurrent runs record when they pass).
fn record() -> impl Strategy<Value = CaseRecord> {
    let one = (origin(), outcome(), 0_usize..3).prop_map(|(origin, outcome, dtype)| {
        CaseRecord::new("route", origin, head(dtype), outcome)
    });
    let summed =
        (prop::collection::vec(outcome(), 1..6), any::<u64>()).prop_map(|(outcomes, seed)| {
            let outcome = CaseOutcome::summed(outcomes.iter()).unwrap_or(CaseOutcome::Skipped {
                reason: "no case ran".to_owned(),
            });
            CaseRecord::new("route", Origin::Concurrent { seed }, head(0), outcome)
        });
    prop_oneof![4 => one, 1 => summed]
}

fn head(dtype: usize) -> RowHead {
    RowHead {
        provider: "p".to_owned(),
        route: "route (a->b)".to_owned(),
        dtype: ["F32", "I64", "C64"][dtype].to_owned(),
        shape: vec![2],
        layout: "owned".to_owned(),
    }
}

fn suite() -> ProviderSuite {
    // Never run: it only reads the records of the reports below.
    ProviderSuite::new("p", Level::LATEST)
        .route("route", Route::host_to_sim, |_| Err("never built".into()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_rendering_and_rule_test_agrees_with_the_records(records in prop::collection::vec(record(), 0..24)) {
        let report = Report::from_records(records.clone());
        let suite = suite();
        // Rows and summary are the records'.
        prop_assert_eq!(report.rows().len(), records.len());
        for (row, record) in report.rows().iter().zip(&records) {
            prop_assert_eq!(row.verdict, record.outcome.verdict());
        }
        let count = |verdict| records.iter().filter(|record| record.outcome.verdict() == verdict).count();
        let summary = report.summary();
        prop_assert_eq!(summary.passed, count(Verdict::Pass));
        prop_assert_eq!(summary.failed, count(Verdict::Fail));
        prop_assert_eq!(summary.skipped, count(Verdict::Skip));
        let matrix = report.rule_matrix();
        for rule in Level::LATEST.rules() {
            let verdict = suite.check(&report, "route", *rule);
            let broken = records.iter().any(|record| record.outcome.breaks(*rule) || record.outcome.is_not_set_up());
            let checked = records.iter().filter(|record| record.outcome.checked(*rule)).count();
            match verdict {
                RuleVerdict::Fail(_) => prop_assert!(broken || records.is_empty(), "{rule}: fail without a failure"),
                RuleVerdict::Pass { cases } => {
                    prop_assert!(!broken, "{rule}: pass over a failure");
                    prop_assert_eq!(cases, checked, "{}: pass count", rule);
                }
                RuleVerdict::Skip(_) => {
                    prop_assert!(!broken, "{rule}: skip over a failure");
                    prop_assert_eq!(checked, 0, "{}: skipped though checked", rule);
                }
                other => prop_assert!(false, "{rule}: {other:?}"),
            }
            // The matrix holds the rule on exactly the records that
            // checked it and did not break it.
            let index = matrix.rule_index(rule.id()).unwrap();
            let held: usize = matrix.cells_of(index).map(|tally| tally.held).sum();
            let violated: usize = matrix.cells_of(index).map(|tally| tally.violated).sum();
            let held_records = records.iter().filter(|record| record.outcome.checked(*rule) && !record.outcome.breaks(*rule)).count();
            let broke_records = records.iter().filter(|record| record.outcome.breaks(*rule)).count();
            prop_assert_eq!(held, held_records);
            prop_assert_eq!(violated, broke_records);
            if held_records == 0 && broke_records == 0 {
                let marks: Vec<Option<Mark>> = matrix.cells_of(index).map(|tally| tally.mark()).collect();
                prop_assert!(!marks.contains(&Some(Mark::Pass)), "{rule}: a cell passes a rule nothing checked");
            }
        }
    }
}
