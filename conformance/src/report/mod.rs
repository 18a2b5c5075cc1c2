//! The suite's report: one row per case, rendered as a table, JSON,
//! a Markdown matrix or JUnit XML.
//!
//! The JSON form is documented field by field in `docs/report-format.md`.

mod junit;
mod markdown;
mod matrix;
mod table;
mod text;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tenferro_transfer_harness::{Judgement, Unchecked, Violation};

use crate::record::CaseRecord;

pub use matrix::{Mark, RouteMatrix, RuleMatrix, RuleTally};

/// A case's verdict.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every checked rule held.
    Pass,
    /// At least one rule was broken, or the case could not run.
    Fail,
    /// The case was not run; the reason is in the row. Never a pass.
    Skip,
}

/// The rule id a [`ViolationRow`] carries when the harness itself could not
/// run the case: a setup failure, not a rule the provider broke.
pub const SETUP: &str = "setup";

/// One violation in a report row: the rule id (or [`SETUP`] when the harness
/// itself could not run the case) and its message.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
pub struct ViolationRow {
    /// Rule id.
    pub rule: String,
    /// What was wrong.
    pub message: String,
}

impl From<&Violation> for ViolationRow {
    fn from(violation: &Violation) -> Self {
        Self {
            rule: violation.rule.id().to_owned(),
            message: violation.message.clone(),
        }
    }
}

/// One case of the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseResult {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Dtype, e.g. `F32`.
    pub dtype: String,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// Layout label.
    pub layout: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Every violation.
    pub violations: Vec<ViolationRow>,
    /// Rules not checked on this case, with why.
    pub unchecked: Vec<Unchecked>,
    /// Device failures the provider correctly passed on as a typed `Err`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_errors: Vec<String>,
    /// Why the case was skipped, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// The recipe (one line of JSON) that replays this case alone, where
    /// the case has one: `TRANSFER_CONFORMANCE_REPLAY` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl CaseResult {
    /// A row from the oracle's judgement.
    pub fn judged(head: RowHead, judgement: Judgement) -> Self {
        let verdict = if judgement.passed() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        Self {
            violations: judgement
                .violations
                .iter()
                .map(ViolationRow::from)
                .collect(),
            unchecked: judgement.unchecked,
            expected_errors: judgement.expected_errors,
            ..Self::bare(head, verdict)
        }
    }

    /// A row whose verdict follows from its violations: `fail` with at
    /// least one, `pass` with none. What a failure kept from an earlier
    /// run (a generated case that failed once, a concurrent call) becomes.
    pub fn from_violations(
        head: RowHead,
        violations: Vec<ViolationRow>,
        unchecked: Vec<Unchecked>,
    ) -> Self {
        let verdict = if violations.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        Self {
            violations,
            unchecked,
            ..Self::bare(head, verdict)
        }
    }

    /// Make the verdict agree with the violations: a row with a violation
    /// fails; a row marked `fail` without one gets a [`SETUP`] violation
    /// that says so, so it fails every rule test instead of failing only
    /// the summary.
    fn settle(&mut self) {
        if !self.violations.is_empty() {
            self.verdict = Verdict::Fail;
        } else if self.verdict == Verdict::Fail {
            self.violations.push(ViolationRow {
                rule: SETUP.to_owned(),
                message: "the case was marked failed without naming a rule it broke (a harness bug; please report it); it fails every rule test so that the failure is not lost".to_owned(),
            });
        }
    }

    /// A row with `verdict` and nothing else.
    fn bare(head: RowHead, verdict: Verdict) -> Self {
        Self {
            provider: head.provider,
            route: head.route,
            dtype: head.dtype,
            shape: head.shape,
            layout: head.layout,
            verdict,
            violations: Vec::new(),
            unchecked: Vec::new(),
            expected_errors: Vec::new(),
            skip_reason: None,
            replay: None,
        }
    }

    /// The row with the recipe that replays its case alone.
    #[must_use]
    pub fn with_replay(mut self, recipe: &tenferro_transfer_harness::strategy::Recipe) -> Self {
        self.replay = Some(recipe.to_json());
        self
    }

    /// A failed row for a case the harness could not run.
    pub fn setup_failure(head: RowHead, message: String) -> Self {
        Self {
            violations: vec![ViolationRow {
                rule: SETUP.to_owned(),
                message,
            }],
            ..Self::bare(head, Verdict::Fail)
        }
    }

    /// Whether the harness could not run this case (a [`SETUP`] violation).
    pub fn is_setup_failure(&self) -> bool {
        self.violations
            .iter()
            .any(|violation| violation.rule == SETUP)
    }

    /// Whether the oracle judged this case: it ran, and was not skipped.
    pub fn was_judged(&self) -> bool {
        self.verdict != Verdict::Skip && !self.is_setup_failure()
    }

    /// A skipped row.
    pub fn skipped(head: RowHead, reason: String) -> Self {
        Self {
            skip_reason: Some(reason),
            ..Self::bare(head, Verdict::Skip)
        }
    }
}

