//! The suite's report: one row per case, rendered as a table or JSON.

use std::fmt::Write as _;

use serde::Serialize;
use tenferro_transfer_harness::{Judgement, Rule, Unchecked, Violation};

/// A case's verdict.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every checked rule held.
    Pass,
    /// At least one rule was broken, or the case could not run.
    Fail,
    /// The case was not run; the reason is in the row. Never a pass.
    Skip,
}

/// One violation in a report row: the rule id (or `setup` when the harness
/// itself could not run the case) and its message.
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
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
#[derive(Clone, Debug, Serialize)]
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expected_errors: Vec<String>,
    /// Why the case was skipped, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
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
            provider: head.provider,
            route: head.route,
            dtype: head.dtype,
            shape: head.shape,
            layout: head.layout,
            verdict,
            violations: judgement
                .violations
                .iter()
                .map(ViolationRow::from)
                .collect(),
            unchecked: judgement.unchecked,
            expected_errors: judgement.expected_errors,
            skip_reason: None,
        }
    }

    /// A failed row for a case the harness could not run.
    pub fn setup_failure(head: RowHead, message: String) -> Self {
        Self {
            provider: head.provider,
            route: head.route,
            dtype: head.dtype,
            shape: head.shape,
            layout: head.layout,
            verdict: Verdict::Fail,
            violations: vec![ViolationRow {
                rule: "setup".to_owned(),
                message,
            }],
            unchecked: Vec::new(),
            expected_errors: Vec::new(),
            skip_reason: None,
        }
    }

    /// A skipped row.
    pub fn skipped(head: RowHead, reason: String) -> Self {
        Self {
            provider: head.provider,
            route: head.route,
            dtype: head.dtype,
            shape: head.shape,
            layout: head.layout,
            verdict: Verdict::Skip,
            violations: Vec::new(),
            unchecked: Vec::new(),
            expected_errors: Vec::new(),
            skip_reason: Some(reason),
        }
    }
}

/// What identifies a row.
#[derive(Clone, Debug)]
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
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
}

/// The suite's report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// One row per case.
    pub results: Vec<CaseResult>,
    /// Verdict counts.
    pub summary: Summary,
}

impl Report {
    /// Add a row and count it.
    pub fn push(&mut self, result: CaseResult) {
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

    /// The report as pretty JSON.
    ///
    /// # Errors
    ///
    /// Returns serde_json's error if serialisation fails.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The report as a plain-text table, violations listed under their row,
    /// ending in `summary: N passed, N failed, N skipped`.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let headers = ["provider", "route", "dtype", "shape", "layout", "verdict"];
        let rows: Vec<[String; 6]> = self
            .results
            .iter()
            .map(|row| {
                [
                    row.provider.clone(),
                    row.route.clone(),
                    row.dtype.clone(),
                    format!("{:?}", row.shape),
                    row.layout.clone(),
                    match row.verdict {
                        Verdict::Pass if !row.expected_errors.is_empty() => {
                            "pass (expected error)".to_owned()
                        }
                        Verdict::Pass => "pass".to_owned(),
                        Verdict::Fail => format!("FAIL ({})", row.violations.len()),
                        Verdict::Skip => "skip".to_owned(),
                    },
                ]
            })
            .collect();
        let mut widths = headers.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.len());
            }
        }
        let line = |cells: &[String]| {
            let mut text = String::new();
            for (cell, width) in cells.iter().zip(widths) {
                let _ = write!(text, "{cell:<width$}  ");
            }
            text.trim_end().to_owned()
        };
        out.push_str(&line(&headers.map(str::to_owned)));
        out.push('\n');
        for (row, cells) in self.results.iter().zip(&rows) {
            out.push_str(&line(cells));
            out.push('\n');
            for violation in &row.violations {
                let _ = writeln!(
                    out,
                    "    {}: {}",
                    violation.rule,
                    violation.message.replace('\n', "\n      ")
                );
            }
            for expected in &row.expected_errors {
                let _ = writeln!(out, "    expected error: {expected}");
            }
            if let Some(reason) = &row.skip_reason {
                let _ = writeln!(out, "    skipped: {reason}");
            }
        }
        let unchecked = unchecked_everywhere(&self.results);
        if !unchecked.is_empty() {
            let _ = writeln!(out, "\nnot checked on any case (never counted as a pass):");
            for item in unchecked {
                let _ = writeln!(out, "    {}: {}", item.rule, item.reason);
            }
        }
        let _ = writeln!(
            out,
            "\nsummary: {} passed, {} failed, {} skipped",
            self.summary.passed, self.summary.failed, self.summary.skipped
        );
        out
    }
}

/// Rules left unchecked by every judged case, with the first reason given.
fn unchecked_everywhere(results: &[CaseResult]) -> Vec<Unchecked> {
    let judged: Vec<&CaseResult> = results
        .iter()
        .filter(|row| row.skip_reason.is_none() && !row.unchecked.is_empty())
        .collect();
    let Some(first) = judged.first() else {
        return Vec::new();
    };
    Rule::ALL
        .into_iter()
        .filter(|rule| {
            judged
                .iter()
                .all(|row| row.unchecked.iter().any(|item| item.rule == *rule))
        })
        .filter_map(|rule| {
            first
                .unchecked
                .iter()
                .find(|item| item.rule == rule)
                .cloned()
        })
        .collect()
}
