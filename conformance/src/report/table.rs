//! The plain-text table: one row per case, violations under their row.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use super::{CaseResult, Report, Verdict};

/// Colours of the table, when it has them.
struct Palette {
    pass: Style,
    fail: Style,
    skip: Style,
    rule: Style,
}

impl Palette {
    fn new(colour: bool) -> Self {
        if !colour {
            return Self {
                pass: Style::new(),
                fail: Style::new(),
                skip: Style::new(),
                rule: Style::new(),
            };
        }
        Self {
            pass: AnsiColor::Green.on_default(),
            fail: AnsiColor::Red.on_default().bold(),
            skip: AnsiColor::Yellow.on_default(),
            rule: AnsiColor::Red.on_default(),
        }
    }
}

fn paint(style: Style, text: &str) -> String {
    if style == Style::new() {
        text.to_owned()
    } else {
        format!("{}{text}{}", style.render(), style.render_reset())
    }
}

fn verdict_cell(row: &CaseResult) -> String {
    match row.verdict {
        Verdict::Pass if !row.expected_errors.is_empty() => "pass (expected error)".to_owned(),
        Verdict::Pass => "pass".to_owned(),
        Verdict::Fail => format!("FAIL ({})", row.violations.len()),
        Verdict::Skip => "skip".to_owned(),
    }
}

impl Report {
    /// The report as a plain-text table, violations listed under their row,
    /// ending in `summary: N passed, N failed, N skipped`. No colour.
    pub fn to_table(&self) -> String {
        self.to_table_coloured(false)
    }

    /// [`Report::to_table`], with ANSI colours on the verdicts when `colour`
    /// is set. The CLI sets it only when stdout is a terminal and `NO_COLOR`
    /// is not set.
    pub fn to_table_coloured(&self, colour: bool) -> String {
        let palette = Palette::new(colour);
        let mut out = String::new();
        let headers = ["provider", "route", "dtype", "shape", "layout", "verdict"];
        let rows: Vec<[String; 6]> = self.rows().iter().map(table_cells).collect();
        let mut widths = headers.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.len());
            }
        }
        out.push_str(&padded_line(
            &headers.map(str::to_owned),
            widths,
            Style::new(),
        ));
        out.push('\n');
        for (row, cells) in self.rows().iter().zip(&rows) {
            let style = match row.verdict {
                Verdict::Pass => palette.pass,
                Verdict::Fail => palette.fail,
                Verdict::Skip => palette.skip,
            };
            out.push_str(&padded_line(cells, widths, style));
            out.push('\n');
            write_row_notes(&mut out, row, &palette);
        }
        out.push_str(&self.coverage_text());
        out.push_str(&self.kept_memory_section("    "));
        self.write_summary(&mut out, &palette);
        out
    }

    /// The closing `summary:` line, its failed and skipped counts coloured
    /// where they are not zero.
    fn write_summary(&self, out: &mut String, palette: &Palette) {
        let failed = format!("{} failed", self.summary().failed);
        let skipped = format!("{} skipped", self.summary().skipped);
        let _ = writeln!(
            out,
            "\nsummary: {} passed, {}, {}",
            self.summary().passed,
            if self.summary().failed > 0 {
                paint(palette.fail, &failed)
            } else {
                failed
            },
            if self.summary().skipped > 0 {
                paint(palette.skip, &skipped)
            } else {
                skipped
            }
        );
    }
}

/// A case's cells in the table: provider, route, dtype, shape, layout and
/// verdict.
fn table_cells(row: &CaseResult) -> [String; 6] {
    [
        row.provider.clone(),
        row.route.clone(),
        row.dtype.clone(),
        format!("{:?}", row.shape),
        row.layout.clone(),
        verdict_cell(row),
    ]
}

/// One line of the table. Pads every cell but the last, which is coloured
/// after padding so escape codes never count towards a width.
fn padded_line(cells: &[String], widths: [usize; 6], style: Style) -> String {
    let mut text = String::new();
    let (last, init) = cells
        .split_last()
        .map_or((None, cells), |(l, i)| (Some(l), i));
    for (cell, width) in init.iter().zip(widths) {
        let _ = write!(text, "{cell:<width$}  ");
    }
    if let Some(last) = last {
        text.push_str(&paint(style, last));
    }
    text.trim_end().to_owned()
}

/// The lines under a case's row: its violations, expected errors and why
/// it was skipped.
fn write_row_notes(out: &mut String, row: &CaseResult, palette: &Palette) {
    for violation in &row.violations {
        let _ = writeln!(
            out,
            "    {}: {}",
            paint(palette.rule, &violation.rule),
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