/// What identifies a row.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
pub struct RowHead {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Dtype name.
    pub dtype: String,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// Layout label.
    pub layout: String,
}

/// Counts of verdicts.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
}

/// The suite's report.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::{builtin_provider, run_fixed_suite, SuiteOptions};
/// use tenferro_tensor::DType;
///
/// let provider = builtin_provider("sim-peer").unwrap();
/// let report = run_fixed_suite(&[*provider], &SuiteOptions::quick(&[DType::F32]));
/// assert!(report.to_table().ends_with(&format!(
///     "summary: {} passed, 0 failed, 0 skipped\n",
///     report.summary.passed
/// )));
/// assert!(report.to_markdown().contains("| `values` |"));
/// assert!(report.to_junit().unwrap().starts_with("<?xml"));
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// One row per case.
    pub results: Vec<CaseResult>,
    /// Verdict counts.
    pub summary: Summary,
    /// The typed records the rows were computed from (a `ProviderSuite`'s
    /// run); not part of the JSON.
    #[serde(skip)]
    records: Vec<CaseRecord>,
}

impl Report {
    /// The report of `records`: one row per record, computed from it, and
    /// the summary of their outcomes. What a `ProviderSuite`'s run returns.
    pub fn from_records(records: Vec<CaseRecord>) -> Self {
        let mut report = Report::default();
        for record in &records {
            report.push(record.row());
        }
        report.records = records;
        report
    }

    /// The typed records the rows were computed from: a `ProviderSuite`'s
    /// run has one per row; a report built row by row (the CLI's) or read
    /// back from JSON has none.
    pub fn records(&self) -> &[CaseRecord] {
        &self.records
    }

    /// Add a row and count it.
    ///
    /// The row's verdict is made to agree with its violations first: a row
    /// with a violation is counted as failed, and a row marked failed
    /// without one is given a [`SETUP`] violation. So every failed row of a
    /// report names what failed, and every failure the summary counts
    /// fails at least one rule test.
    pub fn push(&mut self, mut result: CaseResult) {
        result.settle();
        match result.verdict {
            Verdict::Pass => self.summary.passed += 1,
            Verdict::Fail => self.summary.failed += 1,
            Verdict::Skip => self.summary.skipped += 1,
        }
        self.results.push(result);
    }

    /// Whether any case failed.
    pub fn failed(&self) -> bool {
        self.summary.failed > 0
    }

    /// What the run amounts to; the CLI's exit code follows it.
    pub fn outcome(&self) -> RunOutcome {
        if self.summary.failed > 0 {
            RunOutcome::Failed
        } else if self.summary.passed == 0 {
            RunOutcome::NothingChecked
        } else {
            RunOutcome::Passed
        }
    }

    /// The report as pretty JSON, in the schema of `docs/report-format.md`.
    ///
    /// # Errors
    ///
    /// Returns serde_json's error if serialisation fails.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The report in `format`, without colour.
    ///
    /// # Errors
    ///
    /// Returns [`ReportError::Json`] or [`ReportError::Xml`] if JSON or XML
    /// writing fails.
    pub fn render(&self, format: ReportFormat) -> Result<String, ReportError> {
        Ok(match format {
            ReportFormat::Table => self.to_table(),
            ReportFormat::Json => self.to_json().map_err(ReportError::Json)?,
            ReportFormat::Markdown => self.to_markdown(),
            ReportFormat::Junit => self.to_junit()?,
        })
    }
}

