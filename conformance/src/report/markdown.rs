//! The Markdown report: a rules x routes x dtypes matrix with pass, fail and
//! skip marks, a per-rule summary, and the failures under it, fit to paste
//! into a pull request. See [`super::matrix`] for what a mark means.

use std::fmt::Write as _;

use super::matrix::{Mark, RuleMatrix, RuleTally};
use super::text::{Counted, one_line, truncate};
use super::{CaseResult, Report, RunOutcome, Verdict};
use crate::record::CaseRecord;

/// At most this many failing cases are listed under the matrix.
const MAX_LISTED_FAILURES: usize = 50;
/// A violation message is cut to this many characters.
const MAX_MESSAGE_CHARS: usize = 600;

const PASS: &str = "✅";
const FAIL: &str = "❌";
const PARTLY: &str = "🟡";
const NOT_CHECKED: &str = "⏭️";
const SETUP: &str = "💥";
const EMPTY: &str = "·";

fn mark_symbol(mark: Option<Mark>) -> &'static str {
    match mark {
        Some(Mark::Pass) => PASS,
        Some(Mark::Fail) => FAIL,
        Some(Mark::PartlyChecked) => PARTLY,
        Some(Mark::NotChecked) => NOT_CHECKED,
        None => EMPTY,
    }
}

/// `text` as an inline code span that survives backticks and table pipes.
fn code(text: &str) -> String {
    let longest = longest_backtick_run(text);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('|', "\\|"))
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `text` as plain Markdown text: characters with a meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in one_line(text).chars() {
        if "\\`*_{}[]<>()#+-!|~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

impl Report {
    /// The report as Markdown: the verdict, a legend, a per-rule summary,
    /// one rules x dtypes matrix per provider and route, then the failures
    /// (messages cut to 600 characters, at most 50 cases; the JSON report has
    /// every message), the rules left unchecked and the skipped cases.
    pub fn to_markdown(&self) -> String {
        let matrix = self.rule_matrix();
        let mut out = String::from("## Transfer conformance report\n\n");
        write_verdict(&mut out, self);
        write_legend(&mut out);
        write_rule_summary(&mut out, &matrix);
        for route in &matrix.routes {
            let _ = writeln!(
                out,
                "### {} on {}\n",
                code(&route.provider),
                code(&route.route)
            );
            let _ = write!(out, "| rule |");
            for dtype in &matrix.dtypes {
                let _ = write!(out, " {} |", escape(dtype));
            }
            let _ = write!(out, "\n|---|");
            for _ in &matrix.dtypes {
                out.push_str(":-:|");
            }
            out.push_str("\n| cases |");
            let cases = route.cells.first().map(Vec::as_slice).unwrap_or_default();
            for cell in cases {
                let _ = write!(out, " {} |", cell.cases);
            }
            out.push('\n');
            if route.setup_failures.iter().any(|&count| count > 0) {
                out.push_str("| setup |");
                for (&failures, cell) in route.setup_failures.iter().zip(cases) {
                    let _ = write!(
                        out,
                        " {} |",
                        match (failures, cell.cases) {
                            (0, 0) => EMPTY,
                            (0, _) => PASS,
                            _ => SETUP,
                        }
                    );
                }
                out.push('\n');
            }
            for (rule, cells) in matrix.rules.iter().zip(&route.cells) {
                let _ = write!(out, "| {} |", code(rule));
                for cell in cells {
                    let _ = write!(out, " {} |", mark_symbol(cell.mark()));
                }
                out.push('\n');
            }
            out.push('\n');
        }
        write_failures(&mut out, self);
        write_coverage(&mut out, self);
        let kept = self.kept_memory_section("- ");
        if !kept.is_empty() {
            let _ = writeln!(
                out,
                "### Memory kept between calls
{kept}"
            );
        }
        write_skipped(&mut out, self);
        out
    }
}

fn write_verdict(out: &mut String, report: &Report) {
    let verdict = match report.outcome() {
        RunOutcome::Failed => "FAIL",
        RunOutcome::Passed => "PASS",
        _ => "NOTHING CHECKED",
    };
    let setup = report
        .records()
        .iter()
        .filter(|record| record.outcome.is_not_set_up())
        .count();
    let setup_note = if setup > 0 {
        format!(" ({} could not be set up)", plural(setup, "case", "cases"))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "**{verdict}**: {}: {} passed, {} failed{setup_note}, {} skipped.\n",
        plural(report.rows().len(), "case", "cases"),
        report.summary().passed,
        report.summary().failed,
        report.summary().skipped
    );
}

fn write_legend(out: &mut String) {
    let _ = writeln!(
        out,
        "| mark | on a rule and a cell (provider, route, dtype) |\n|:-:|---|\n\
         | {PASS} | pass: every case of the cell was judged, and the rule held on each |\n\
         | {FAIL} | fail: at least one case violated the rule |\n\
         | {PARTLY} | partly checked: never violated, but not checked on some cases; not a pass |\n\
         | {NOT_CHECKED} | not checked on any case of the cell (the oracle could not judge it, or every case was skipped or not set up); not a pass |\n\
         | {SETUP} | setup row: the harness could not run a case of the cell (its rules count it as not checked) |\n\
         | {EMPTY} | no case of this dtype on this route |\n"
    );
}

fn rule_result(total: &RuleTally) -> String {
    match total.mark() {
        Some(Mark::Fail) => format!("{FAIL} fail on {}", plural(total.violated, "case", "cases")),
        Some(Mark::Pass) => format!("{PASS} pass"),
        Some(Mark::PartlyChecked) => format!(
            "{PARTLY} held where checked; not checked on {} of {} cases",
            total.cases - total.held,
            total.cases
        ),
        Some(Mark::NotChecked) => format!("{NOT_CHECKED} not checked"),
        None => EMPTY.to_owned(),
    }
}

fn write_rule_summary(out: &mut String, matrix: &RuleMatrix) {
    let _ = writeln!(
        out,
        "### Rules\n\n| rule | result | cells {PASS} | cells {FAIL} | cells {PARTLY} | cells {NOT_CHECKED} |\n|---|---|--:|--:|--:|--:|"
    );
    if matrix.has_setup_failures() {
        let failures: usize = matrix
            .routes
            .iter()
            .flat_map(|route| &route.setup_failures)
            .sum();
        let cells = matrix
            .routes
            .iter()
            .flat_map(|route| &route.setup_failures)
            .filter(|&&count| count > 0)
            .count();
        let _ = writeln!(
            out,
            "| setup | {SETUP} {} could not be set up, in {} | | | | |",
            plural(failures, "case", "cases"),
            plural(cells, "cell", "cells")
        );
    }
    for (index, rule) in matrix.rules.iter().enumerate() {
        let mut total = RuleTally::default();
        let mut counts = [0_usize; 4];
        for cell in matrix.cells_of(index) {
            total.cases += cell.cases;
            total.held += cell.held;
            total.violated += cell.violated;
            total.unchecked += cell.unchecked;
            total.not_run += cell.not_run;
            match cell.mark() {
                Some(Mark::Pass) => counts[0] += 1,
                Some(Mark::Fail) => counts[1] += 1,
                Some(Mark::PartlyChecked) => counts[2] += 1,
                Some(Mark::NotChecked) => counts[3] += 1,
                None => {}
            }
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            code(rule),
            rule_result(&total),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
    }
    out.push('\n');
}

/// A fenced block, its fence longer than any backtick run inside, indented
/// to sit in a list item.
fn fenced(out: &mut String, lines: &[String]) {
    let longest = lines
        .iter()
        .map(|line| longest_backtick_run(line))
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "  {fence}text");
    for line in lines {
        for part in line.lines() {
            let _ = writeln!(out, "  {part}");
        }
    }
    let _ = writeln!(out, "  {fence}");
}

fn case_title(row: &CaseResult) -> String {
    format!(
        "{} · {} · {} · {} · {}",
        code(&row.provider),
        code(&row.route),
        escape(&row.dtype),
        code(&format!("{:?}", row.shape)),
        code(&row.layout)
    )
}

fn write_failures(out: &mut String, report: &Report) {
    let failed: Vec<(&CaseRecord, &CaseResult)> = report
        .entries()
        .filter(|(_, row)| row.verdict == Verdict::Fail)
        .collect();
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Failures ({})\n",
        plural(failed.len(), "case", "cases")
    );
    for (record, row) in failed.iter().take(MAX_LISTED_FAILURES) {
        let symbol = if record.outcome.is_not_set_up() {
            SETUP
        } else {
            FAIL
        };
        let _ = writeln!(out, "- {symbol} {}", case_title(row));
        let lines: Vec<String> = row
            .violations
            .iter()
            .map(|violation| {
                format!(
                    "{}: {}",
                    violation.rule,
                    truncate(&violation.message, MAX_MESSAGE_CHARS)
                )
            })
            .collect();
        fenced(out, &lines);
    }
    if failed.len() > MAX_LISTED_FAILURES {
        let _ = writeln!(
            out,
            "\n… and {} more; the JSON report has every message.",
            plural(
                failed.len() - MAX_LISTED_FAILURES,
                "failing case",
                "failing cases"
            )
        );
    }
    out.push('\n');
}

