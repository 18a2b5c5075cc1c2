//! The self-test's report: how one case measured against a declaration,
//! the kill matrix's rows, and its JSON and table.

use std::fmt::Write as _;

use serde::Serialize;
use tenferro_transfer_harness::{Judgement, Rule, Violation};

/// One cell of the kill matrix: how a judged case measures against what a
/// provider must show. The self-test tallies these; the fuzz target
/// `transfer_contract` asserts them case by case.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_conformance::harness::{Case, Oracle, Rig, Route, Rule};
/// use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
/// use tenferro_transfer_conformance::mock_devices::{SimDevice, SimRoutes, SimUpload};
/// use tenferro_transfer_conformance::selftest::CaseCheck;
///
/// // An upload that changes the last bit of every element breaks values.
/// let route = Route::host_to_sim().unwrap();
/// let device = route.destination().downcast::<SimDevice>().unwrap().clone();
/// let broken = Broken::new(Arc::new(SimUpload::new(device)), vec![Fault::OneUlp]);
/// let mut rig = Rig::new(route.clone(), Arc::new(broken)).unwrap();
/// let case = Case::from_values(vec![1], vec![1.5_f64]).unwrap();
/// let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
/// assert!(CaseCheck::of(&[Rule::Values], false, &judgement).passed());
/// assert_eq!(CaseCheck::of(&[], false, &judgement).false_alarms.len(), 1);
/// assert_eq!(CaseCheck::of(&[Rule::Values, Rule::Dtype], false, &judgement).missed, vec![Rule::Dtype]);
/// ```
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct CaseCheck {
    /// Rules that had to fire and did not.
    pub missed: Vec<Rule>,
    /// Violations of rules that were not expected.
    pub false_alarms: Vec<Violation>,
    /// The case had to end in an expected error (a device failure passed on
    /// as a typed `Err`) and did not.
    pub missing_error: bool,
}

impl CaseCheck {
    /// Measure `judgement` against exactly the `expected` rules, and, when
    /// `expects_error`, an expected error.
    pub fn of(expected: &[Rule], expects_error: bool, judgement: &Judgement) -> Self {
        Self::of_violations(
            expected,
            expects_error,
            judgement.violations(),
            judgement.expected_errors(),
        )
    }

    /// [`CaseCheck::of`] on a judgement's `violations` and
    /// `expected_errors`.
    pub fn of_violations(
        expected: &[Rule],
        expects_error: bool,
        violations: &[Violation],
        expected_errors: &[String],
    ) -> Self {
        Self {
            missed: expected
                .iter()
                .copied()
                .filter(|rule| !violations.iter().any(|violation| violation.rule == *rule))
                .collect(),
            false_alarms: violations
                .iter()
                .filter(|violation| !expected.contains(&violation.rule))
                .cloned()
                .collect(),
            missing_error: expects_error && expected_errors.is_empty(),
        }
    }

    /// Whether the case showed exactly what it had to.
    pub fn passed(&self) -> bool {
        self.missed.is_empty() && self.false_alarms.is_empty() && !self.missing_error
    }
}

/// One row of the kill matrix.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderRow {
    /// Provider name (`reference:<builtin>` for the reference providers).
    pub name: String,
    /// Rules that must fire on every applicable case.
    pub expected_rules: Vec<Rule>,
    /// Rules that fired on at least one case.
    pub caught_rules: Vec<Rule>,
    /// Applicable cases run.
    pub cases: usize,
    /// Cases where an expected rule did not fire.
    pub missed: usize,
    /// Cases where an unexpected rule fired.
    pub false_alarms: usize,
    /// Cases that ended in an expected error (a device failure passed on).
    pub expected_errors: usize,
    /// The first few misses and false alarms, for diagnosis.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// A provider whose route cannot run here (no CUDA device, driver or
/// feature): nothing of it ran, and it counts as skipped, never as a pass.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedProvider {
    /// The built-in provider.
    pub name: String,
    /// Why its route cannot run.
    pub reason: String,
}

/// The self-test's result.
#[derive(Clone, Debug, Serialize)]
pub struct SelfTestReport {
    /// One row per broken provider, then one per reference provider.
    pub providers: Vec<ProviderRow>,
    /// Cases on which the oracle and the runtime disagreed.
    pub disagreements: usize,
    /// Providers whose routes could not run here, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedProvider>,
}

impl SelfTestReport {
    /// Whether every broken provider was caught by exactly its rules on
    /// every applicable case, every reference provider was clean, and the
    /// oracle never disagreed with the runtime. A self-test where nothing
    /// ran (every route skipped) has not passed.
    pub fn passed(&self) -> bool {
        self.disagreements == 0
            && !self.providers.is_empty()
            && self
                .providers
                .iter()
                .all(|row| row.missed == 0 && row.false_alarms == 0 && row.cases > 0)
    }

    /// The report as pretty JSON.
    ///
    /// # Errors
    ///
    /// Returns serde_json's error if serialisation fails.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The kill matrix as text: one column per rule, `x` where the rule is
    /// expected and fired, `!` where it fired unexpectedly, `-` where an
    /// expected rule never fired.
    pub fn to_table(&self) -> String {
        let rules: Vec<Rule> = Rule::ALL.to_vec();
        let name_width = self
            .providers
            .iter()
            .map(|row| row.name.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let mut out = format!("{:<name_width$}", "provider");
        for rule in &rules {
            let _ = write!(out, " {:>3}", rule.abbreviation());
        }
        out.push_str("  cases missed false-alarms expected-errors\n");
        for row in &self.providers {
            let _ = write!(out, "{:<name_width$}", row.name);
            for rule in &rules {
                let expected = row.expected_rules.contains(rule);
                let caught = row.caught_rules.contains(rule);
                let mark = match (expected, caught) {
                    (true, true) => "x",
                    (true, false) => "-",
                    (false, true) => "!",
                    (false, false) => ".",
                };
                let _ = write!(out, " {mark:>3}");
            }
            let _ = writeln!(
                out,
                "  {:>5} {:>6} {:>12} {:>15}",
                row.cases, row.missed, row.false_alarms, row.expected_errors
            );
            for example in &row.examples {
                let _ = writeln!(out, "    {example}");
            }
        }
        out.push_str("\ncolumns: ");
        out.push_str(
            &rules
                .iter()
                .map(|rule| format!("{}={}", rule.abbreviation(), rule.id()))
                .collect::<Vec<_>>()
                .join(" "),
        );
        for skipped in &self.skipped {
            let _ = write!(
                out,
                "\nskipped (not run, never a pass): {}: {}",
                skipped.name, skipped.reason
            );
        }
        let _ = writeln!(
            out,
            "\ndisagreements with the runtime: {}",
            self.disagreements
        );
        let _ = writeln!(
            out,
            "self-test: {}",
            if self.passed() { "PASS" } else { "FAIL" }
        );
        out
    }
}
