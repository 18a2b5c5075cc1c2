//! A case's judgement: the rules the oracle checked on it, those broken
//! among them (each a [`Violation`]) and those it could not check, with why
//! ([`Unchecked`]).

use serde::Serialize;

use crate::Rule;

/// One broken rule, with a message precise enough to act on.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, serde::Deserialize)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// What was wrong.
    pub message: String,
}

impl Violation {
    /// The rules `violations` broke, in catalogue order, without repeats.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{Rule, Violation};
    ///
    /// let broken = |rule| Violation { rule, message: String::new() };
    /// let violations = [broken(Rule::Values), broken(Rule::Dtype), broken(Rule::Values)];
    /// assert_eq!(Violation::rules_of(&violations), [Rule::Dtype, Rule::Values]);
    /// ```
    pub fn rules_of(violations: &[Violation]) -> Vec<Rule> {
        let mut rules: Vec<Rule> = violations.iter().map(|violation| violation.rule).collect();
        rules.sort();
        rules.dedup();
        rules
    }
}

/// A rule the oracle could not judge on this case, and why. Never a pass.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, serde::Deserialize)]
pub struct Unchecked {
    /// The rule.
    pub rule: Rule,
    /// Why it was not checked.
    pub reason: String,
}

/// The oracle's judgement of one case: the rules it checked, those broken
/// among them, and those it could not check, with why.
///
/// Only the oracle makes one ([`Oracle::judge`](crate::Oracle::judge), [`Oracle::judge_outside`](crate::Oracle::judge_outside)),
/// and every rule of the catalogue is then either checked or unchecked with
/// its reason: which rules a case checked is decided here, once, never by
/// the path that ran the case. A caller may only take checks away
/// ([`uncheck`](Judgement::uncheck)) or say better why a rule was not
/// checked ([`explain_unchecked`](Judgement::explain_unchecked)).
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Judgement {
    /// Every rule broken, in catalogue order.
    pub(crate) violations: Vec<Violation>,
    /// Rules not judged on this case.
    pub(crate) unchecked: Vec<Unchecked>,
    /// Device failures the provider correctly passed on as a typed `Err`
    /// (injected by a fault plan): expected errors, not violations.
    pub(crate) expected_errors: Vec<String>,
    /// Memory the devices kept in use after the case that repeating it did
    /// not grow: what the provider keeps and reuses, not a leak.
    pub(crate) kept: Vec<crate::KeptMemory>,
    /// The rules judged on this case (held or broken), in catalogue order.
    #[serde(skip)]
    checked: Vec<Rule>,
}

impl Judgement {
    /// A judgement not yet made: nothing checked.
    pub(crate) fn empty() -> Self {
        Self {
            violations: Vec::new(),
            unchecked: Vec::new(),
            expected_errors: Vec::new(),
            kept: Vec::new(),
            checked: Vec::new(),
        }
    }

    /// Whether no rule was broken.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Every rule broken, in catalogue order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The rules not checked on this case, with why (never a pass).
    pub fn unchecked(&self) -> &[Unchecked] {
        &self.unchecked
    }

    /// Device failures the provider correctly passed on as a typed `Err`
    /// (injected by a fault plan): expected errors, not violations.
    pub fn expected_errors(&self) -> &[String] {
        &self.expected_errors
    }

    /// Memory the devices kept in use after the case that repeating it did
    /// not grow: what the provider keeps and reuses (reported, not a leak).
    pub fn kept_memory(&self) -> &[crate::KeptMemory] {
        &self.kept
    }

    /// The rules the oracle judged on this case, held or broken, in
    /// catalogue order.
    pub fn checked(&self) -> &[Rule] {
        &self.checked
    }

    /// Whether the oracle judged `rule` on this case.
    pub fn was_checked(&self, rule: Rule) -> bool {
        self.checked.contains(&rule)
    }

    /// Why `rule` was not checked, if it was not.
    pub fn why_unchecked(&self, rule: Rule) -> Option<&str> {
        self.unchecked
            .iter()
            .find(|item| item.rule == rule)
            .map(|item| item.reason.as_str())
    }

    /// The rules broken, in catalogue order, without repeats.
    pub fn rules(&self) -> Vec<Rule> {
        Violation::rules_of(&self.violations)
    }

