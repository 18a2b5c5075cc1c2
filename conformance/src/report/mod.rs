//! The suite's report: one row per case, rendered as a table, JSON,
//! a Markdown matrix or JUnit XML.
//!
//! The JSON form is documented field by field in `docs/report-format.md`.

mod coverage;
mod junit;
mod kept;
mod markdown;
mod matrix;
mod table;
mod text;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize, Serializer};
use tenferro_transfer_harness::{Unchecked, Violation};

use crate::record::{CaseOutcome, CaseRecord};

pub use crate::record::{RowHead, SETUP, Verdict};
pub use coverage::{CoverageGap, KindCount, RouteCoverage, RuleCoverage};
pub use kept::KeptSummary;
pub use matrix::{Mark, RouteMatrix, RuleMatrix, RuleTally};

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

/// One row of the report, as the JSON writes it: computed from a
/// [`CaseRecord`], never built on its own.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Memory the devices kept after the case that repeating it did not
    /// grow: what the provider keeps and reuses (not a leak).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_memory: Vec<tenferro_transfer_harness::KeptMemory>,
}

/// What failed in `outcome`, as a row writes it: each violation, or one
/// [`SETUP`] row for a case not set up.
pub(crate) fn violation_rows(outcome: &CaseOutcome) -> Vec<ViolationRow> {
    match outcome {
        CaseOutcome::NotSetUp { message } => vec![ViolationRow {
            rule: SETUP.to_owned(),
            message: message.clone(),
        }],
        judged => judged.violations().iter().map(ViolationRow::from).collect(),
    }
}

impl From<&CaseRecord> for CaseResult {
    fn from(record: &CaseRecord) -> Self {
        let head = record.head.clone();
        let outcome = &record.outcome;
        let violations = violation_rows(outcome);
        Self {
            provider: head.provider,
            route: head.route,
            dtype: head.dtype,
            shape: head.shape,
            layout: head.layout,
            verdict: outcome.verdict(),
            violations,
            unchecked: outcome.unchecked().to_vec(),
            expected_errors: record.expected_errors.clone(),
            skip_reason: match outcome {
                CaseOutcome::Skipped { reason } => Some(reason.clone()),
                _ => None,
            },
            replay: record.replay.clone(),
            kept_memory: record.kept_memory.clone(),
        }
    }
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

/// The suite's report: its typed records, and the rows and summary
/// computed from them. Nothing can be added to a report but a record, so
/// the rows, the summary, each rule's verdict and every rendering agree.
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
///     report.summary().passed
/// )));
/// assert_eq!(report.rows().len(), report.records().len());
/// assert!(report.to_markdown().contains("| `values` |"));
/// assert!(report.to_junit().unwrap().starts_with("<?xml"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The typed records, one per case.
    records: Vec<CaseRecord>,
    /// One row per record, computed from it.
    rows: Vec<CaseResult>,
    /// Verdict counts of the records.
    summary: Summary,
}

/// The JSON of a report: its rows (`results`) and its summary, as
/// `docs/report-format.md` describes them.
impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            results: &'a [CaseResult],
            summary: Summary,
            coverage: Vec<RouteCoverage>,
            to_act_on: Vec<CoverageGap>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            kept_memory: Vec<KeptSummary>,
        }
        Json {
            results: &self.rows,
            summary: self.summary,
            coverage: self.coverage(),
            to_act_on: self.coverage_gaps(),
            kept_memory: self.kept_memory(),
        }
        .serialize(serializer)
    }
}

impl Report {
    /// The report of `records`: one row per record, computed from it, and
    /// the summary of their outcomes.
    pub fn from_records(records: Vec<CaseRecord>) -> Self {
        let mut summary = Summary::default();
        for record in &records {
            match record.outcome.verdict() {
                Verdict::Pass => summary.passed += 1,
                Verdict::Fail => summary.failed += 1,
                Verdict::Skip => summary.skipped += 1,
            }
        }
        let rows = records.iter().map(CaseResult::from).collect();
        Self {
            records,
            rows,
            summary,
        }
    }

    /// The typed records, one per case.
    pub fn records(&self) -> &[CaseRecord] {
        &self.records
    }