/// The coverage map, one table per route, then what a reader must act on.
fn write_coverage(out: &mut String, report: &Report) {
    let routes = report.coverage();
    if !routes.is_empty() {
        let _ = writeln!(out, "### Coverage: the cases each rule was checked on\n");
    }
    for route in &routes {
        let _ = writeln!(
            out,
            "{} on {} ({} cases judged; `.` is none):\n",
            code(&route.provider),
            code(&route.route),
            route.cases
        );
        for line in super::coverage::markdown_rows(route) {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    let gaps = report.coverage_gaps();
    if gaps.is_empty() {
        return;
    }
    let _ = writeln!(out, "### To act on (never counted as a pass)\n");
    for gap in gaps {
        let _ = writeln!(out, "- {}: {}", code(&gap.rule), escape(&gap.text));
    }
    out.push('\n');
}

fn write_skipped(out: &mut String, report: &Report) {
    let mut reasons = Counted::default();
    for row in report.rows() {
        if let Some(reason) = &row.skip_reason {
            reasons.add(reason);
        }
    }
    if reasons.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Skipped ({})\n",
        plural(report.summary().skipped, "case", "cases")
    );
    for (reason, count) in reasons.iter() {
        let _ = writeln!(out, "- {} ({count})", escape(reason));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`a"), "`` `a ``");
    }

    #[test]
    fn plain_text_is_escaped() {
        assert_eq!(escape("*x* <y>\nz"), "\\*x\\* \\<y\\> z");
    }
}