    /// Take `rule` out of the judgement: it no longer counts as checked,
    /// its violations are dropped, and it is unchecked for `reason` (a rule
    /// outside a pinned level, say). The one way to change what a
    /// judgement checked, and it can only take a check away.
    pub fn uncheck(&mut self, rule: Rule, reason: impl Into<String>) {
        self.violations.retain(|violation| violation.rule != rule);
        self.checked.retain(|checked| *checked != rule);
        let reason = reason.into();
        match self.unchecked.iter_mut().find(|item| item.rule == rule) {
            Some(item) => item.reason = reason,
            None => self.unchecked.push(Unchecked { rule, reason }),
        }
    }

    /// Say better why `rule` was not checked (the suite knows why a
    /// provider's capabilities leave nothing to refuse, say); a rule that
    /// was checked stays checked, and this does nothing.
    pub fn explain_unchecked(&mut self, rule: Rule, reason: impl Into<String>) {
        if let Some(item) = self.unchecked.iter_mut().find(|item| item.rule == rule) {
            item.reason = reason.into();
        }
    }

    /// The judgement of a run of several inputs as one: every violation,
    /// its message led by its input's label; a rule checked where any
    /// input checked it, and unchecked (with the first input's reason)
    /// where none did; every expected error. A single part is returned as
    /// it is.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Judgement, Oracle, Rig, Route, Rule};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let cases = [
    ///     Case::from_values(vec![1], vec![1_i64]).unwrap(),
    ///     Case::from_values(vec![2], vec![2_i32, 3]).unwrap(),
    /// ];
    /// let parts = cases
    ///     .iter()
    ///     .zip(rig.run_together(&cases).unwrap())
    ///     .enumerate()
    ///     .map(|(index, (case, outcome))| (format!("input {}", index + 1), Oracle.judge(case, &route, &outcome)))
    ///     .collect();
    /// let judgement = Judgement::merged(parts);
    /// assert!(judgement.passed());
    /// assert!(judgement.was_checked(Rule::Values));
    /// ```
    pub fn merged(parts: Vec<(String, Judgement)>) -> Judgement {
        if parts.len() == 1 {
            if let Some((_, only)) = parts.into_iter().next() {
                return only;
            }
            return Judgement::empty().finish();
        }
        let mut merged = Judgement::empty();
        for (label, part) in &parts {
            merged
                .violations
                .extend(part.violations.iter().map(|violation| Violation {
                    rule: violation.rule,
                    message: format!("{label}: {}", violation.message),
                }));
            merged
                .expected_errors
                .extend(part.expected_errors.iter().cloned());
            merged.kept.extend(part.kept.iter().cloned());
            merged.checked.extend(part.checked.iter().copied());
        }
        merged.checked.sort();
        merged.checked.dedup();
        for (_, part) in &parts {
            for item in &part.unchecked {
                if !merged.checked.contains(&item.rule)
                    && !merged.unchecked.iter().any(|kept| kept.rule == item.rule)
                {
                    merged.unchecked.push(item.clone());
                }
            }
        }
        merged.violations.sort_by_key(|violation| violation.rule);
        merged
    }

    /// Add `note` to the message of every violation of `rule` (what the
    /// caller knows and the oracle cannot: whose values a crossed output
    /// holds, say). Nothing changes where `rule` was not broken.
    pub fn annotate(&mut self, rule: Rule, note: &str) {
        for violation in &mut self.violations {
            if violation.rule == rule {
                violation.message.push_str(note);
            }
        }
    }

    pub(crate) fn violate(&mut self, rule: Rule, message: String) {
        self.violations.push(Violation { rule, message });
    }

    pub(crate) fn skip(&mut self, rule: Rule, reason: &str) {
        self.unchecked.push(Unchecked {
            rule,
            reason: reason.to_owned(),
        });
    }

    /// Close the judgement: every rule of the catalogue not listed as
    /// unchecked was judged, and a broken rule counts as checked even where
    /// one of its checks could not be made (its violation stands).
    pub(crate) fn finish(mut self) -> Self {
        self.violations.sort_by_key(|violation| violation.rule);
        let broken = self.rules();
        self.checked = Rule::ALL
            .into_iter()
            .filter(|rule| {
                broken.contains(rule) || !self.unchecked.iter().any(|item| item.rule == *rule)
            })
            .collect();
        self
    }
}