    /// One row per record, in the same order.
    pub fn rows(&self) -> &[CaseResult] {
        &self.rows
    }

    /// Each record with its row.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&CaseRecord, &CaseResult)> {
        self.records.iter().zip(&self.rows)
    }

    /// The verdict counts.
    pub fn summary(&self) -> Summary {
        self.summary
    }

    /// Whether any case failed.
    pub fn failed(&self) -> bool {
        self.summary().failed > 0
    }

    /// What the run amounts to; the CLI's exit code follows it.
    pub fn outcome(&self) -> RunOutcome {
        if self.summary().failed > 0 {
            RunOutcome::Failed
        } else if self.summary().passed == 0 {
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
    use crate::record::Origin;
    use tenferro_transfer_harness::Rule;

    fn head() -> RowHead {
        RowHead {
            provider: "p".to_owned(),
            route: "a->b".to_owned(),
            dtype: "F32".to_owned(),
            shape: vec![2],
            layout: "owned".to_owned(),
        }
    }

    fn record(outcome: CaseOutcome) -> CaseRecord {
        CaseRecord::new("p", Origin::Fixed, head(), outcome)
    }

    fn passed(unchecked: Vec<Unchecked>) -> CaseOutcome {
        CaseOutcome::Passed {
            checked: Rule::ALL
                .into_iter()
                .filter(|rule| !unchecked.iter().any(|item| item.rule == *rule))
                .collect(),
            unchecked,
        }
    }

    #[test]
    fn a_run_that_judged_nothing_is_not_a_pass() {
        let mut records = Vec::new();
        assert_eq!(
            Report::from_records(records.clone()).outcome(),
            RunOutcome::NothingChecked
        );
        records.push(record(CaseOutcome::Skipped {
            reason: "no GPU".to_owned(),
        }));
        let report = Report::from_records(records.clone());
        assert_eq!(report.outcome(), RunOutcome::NothingChecked);
        assert_eq!(report.outcome().exit_code(), 3);
        records.push(record(passed(Vec::new())));
        let report = Report::from_records(records.clone());
        assert_eq!(report.outcome(), RunOutcome::Passed);
        assert_eq!(report.outcome().exit_code(), 0);
        records.push(record(CaseOutcome::NotSetUp {
            message: "no route".to_owned(),
        }));
        let report = Report::from_records(records);
        assert_eq!(report.outcome(), RunOutcome::Failed);
        assert_eq!(report.outcome().exit_code(), 1);
        assert_eq!(report.rows()[2].violations[0].rule, SETUP);
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

    /// A record of one owned small F32 case on which every rule but
    /// `unchecked`'s was judged.
    fn covered(unchecked: Vec<Unchecked>) -> CaseRecord {
        let outcome = passed(unchecked);
        let CaseOutcome::Passed { checked, .. } = &outcome else {
            unreachable!("passed() is a pass")
        };
        let mut coverage = crate::coverage::Coverage::default();
        let case = tenferro_transfer_harness::Case::from_values(vec![2], vec![1.0_f32, 2.0])
            .expect("a case");
        coverage.add_kind(crate::coverage::CaseKind::of(&case), checked.clone(), 1);
        record(outcome).with_coverage(coverage)
    }

    #[test]
    fn the_footer_names_only_rules_checked_nowhere_with_the_reason() {
        let unchecked = |rule| Unchecked {
            rule,
            reason: "cannot tell".to_owned(),
        };
        let report = Report::from_records(vec![
            covered(vec![unchecked(Rule::Completion), unchecked(Rule::Values)]),
            covered(vec![unchecked(Rule::Completion)]),
        ]);
        let table = report.to_table();
        assert!(
            table.contains("to act on (never counted as a pass):\n    completion: checked on no case: cannot tell\n\n"),
            "{table}"
        );
        // `values` was checked on one of the two cases: nothing to act on.
        assert!(!table.contains("    values:"), "{table}");
    }

    #[test]
    fn records_without_coverage_leave_the_footer_empty() {
        let report = Report::from_records(vec![record(passed(Vec::new()))]);
        assert!(report.coverage_gaps().is_empty());
        assert!(
            !report.to_table().contains("to act on"),
            "{}",
            report.to_table()
        );
    }
}
