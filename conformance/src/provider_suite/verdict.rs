//! A rule's verdict on one route, read from the report's typed records
//! (`crate::record`): what one macro-generated `#[test]` asserts.

use std::collections::BTreeMap;

use tenferro_transfer_harness::{Rule, Violation};

use crate::Level;
use crate::generated::{REPLAY_ENV, SEED_ENV, shell_quote};
use crate::record::{CaseOutcome, CaseRecord, Origin};
use crate::report::{Report, violation_rows};
use tenferro_transfer_harness::settings::ROUTES_ENV;

/// The verdict of one rule on one route, as a `#[test]` reports it.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum RuleVerdict {
    /// The rule was checked on `cases` cases and held on every one.
    Pass {
        /// Cases on which the rule was checked: each case of a row of many
        /// (generated, concurrent, a pass) counts, as the report's
        /// coverage counts them, and a row that judged the memory over a
        /// phase counts once.
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

/// How many failing cases a rule test lists before it summarises.
pub(super) const LISTED_FAILURES: usize = 5;

/// Whether `record` fails every rule test of `level`: it could not be set
/// up, or it failed without a violation of any rule of the level (which
/// the suite's records never do: it moves a rule outside the level to the
/// unchecked ones; this keeps such a record from being lost).
fn fails_every_rule(record: &CaseRecord, level: Level) -> bool {
    match &record.outcome {
        CaseOutcome::NotSetUp { .. } => true,
        CaseOutcome::Failed { violations, .. } => !violations
            .as_slice()
            .iter()
            .any(|violation| level.includes(violation.rule)),
        _ => false,
    }
}

/// The verdict of `rule` on the records of route `route`, read from the
/// typed records of `report` (never from its rendered rows).
pub(super) fn check_rule(
    report: &Report,
    route: &str,
    rule: Rule,
    level: Level,
    cargo_test: &str,
) -> RuleVerdict {
    let records: Vec<&CaseRecord> = report
        .records()
        .iter()
        .filter(|record| record.route == route)
        .collect();
    let setup: Vec<&CaseRecord> = records
        .iter()
        .copied()
        .filter(|record| fails_every_rule(record, level))
        .collect();
    let failing = rule_failures(&records, rule);
    if !failing.is_empty() || !setup.is_empty() {
        return RuleVerdict::Fail(failure_text(route, rule, cargo_test, &failing, &setup));
    }
    unbroken_verdict(&records, route, rule)
}

/// Every violation of `rule` among `records`, with its record: the
/// generated run's first (it is minimal and replayable).
fn rule_failures<'a>(
    records: &[&'a CaseRecord],
    rule: Rule,
) -> Vec<(&'a CaseRecord, &'a Violation)> {
    let mut failing: Vec<(&CaseRecord, &Violation)> = records
        .iter()
        .flat_map(|record| {
            record
                .outcome
                .violations()
                .iter()
                .filter(|violation| violation.rule == rule)
                .map(move |violation| (*record, violation))
        })
        .collect();
    // The generated run's failure is minimal and replayable: list it first.
    failing.sort_by_key(|(record, _)| !matches!(record.origin, Origin::Generated { .. }));
    failing
}

/// What a row's replay cannot promise: a state row's first failing pair
/// replays as one run of both inputs, where the row moved them in runs of
/// their own.
fn replay_caveat(record: &CaseRecord) -> &'static str {
    match record.origin {
        Origin::State => {
            " (this row's first failing pair, moved in one run; the row moved them one run each, so state that depends on that, such as a cache keyed by the input's address, may pass it: rerun the test to meet the row's sequence)"
        }
        _ => "",
    }
}

