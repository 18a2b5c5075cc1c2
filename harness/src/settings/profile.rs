//! How many cases a run draws, how large they may be, and how many
//! prepared plans its rig keeps.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::HarnessError;

/// The most programs and plans a rig keeps unless told otherwise
/// ([`Rig::keep_plans`](crate::Rig::keep_plans)); past this many, the one
/// used least recently makes room. Each plan holds the runtime's specialisation of
/// it (about 16 KB), so an unbounded cache would grow with every
/// signature of a long run. (Emptying a full cache instead prepared the
/// hot signatures again with the rest: a fuzz target whose inputs draw
/// hundreds of signatures spent most of its time preparing.)
pub const DEFAULT_PLAN_LIMIT: usize = 256;

/// How many cases to run, and how large they may be.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Profile {
    /// A downstream crate's CI: few, small cases (about 2 s per provider).
    Quick,
    /// The default: enough cases to find narrow corners.
    Default,
    /// 100,000 cases, up to about a million elements.
    Deep,
}

impl Profile {
    /// Cases per provider.
    pub fn cases(self) -> u32 {
        match self {
            Profile::Quick => 256,
            Profile::Default => 2048,
            Profile::Deep => 100_000,
        }
    }

    /// The largest element count a case may have.
    pub fn max_elements(self) -> usize {
        match self {
            Profile::Quick => 4096,
            Profile::Default => 1 << 16,
            Profile::Deep => 1 << 20,
        }
    }

    /// The most prepared plans a generated run of this profile keeps
    /// ([`Watchdog::keep_plans`](crate::Watchdog::keep_plans)). A deep
    /// run's cases reach 16 MiB and its signatures rarely repeat, so it
    /// keeps its host memory for its cases: 64 plans instead of
    /// [`DEFAULT_PLAN_LIMIT`], about 2 MB less
    /// at its peak for a few per cent more time. The smaller profiles'
    /// cases are small, and their time would go to preparing plans again
    /// (the default profile took a sixth longer with 64).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::DEFAULT_PLAN_LIMIT;
    /// use tenferro_transfer_harness::strategy::Profile;
    ///
    /// assert_eq!(Profile::Default.plans_kept(), DEFAULT_PLAN_LIMIT);
    /// assert!(Profile::Deep.plans_kept() < DEFAULT_PLAN_LIMIT);
    /// ```
    pub fn plans_kept(self) -> usize {
        match self {
            Profile::Quick | Profile::Default => DEFAULT_PLAN_LIMIT,
            Profile::Deep => 64,
        }
    }

    /// The profile named by [`PROFILE_ENV`](super::PROFILE_ENV), or `Default` when it is unset.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Settings`] naming the bad value when a setting is
    /// not one the suite knows ([`crate::Settings::current`]).
    pub fn from_env() -> Result<Self, HarnessError> {
        Ok(crate::Settings::current()?
            .profile
            .unwrap_or(Profile::Default))
    }

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
            Profile::Deep => "deep",
        }
    }
}

impl FromStr for Profile {
    type Err = HarnessError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "quick" => Ok(Profile::Quick),
            "default" => Ok(Profile::Default),
            "deep" => Ok(Profile::Deep),
            other => Err(HarnessError::InvalidCase {
                reason: format!("unknown profile `{other}`; known profiles: quick, default, deep"),
            }),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}
