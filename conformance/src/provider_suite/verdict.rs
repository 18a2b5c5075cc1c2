//! A rule's verdict on one route, read from the report's typed rows: what
//! one macro-generated `#[test]` asserts.

use std::collections::BTreeMap;

use tenferro_transfer_harness::Rule;

use crate::Level;
use crate::generated::{REPLAY_ENV, shell_quote};
use crate::report::{CaseResult, Report, Verdict, ViolationRow};

/// The verdict of one rule on one route, as a `#[test]` reports it.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum RuleVerdict {
    /// The rule was checked on `cases` cases and held on every one.
    Pass {
        /// Cases on which the rule was checked.
        cases: usize,
    },
    /// The rule was broken (or the route could not run); the text names
    /// each failing case and how to replay it.
    Fail(String),
    /// The rule was checked on no case of the route; the text says why.
    /// Never a pass.
    Skip(String),
}

impl RuleVerdict {
    /// Whether the rule held on every case where it was checked, and was
    /// checked on at least one.
    pub fn is_pass(&self) -> bool {
        matches!(self, Self::Pass { .. })
    }

    /// `pass`, `fail` or `skip`.
    pub fn verdict_name(&self) -> &'static str {
        match self {
            Self::Pass { .. } => "pass",
            Self::Fail(_) => "fail",
            Self::Skip(_) => "skip",
        }
    }
}

/// Environment variable that turns a skipped rule test into a failure.
pub const NO_SKIP_ENV: &str = "TRANSFER_CONFORMANCE_NO_SKIP";

/// How many failing cases a rule test lists before it summarises.
pub(super) const LISTED_FAILURES: usize = 5;

/// Whether `row` fails every rule test of `level`: it could not be set up,
/// or it failed without a violation of any rule of the level (which
/// [`Report::push`] already makes impossible; this keeps a report built by
/// other means from failing in its summary while every rule test passes).
fn fails_every_rule(row: &CaseResult, level: Level) -> bool {
    row.is_setup_failure()
        || (row.verdict == Verdict::Fail
            && !row
                .violations
                .iter()
                .any(|violation| level.rules().iter().any(|rule| rule.id() == violation.rule)))
}

/// The verdict of `rule` on the rows of route `route`.
pub(super) fn check_rule(
    report: &Report,
    route: &str,
    rule: Rule,
    level: Level,
    cargo_test: &str,
) -> RuleVerdict {
    let rows: Vec<&CaseResult> = report
        .results
        .iter()
        .filter(|row| row.route.split(' ').next() == Some(route))
        .collect();
    let setup: Vec<&CaseResult> = rows
        .iter()
        .copied()
        .filter(|row| fails_every_rule(row, level))
        .collect();
    let mut failing: Vec<(&CaseResult, &ViolationRow)> = rows
        .iter()
        .flat_map(|row| {
            row.violations
                .iter()
                .filter(|violation| violation.rule == rule.id())
                .map(move |violation| (*row, violation))
        })
        .collect();
    // The generated run's failure is minimal and replayable: list it first.
    failing.sort_by_key(|(row, _)| !row.layout.starts_with("generated:"));
    if !failing.is_empty() || !setup.is_empty() {
        let mut text = format!(
            "rule {rule} failed on route {route}: {} case(s) broke it{}\n  rule: {}\n",
            failing.len(),
            if setup.is_empty() {
                String::new()
            } else {
                format!(", {} could not be set up", setup.len())
            },
            rule.statement()
        );
        for (row, violation) in failing.iter().take(LISTED_FAILURES) {
            text.push_str(&format!(
                "\ncase: {} {:?} {}\n  {}\n",
                row.dtype,
                row.shape,
                row.layout,
                violation.message.replace('\n', "\n  ")
            ));
            match &row.replay {
                Some(json) if !violation.message.contains("replay:") => {
                    text.push_str(&format!(
                        "  replay: {REPLAY_ENV}={} {cargo_test} {route}::{}\n",
                        shell_quote(json),
                        rule.id().replace('-', "_")
                    ));
                }
                _ => {}
            }
        }
        if failing.len() > LISTED_FAILURES {
            text.push_str(&format!(
                "\n... and {} more case(s)\n",
                failing.len() - LISTED_FAILURES
            ));
        }
        for row in setup.iter().take(LISTED_FAILURES) {
            for violation in &row.violations {
                text.push_str(&format!(
                    "\n{}: {}\n",
                    violation.rule,
                    violation.message.replace('\n', "\n  ")
                ));
            }
        }
        return RuleVerdict::Fail(text);
    }
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut checked = 0;
    for row in &rows {
        match (
            row.unchecked.iter().find(|item| item.rule == rule),
            &row.skip_reason,
        ) {
            (Some(item), _) => *reasons.entry(item.reason.as_str()).or_default() += 1,
            (None, None) => checked += 1,
            (None, Some(reason)) => *reasons.entry(reason.as_str()).or_default() += 1,
        }
    }
    if checked > 0 {
        return RuleVerdict::Pass { cases: checked };
    }
    if rows.is_empty() {
        return RuleVerdict::Fail(format!(
            "route {route} has no rows in the report: it was not run"
        ));
    }
    let reasons: Vec<String> = reasons
        .into_iter()
        .map(|(reason, count)| format!("{reason} ({count} case(s))"))
        .collect();
    RuleVerdict::Skip(format!(
        "rule {rule} was not checked on any case of route {route}: {}",
        reasons.join("; ")
    ))
}