/// What a run amounts to.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// No case failed and at least one passed (some may be skipped).
    Passed,
    /// At least one case failed.
    Failed,
    /// No case failed and none passed: every case was skipped, or there was
    /// none. Never a pass.
    NothingChecked,
}

impl RunOutcome {
    /// The CLI's exit code: 0 passed, 1 failed, 3 nothing checked (2 is bad
    /// usage, decided before a run).
    pub fn exit_code(self) -> u8 {
        match self {
            RunOutcome::Passed => 0,
            RunOutcome::Failed => 1,
            RunOutcome::NothingChecked => 3,
        }
    }
}

/// A report format.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum ReportFormat {
    /// Aligned text, one row per case ([`Report::to_table`]).
    #[default]
    Table,
    /// JSON ([`Report::to_json`]).
    Json,
    /// A rules x routes x dtypes matrix ([`Report::to_markdown`]).
    Markdown,
    /// JUnit XML ([`Report::to_junit`]).
    Junit,
}

impl ReportFormat {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [ReportFormat; 4] = [
        ReportFormat::Table,
        ReportFormat::Json,
        ReportFormat::Markdown,
        ReportFormat::Junit,
    ];

    /// The name the CLI takes, e.g. `markdown`.
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Table => "table",
            ReportFormat::Json => "json",
            ReportFormat::Markdown => "markdown",
            ReportFormat::Junit => "junit",
        }
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReportFormat {
    type Err = ReportError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| ReportError::UnknownFormat {
                name: name.to_owned(),
            })
    }
}

/// A report that cannot be rendered or a format that does not exist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// JSON serialisation failed.
    #[error("cannot serialise the report as JSON")]
    Json(#[source] serde_json::Error),
    /// The XML writer failed.
    #[error("cannot write the report as JUnit XML")]
    Xml(#[source] std::io::Error),
    /// No format has that name.
    #[error("unknown report format `{name}`; known formats: table, json, markdown, junit")]
    UnknownFormat {
        /// The name given.
        name: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> RowHead {
        RowHead {
            provider: "p".to_owned(),
            route: "a->b".to_owned(),
            dtype: "F32".to_owned(),
            shape: vec![2],
            layout: "owned".to_owned(),
        }
    }

    #[test]
    fn a_run_that_judged_nothing_is_not_a_pass() {
        let mut report = Report::default();
        assert_eq!(report.outcome(), RunOutcome::NothingChecked);
        report.push(CaseResult::skipped(head(), "no GPU".to_owned()));
        assert_eq!(report.outcome(), RunOutcome::NothingChecked);
        assert_eq!(report.outcome().exit_code(), 3);
        report.push(CaseResult::judged(head(), Judgement::default()));
        assert_eq!(report.outcome(), RunOutcome::Passed);
        assert_eq!(report.outcome().exit_code(), 0);
        report.push(CaseResult::setup_failure(head(), "no route".to_owned()));
        assert_eq!(report.outcome(), RunOutcome::Failed);
        assert_eq!(report.outcome().exit_code(), 1);
    }

    #[test]
    fn formats_parse_from_their_names() {
        for format in ReportFormat::ALL {
            assert_eq!(format.name().parse::<ReportFormat>().unwrap(), format);
        }
        assert!(matches!(
            "yaml".parse::<ReportFormat>(),
            Err(ReportError::UnknownFormat { .. })
        ));
    }

    #[test]
    fn the_table_names_rules_checked_on_only_some_cases() {
        let mut report = Report::default();
        report.push(CaseResult::judged(head(), Judgement::default()));
        let unchecked = Judgement {
            unchecked: vec![Unchecked {
                rule: tenferro_transfer_harness::Rule::Completion,
                reason: "cannot tell".to_owned(),
            }],
            ..Judgement::default()
        };
        report.push(CaseResult::judged(head(), unchecked));
        let table = report.to_table();
        assert!(
            table.contains("not checked on some cases (never counted as a pass):\n    completion (1 of 2): cannot tell"),
            "{table}"
        );
        assert!(!table.contains("not checked on any case"), "{table}");
    }
}
