//! JUnit XML for CI systems: one `<testsuite>` per provider and route, one
//! `<testcase>` per case; a broken rule is a `<failure>`, a case the harness
//! could not set up an `<error>`, a skipped case `<skipped>`.

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use tenferro_transfer_harness::Rule;

use super::text::{Counted, one_line, truncate};
use super::{CaseResult, KindCount, Report, ReportError, RouteCoverage, RuleCoverage, Verdict};
use crate::record::CaseRecord;

/// The `message` attribute of a failure is cut to this many characters; the
/// element's text holds every message whole.
const MAX_ATTRIBUTE_CHARS: usize = 300;

/// `text` with the characters XML 1.0 cannot hold, even escaped (most
/// control characters, U+FFFE, U+FFFF), written as `\u{..}`.
fn xml_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let allowed =
            matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}');
        if allowed {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    out
}

fn attribute(text: &str) -> String {
    xml_safe(&truncate(&one_line(text), MAX_ATTRIBUTE_CHARS))
}

struct Suite<'a> {
    provider: &'a str,
    route: &'a str,
    cases: Vec<(&'a CaseRecord, &'a CaseResult)>,
}

impl Suite<'_> {
    fn count(&self, pick: impl Fn(&CaseRecord) -> bool) -> usize {
        self.cases.iter().filter(|(record, _)| pick(record)).count()
    }
}

fn suites(report: &Report) -> Vec<Suite<'_>> {
    let mut suites: Vec<Suite<'_>> = Vec::new();
    for (record, row) in report.entries() {
        match suites
            .iter_mut()
            .find(|suite| suite.provider == row.provider && suite.route == row.route)
        {
            Some(suite) => suite.cases.push((record, row)),
            None => suites.push(Suite {
                provider: &row.provider,
                route: &row.route,
                cases: vec![(record, row)],
            }),
        }
    }
    suites
}

/// One rule's coverage as a property value: `cases=N; F32=n ...; owned=n
/// ...; small=n ...; specials=n` (kinds with no case left out).
fn coverage_value(rule: &RuleCoverage) -> String {
    let counts = |kinds: &[KindCount]| {
        kinds
            .iter()
            .map(|kind| format!("{}={}", kind.kind, kind.cases))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "cases={}; {}; {}; {}; specials={}",
        rule.cases,
        counts(&rule.dtypes),
        counts(&rule.layouts),
        counts(&rule.sizes),
        rule.specials
    )
}

/// A case that broke a rule (a case not set up is an error instead).
fn is_failure(record: &CaseRecord) -> bool {
    !record.outcome.violations().is_empty()
}

fn write_case(
    writer: &mut Writer<Vec<u8>>,
    suite: &Suite<'_>,
    record: &CaseRecord,
    row: &CaseResult,
) -> io::Result<()> {
    let name = xml_safe(&format!("{} {:?} {}", row.dtype, row.shape, row.layout));
    let classname = xml_safe(&format!("{}.{}", suite.provider, suite.route));
    let element = writer
        .create_element("testcase")
        .with_attribute(("name", name.as_str()))
        .with_attribute(("classname", classname.as_str()));
    let mut notes: Vec<String> = row
        .unchecked
        .iter()
        .map(|item| format!("not checked: {}: {}", item.rule, item.reason))
        .collect();
    notes.extend(
        row.expected_errors
            .iter()
            .map(|expected| format!("expected error: {expected}")),
    );
    if row.verdict == Verdict::Pass && notes.is_empty() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|writer| {
        match row.verdict {
            Verdict::Pass => {}
            Verdict::Skip => {
                let reason = attribute(row.skip_reason.as_deref().unwrap_or("skipped"));
                writer
                    .create_element("skipped")
                    .with_attribute(("message", reason.as_str()))
                    .write_empty()?;
            }
            Verdict::Fail => {
                let tag = if record.outcome.is_not_set_up() {
                    "error"
                } else {
                    "failure"
                };
                let rules: Vec<&str> = row
                    .violations
                    .iter()
                    .map(|violation| violation.rule.as_str())
                    .collect();
                let first = row
                    .violations
                    .first()
                    .map(|violation| format!("{}: {}", violation.rule, violation.message))
                    .unwrap_or_default();
                let body = row
                    .violations
                    .iter()
                    .map(|violation| format!("{}: {}", violation.rule, violation.message))
                    .collect::<Vec<_>>()
                    .join("\n");
                let kind = xml_safe(&rules.join(" "));
                let message = attribute(&first);
                let body = xml_safe(&body);
                writer
                    .create_element(tag)
                    .with_attribute(("type", kind.as_str()))
                    .with_attribute(("message", message.as_str()))
                    .write_text_content(BytesText::new(&body))?;
            }
        }
        if !notes.is_empty() {
            let text = xml_safe(&notes.join("\n"));
            writer
                .create_element("system-out")
                .write_text_content(BytesText::new(&text))?;
        }
        Ok(())
    })?;
    Ok(())
}

