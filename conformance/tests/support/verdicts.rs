//! What the vendor-style tests assert of a suite's report: the replay line
//! a failure prints, and a control route on which no rule fails.

use tenferro_transfer_conformance::prelude::{ProviderSuite, Report, Rule, RuleVerdict};
use tenferro_transfer_conformance::{CaseResult, Verdict};

/// The recipe JSON of the first replay line in `text` (a rule's failure).
pub fn replay_json(text: &str) -> &str {
    text.split("TRANSFER_CONFORMANCE_REPLAY='")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no replay line: {text}"))
}

/// No rule of `rules` fails on `route` of `suite`'s `report` (a pass or a
/// skip each).
pub fn no_rule_fails<'a>(
    suite: &ProviderSuite,
    report: &Report,
    route: &str,
    rules: impl IntoIterator<Item = &'a Rule>,
) {
    for rule in rules {
        let verdict = suite.check(report, route, *rule);
        assert!(
            !matches!(verdict, RuleVerdict::Fail(_)),
            "{route}, {rule}: {verdict:?}"
        );
    }
}

/// The rows of `route` in `report` that failed.
pub fn failing_rows<'r>(report: &'r Report, route: &str) -> Vec<&'r CaseResult> {
    report
        .rows()
        .iter()
        .filter(|row| row.route.starts_with(&format!("{route} (")) && row.verdict == Verdict::Fail)
        .collect()
}
