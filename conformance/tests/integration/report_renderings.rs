//! The Markdown and JUnit renderings of a small real report (passes, a
//! failure from a broken provider, a setup failure and a skip): the JUnit
//! XML parsed back, escaping and cutting. Their insta snapshots are in
//! `snapshots.rs`.

use crate::support;

use tenferro_transfer_conformance::harness::{Rule, Violation};
use tenferro_transfer_conformance::record::{CaseOutcome, CaseRecord, Origin, Violations};
use tenferro_transfer_conformance::{Mark, Report, RowHead, RunOutcome, Verdict};

#[test]
fn the_small_report_has_a_pass_a_failure_a_setup_failure_and_a_skip() {
    let report = support::small_report();
    let verdicts: Vec<Verdict> = report.rows().iter().map(|row| row.verdict).collect();
    assert!(verdicts.contains(&Verdict::Pass));
    assert!(verdicts.contains(&Verdict::Skip));
    assert!(
        report
            .records()
            .iter()
            .any(|record| record.outcome.is_not_set_up())
    );
    assert!(report.rows().iter().any(|row| {
        row.verdict == Verdict::Fail
            && row
                .violations
                .iter()
                .any(|violation| violation.rule == "values")
    }));
    assert_eq!(report.outcome(), RunOutcome::Failed);
}

#[test]
fn the_matrix_marks_follow_the_cases_of_each_cell() {
    let matrix = support::small_report().rule_matrix();
    let values = matrix.rule_index("values").unwrap();
    let dtype = |name: &str| {
        matrix
            .dtypes
            .iter()
            .position(|dtype| dtype == name)
            .unwrap()
    };
    let route = |provider: &str| {
        matrix
            .routes
            .iter()
            .find(|route| route.provider == provider)
            .unwrap()
    };
    let upload = route("sim-upload");
    assert_eq!(upload.cells[values][dtype("F32")].mark(), Some(Mark::Pass));
    // One case of the F64 cell passed, the other could not be set up.
    assert_eq!(
        upload.cells[values][dtype("F64")].mark(),
        Some(Mark::PartlyChecked)
    );
    assert_eq!(upload.setup_failures[dtype("F64")], 1);
    // Every case of the C64 cell was skipped: not checked, never a pass.
    assert_eq!(
        upload.cells[values][dtype("C64")].mark(),
        Some(Mark::NotChecked)
    );
    assert_eq!(
        route("sim-download[one-ulp]").cells[values][dtype("F32")].mark(),
        Some(Mark::Fail)
    );
    // The err-on-valid provider returned no output: values were not checked.
    let peer = route("sim-peer[err-on-valid]");
    assert_eq!(
        peer.cells[values][dtype("F32")].mark(),
        Some(Mark::NotChecked)
    );
    let no_error = matrix.rule_index("no-error").unwrap();
    assert_eq!(peer.cells[no_error][dtype("F32")].mark(), Some(Mark::Fail));
    assert_eq!(peer.cells[values][dtype("I32")].mark(), None);
}

/// Every element with its attributes, and every non-blank text, in
/// document order; panics on XML that is not well formed.
fn parse(xml: &str) -> Vec<(String, Vec<(String, String)>)> {
    let document = roxmltree::Document::parse(xml).expect("well-formed XML");
    document
        .root()
        .descendants()
        .filter_map(|node| {
            if node.is_element() {
                let attributes = node
                    .attributes()
                    .map(|attribute| (attribute.name().to_owned(), attribute.value().to_owned()))
                    .collect();
                Some((node.tag_name().name().to_owned(), attributes))
            } else {
                let text = node
                    .text()
                    .filter(|text| node.is_text() && !text.trim().is_empty())?;
                Some((
                    "#text".to_owned(),
                    vec![("text".to_owned(), text.to_owned())],
                ))
            }
        })
        .collect()
}

fn attribute<'a>(element: &'a (String, Vec<(String, String)>), key: &str) -> &'a str {
    element
        .1
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
        .unwrap_or_else(|| panic!("{} has no {key}", element.0))
}

#[test]
fn junit_is_well_formed_and_counts_every_case() {
    let report = support::small_report();
    let elements = parse(&report.to_junit().unwrap());
    let count = |name: &str| elements.iter().filter(|element| element.0 == name).count();
    assert_eq!(count("testsuites"), 1);
    assert_eq!(count("testsuite"), 3);
    assert_eq!(count("testcase"), report.rows().len());
    assert_eq!(count("skipped"), 1);
    assert_eq!(count("error"), 1);
    assert_eq!(count("failure"), report.summary().failed - 1);
    let root = &elements[0];
    assert_eq!(attribute(root, "tests"), report.rows().len().to_string());
    assert_eq!(attribute(root, "skipped"), "1");
    assert_eq!(attribute(root, "errors"), "1");
    let failure = elements
        .iter()
        .find(|element| element.0 == "failure")
        .unwrap();
    assert_eq!(attribute(failure, "type"), "values");
}

#[test]
fn junit_and_markdown_escape_what_a_message_may_hold() {
    let nasty = "a <b> & \"c\" 'd' ]]> `e` | *f* \u{1}\nsecond line";
    let report = Report::from_records(vec![CaseRecord::new(
        "odd",
        Origin::Fixed,
        RowHead {
            provider: "odd|name`<x>".to_owned(),
            route: "a->b".to_owned(),
            dtype: "F32".to_owned(),
            shape: vec![2],
            layout: "owned".to_owned(),
        },
        CaseOutcome::Failed {
            violations: Violations::new(vec![Violation {
                rule: Rule::Values,
                message: nasty.to_owned(),
            }])
            .unwrap(),
            checked: Rule::ALL.to_vec(),
            unchecked: Vec::new(),
        },
    )]);
    let elements = parse(&report.to_junit().unwrap());
    let failure = elements
        .iter()
        .find(|element| element.0 == "failure")
        .unwrap();
    // The attribute is one line; the text keeps the message whole.
    assert_eq!(
        attribute(failure, "message"),
        "values: a <b> & \"c\" 'd' ]]> `e` | *f* \\u{1} second line"
    );
    let text = elements
        .iter()
        .find(|element| element.0 == "#text")
        .unwrap();
    assert_eq!(
        attribute(text, "text"),
        "values: a <b> & \"c\" 'd' ]]> `e` | *f* \\u{1}\nsecond line"
    );
    let suite = elements
        .iter()
        .find(|element| element.0 == "testsuite")
        .unwrap();
    assert_eq!(attribute(suite, "name"), "odd|name`<x> on a->b");

    let markdown = report.to_markdown();
    // The provider's heading is a code span that a backtick cannot end, and
    // the pipe cannot split a table.
    assert!(
        markdown.contains("### ``odd\\|name`<x>`` on `a->b`"),
        "{markdown}"
    );
    // The message sits in a fenced block, untouched.
    assert!(
        markdown.contains("  values: a <b> & \"c\" 'd' ]]> `e` | *f*"),
        "{markdown}"
    );
}

#[test]
fn long_messages_are_cut_in_markdown_but_whole_in_junit() {
    let long = "x".repeat(2000);
    let mut record = support::setup_failure("sim-upload", tenferro_tensor::DType::F32);
    record.outcome = tenferro_transfer_conformance::record::CaseOutcome::NotSetUp {
        message: long.clone(),
    };
    let report = Report::from_records(vec![record]);
    let markdown = report.to_markdown();
    assert!(markdown.contains(&format!("{} … (1400 more characters)", "x".repeat(600))));
    assert!(!markdown.contains(&"x".repeat(601)));
    assert!(report.to_junit().unwrap().contains(&long));
}