/// The text of a failing verdict: the first [`LISTED_FAILURES`] cases
/// that broke the rule, each with how to replay it, then what the cases
/// that could not be set up said.
fn failure_text(
    route: &str,
    rule: Rule,
    cargo_test: &str,
    failing: &[(&CaseRecord, &Violation)],
    setup: &[&CaseRecord],
) -> String {
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
    let mut replayed: Vec<&CaseRecord> = Vec::new();
    for (record, violation) in failing.iter().take(LISTED_FAILURES) {
        let head = &record.head;
        // A row of a pass (its state sequences, its held outputs) is no
        // one case: its head has no shape of its own.
        let case = match record.origin {
            Origin::State | Origin::Held => format!("{} {}", head.dtype, head.layout),
            _ => format!("{} {:?} {}", head.dtype, head.shape, head.layout),
        };
        text.push_str(&format!(
            "\ncase: {case}\n  {}\n",
            violation.message.replace('\n', "\n  ")
        ));
        let Some(json) = &record.replay else {
            // A row of a pass (the held outputs, the memory over a phase)
            // is no one case: the route alone runs it again. (A generated
            // run's row carries its minimal case's replay in its message.)
            let seed = match record.origin {
                Origin::Held => None,
                Origin::Concurrent { seed } => Some(seed),
                _ => continue,
            };
            if !replayed.iter().any(|seen| std::ptr::eq(*seen, *record)) {
                replayed.push(record);
                text.push_str(&format!(
                    "  rerun: {}{ROUTES_ENV}={route} {cargo_test} {route}::{} (the route alone: this row is a pass over many calls, not one case)\n",
                    seed.map(|seed| format!("{SEED_ENV}={seed} ")).unwrap_or_default(),
                    rule.id().replace('-', "_"),
                ));
            }
            continue;
        };
        // A concurrent call's message ends with its own replay lines: the
        // schedule's, and the case alone only where it failed alone.
        if matches!(record.origin, Origin::Concurrent { .. }) {
            continue;
        }
        // A row replays one run: said once, under its first failure.
        if replayed.iter().any(|seen| std::ptr::eq(*seen, *record)) {
            text.push_str("  replay: as above (the row replays its first failing run)\n");
            continue;
        }
        replayed.push(record);
        text.push_str(&format!(
            "  replay: {REPLAY_ENV}={} {cargo_test} {route}::{}{}\n",
            shell_quote(json),
            rule.id().replace('-', "_"),
            replay_caveat(record)
        ));
    }
    if failing.len() > LISTED_FAILURES {
        text.push_str(&format!(
            "\n... and {} more case(s)\n",
            failing.len() - LISTED_FAILURES
        ));
    }
    for record in setup.iter().take(LISTED_FAILURES) {
        for row in violation_rows(&record.outcome) {
            text.push_str(&format!(
                "\n{}: {}\n",
                row.rule,
                row.message.replace('\n', "\n  ")
            ));
        }
    }
    text
}

/// The verdict of a rule no record broke: a pass on the records that
/// checked it, else a skip that says why no case checked it (or a failure
/// when the route has no records at all).
fn unbroken_verdict(records: &[&CaseRecord], route: &str, rule: Rule) -> RuleVerdict {
    // A rule passes on the records whose judgement checked it, and on no
    // other: a record that does not list it as checked did not check it.
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut phase_reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut checked = 0;
    for record in records {
        if record.outcome.checked(rule) {
            // A row of many cases (generated, concurrent, a pass) counts
            // each case that judged the rule; a row that judged no case of
            // its own (the memory over a phase) counts once.
            let cases: usize = record
                .coverage
                .covered()
                .iter()
                .filter(|covered| covered.rules.contains(&rule))
                .map(|covered| covered.cases)
                .sum();
            checked += cases.max(1);
        } else if let Some(reason) = record.outcome.why_unchecked(rule) {
            // A phase's row (the held outputs, the memory over a phase)
            // judged no case: its other rules were judged on the cases
            // themselves, which give their own reasons.
            let phase_row = record.outcome.is_judged() && record.coverage.is_empty();
            let counted = if phase_row {
                &mut phase_reasons
            } else {
                &mut reasons
            };
            *counted.entry(reason).or_default() += 1;
        }
    }
    if checked > 0 {
        return RuleVerdict::Pass { cases: checked };
    }
    if records.is_empty() {
        return RuleVerdict::Fail(format!(
            "route {route} has no records in the report: it was not run"
        ));
    }
    if reasons.is_empty() {
        reasons = phase_reasons;
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