fn write_suite(
    writer: &mut Writer<Vec<u8>>,
    suite: &Suite<'_>,
    coverage: Option<&RouteCoverage>,
) -> io::Result<()> {
    let name = xml_safe(&format!("{} on {}", suite.provider, suite.route));
    let tests = suite.cases.len().to_string();
    let failures = suite.count(is_failure).to_string();
    let errors = suite
        .count(|record| record.outcome.is_not_set_up())
        .to_string();
    let skipped = suite
        .count(|record| record.outcome.verdict() == Verdict::Skip)
        .to_string();
    // Rules left unchecked on every judged case of the suite.
    let judged: Vec<&CaseRecord> = suite
        .cases
        .iter()
        .map(|(record, _)| *record)
        .filter(|record| record.outcome.is_judged())
        .collect();
    let mut unchecked = Counted::default();
    for record in &judged {
        for rule in Rule::ALL {
            if !record.outcome.checked(rule) {
                unchecked.add(rule.id());
            }
        }
    }
    let everywhere: Vec<&str> = unchecked
        .iter()
        .filter(|&(_, count)| count == judged.len())
        .map(|(rule, _)| rule)
        .collect();
    writer
        .create_element("testsuite")
        .with_attribute(("name", name.as_str()))
        .with_attribute(("tests", tests.as_str()))
        .with_attribute(("failures", failures.as_str()))
        .with_attribute(("errors", errors.as_str()))
        .with_attribute(("skipped", skipped.as_str()))
        .write_inner_content(|writer| {
            writer
                .create_element("properties")
                .write_inner_content(|writer| {
                    let provider = xml_safe(suite.provider);
                    let route = xml_safe(suite.route);
                    let rules = everywhere.join(" ");
                    let mut properties = vec![
                        ("provider".to_owned(), provider),
                        ("route".to_owned(), route),
                    ];
                    if !rules.is_empty() {
                        properties.push(("not-checked-on-any-case".to_owned(), rules));
                    }
                    // The coverage map, a property per rule.
                    for rule in coverage.iter().flat_map(|coverage| &coverage.rules) {
                        properties.push((format!("coverage.{}", rule.rule), coverage_value(rule)));
                    }
                    for (key, value) in properties {
                        writer
                            .create_element("property")
                            .with_attribute(("name", key.as_str()))
                            .with_attribute(("value", value.as_str()))
                            .write_empty()?;
                    }
                    Ok(())
                })?;
            for (record, row) in &suite.cases {
                write_case(writer, suite, record, row)?;
            }
            Ok(())
        })?;
    Ok(())
}

impl Report {
    /// The report as JUnit XML: a `<testsuite>` per provider and route, a
    /// `<testcase>` per case named `dtype shape layout`, with a `<failure>`
    /// listing every violation, an `<error>` for a case the harness could not
    /// set up, or `<skipped>` with the reason. Rules the oracle could not
    /// check are listed in the case's `<system-out>`, never counted as passes.
    ///
    /// # Errors
    ///
    /// Returns [`ReportError::Xml`] if the XML writer fails (it writes to
    /// memory, so it does not in practice).
    pub fn to_junit(&self) -> Result<String, ReportError> {
        let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
        let suites = suites(self);
        let coverage = self.coverage();
        let tests = self.records().len().to_string();
        let failures = self
            .records()
            .iter()
            .filter(|record| is_failure(record))
            .count()
            .to_string();
        let errors = self
            .records()
            .iter()
            .filter(|record| record.outcome.is_not_set_up())
            .count()
            .to_string();
        let skipped = self.summary().skipped.to_string();
        writer
            .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
            .map_err(ReportError::Xml)?;
        writer
            .create_element("testsuites")
            .with_attribute(("name", "transfer-conformance"))
            .with_attribute(("tests", tests.as_str()))
            .with_attribute(("failures", failures.as_str()))
            .with_attribute(("errors", errors.as_str()))
            .with_attribute(("skipped", skipped.as_str()))
            .write_inner_content(|writer| {
                for suite in &suites {
                    let covered = coverage.iter().find(|route| {
                        route.provider == suite.provider && route.route == suite.route
                    });
                    write_suite(writer, suite, covered)?;
                }
                Ok(())
            })
            .map_err(ReportError::Xml)?;
        let mut xml = String::from_utf8_lossy(&writer.into_inner()).into_owned();
        xml.push('\n');
        Ok(xml)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_hold_are_written_out() {
        assert_eq!(xml_safe("a\u{0}b\tc\u{1b}"), "a\\u{0}b\tc\\u{1b}");
        assert_eq!(xml_safe("\u{FFFF}é"), "\\u{ffff}é");
    }
}
