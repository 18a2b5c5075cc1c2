//! Conformance levels: the set of rules a provider crate pins, so that an
//! upgrade of the suite never starts failing its CI without warning.
//!
//! # Policy
//!
//! - A level is a frozen list of rules. `Level::V1` is every rule of the
//!   0.1 catalogue and never changes.
//! - A rule added later joins a later level (`V2`, ...), never an existing
//!   one. A crate pinned to `V1` keeps passing on a patch or minor upgrade
//!   of the suite; the new rule is reported as not checked at its level.
//! - A rule's check may grow stricter within a level only to fix a false
//!   pass (the suite missed a violation the rule's statement already
//!   forbids); such a change is named in the changelog, under "Stricter
//!   checks" with the rule and the level: `CHANGELOG.md`, at the root of
//!   this crate's package and of the repository
//!   ([on docs.rs](https://docs.rs/crate/tenferro-transfer-conformance/latest/source/CHANGELOG.md)).
//! - Moving to a new level is the caller's decision: change one argument.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use tenferro_transfer_harness::Rule;

/// A conformance level a provider crate pins.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::Level;
/// use tenferro_transfer_conformance::harness::Rule;
///
/// assert!(Level::V1.includes(Rule::Values));
/// assert!(!Level::V1.includes(Rule::InputIntact));
/// assert!(Level::V2.includes(Rule::InputIntact) && Level::V2.includes(Rule::Values));
/// assert_eq!(Level::LATEST, Level::V2);
/// assert_eq!("v1".parse::<Level>().unwrap(), Level::V1);
/// ```
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Level {
    /// The thirteen rules of the 0.1 catalogue, frozen.
    V1,
    /// V1's rules, plus what a transfer does besides its output:
    /// `input-intact` and `output-stable`; and `no-leak` also judged from a
    /// device's counts of memory in use, where it keeps no ledger.
    V2,
}

/// The rules a level checks, filtered from the rule catalogue
/// (`harness::__rule_catalogue`): `__level_rules!(LEVEL [callback] { prefix })`
/// expands to `callback! { prefix [test => Variant, ...] }` with the rules
/// introduced at `LEVEL` or before, in catalogue order. The level's list of
/// rules and the macro's tests are both expanded through it; an
/// implementation detail of [`conformance_tests!`](crate::conformance_tests).
#[doc(hidden)]
#[macro_export]
macro_rules! __level_rules {
    ($level:ident [$($callback:tt)*] { $($prefix:tt)* }) => {
        $crate::harness::__rule_catalogue! {
            [$crate::__level_rules] { @filter $level [$($callback)*] { $($prefix)* } [] }
        }
    };
    (@filter $level:ident [$($callback:tt)*] { $($prefix:tt)* } [$($kept:tt)*] []) => {
        $($callback)*! { $($prefix)* [$($kept)*] }
    };
    (@filter V1 $callback:tt $prefix:tt [$($kept:tt)*]
        [$variant:ident $test:ident $id:literal V1 $doc:literal $texts:tt, $($rest:tt)*]) => {
        $crate::__level_rules! { @filter V1 $callback $prefix [$($kept)* $test => $variant,] [$($rest)*] }
    };
    (@filter V1 $callback:tt $prefix:tt [$($kept:tt)*]
        [$variant:ident $test:ident $id:literal $since:ident $doc:literal $texts:tt, $($rest:tt)*]) => {
        $crate::__level_rules! { @filter V1 $callback $prefix [$($kept)*] [$($rest)*] }
    };
    (@filter V2 $callback:tt $prefix:tt [$($kept:tt)*]
        [$variant:ident $test:ident $id:literal $since:ident $doc:literal $texts:tt, $($rest:tt)*]) => {
        $crate::__level_rules! { @filter V2 $callback $prefix [$($kept)* $test => $variant,] [$($rest)*] }
    };
}

/// A `test => Variant` list as a constant slice of rules.
macro_rules! rule_slice {
    ($name:ident [$($test:ident => $variant:ident,)*]) => {
        const $name: &[Rule] = &[$(Rule::$variant),*];
    };
}

__level_rules!(V1 [rule_slice] { V1_RULES });
__level_rules!(V2 [rule_slice] { V2_RULES });

impl Level {
    /// The newest level.
    pub const LATEST: Level = Level::V2;

    /// Every level, oldest first.
    pub const ALL: [Level; 2] = [Level::V1, Level::V2];

    /// The rules this level checks, in catalogue order.
    pub fn rules(self) -> &'static [Rule] {
        match self {
            Level::V1 => V1_RULES,
            Level::V2 => V2_RULES,
        }
    }

    /// Whether `no-leak` is judged from a device's counts of memory in use
    /// too (where it keeps no ledger): from level v2 on.
    pub fn counts_memory(self) -> bool {
        self >= Level::V2
    }

    /// Whether this level checks `rule`.
    pub fn includes(self, rule: Rule) -> bool {
        self.rules().contains(&rule)
    }

    /// The level's name, e.g. `v1`.
    pub fn name(self) -> &'static str {
        match self {
            Level::V1 => "v1",
            Level::V2 => "v2",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A name that is no level.
#[derive(Debug, thiserror::Error)]
#[error("unknown conformance level `{name}`; known levels: v1, v2")]
pub struct UnknownLevel {
    /// The name given.
    pub name: String,
}

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "v1" | "V1" => Ok(Level::V1),
            "v2" | "V2" => Ok(Level::V2),
            other => Err(UnknownLevel {
                name: other.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One catalogue: `Rule::ALL` (the harness's), the levels' lists and
    /// the macro's tests (checked against `Level::rules` by the level test
    /// each expansion carries) must not drift. Every rule of the catalogue
    /// belongs to a level; a rule added later joins a new level, never V1.
    #[test]
    fn every_rule_of_the_catalogue_is_in_exactly_the_levels_that_list_it() {
        let mut levelled: Vec<Rule> = Vec::new();
        for level in Level::ALL {
            let rules = level.rules();
            let mut sorted = rules.to_vec();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), rules.len(), "{level} lists a rule twice");
            assert!(
                rules.windows(2).all(|pair| pair[0] < pair[1]),
                "{level} lists its rules out of catalogue order"
            );
            levelled.extend(rules);
        }
        for rule in Rule::ALL {
            assert!(
                levelled.contains(&rule),
                "rule {rule} is in the catalogue but in no level: add a level for it (V1 is frozen)"
            );
        }
        assert_eq!(Level::LATEST.rules(), Rule::ALL.as_slice());
        // V1 is frozen: its thirteen rules, in their order.
        let v1: Vec<&str> = Level::V1.rules().iter().map(|rule| rule.id()).collect();
        assert_eq!(
            v1,
            [
                "dtype",
                "shape",
                "buffer-length",
                "placement",
                "residency",
                "completion",
                "values",
                "no-error",
                "no-panic",
                "deadline",
                "no-leak",
                "capability-honesty",
                "runtime-agreement"
            ]
        );
        // A later level keeps every rule of an earlier one.
        for pair in Level::ALL.windows(2) {
            assert!(pair[0].rules().iter().all(|rule| pair[1].includes(*rule)));
        }
    }
}
