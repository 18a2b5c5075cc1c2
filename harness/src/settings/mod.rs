//! Every `TRANSFER_CONFORMANCE_*` environment variable, read in one place,
//! once per process: [`Settings::current`]. A value the suite does not
//! know, or a variable of that prefix it does not know (a typo such as
//! `TRANSFER_CONFORMANCE_PROFIL`), is a [`SettingsError`] naming it, never
//! silently ignored. [`SETTINGS`] is the table the docs print.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

mod profile;

pub use profile::{DEFAULT_PLAN_LIMIT, Profile};

/// The prefix of every setting.
pub const PREFIX: &str = "TRANSFER_CONFORMANCE_";

/// `TRANSFER_CONFORMANCE_PROFILE`: the generated-case profile.
pub const PROFILE_ENV: &str = "TRANSFER_CONFORMANCE_PROFILE";
/// `TRANSFER_CONFORMANCE_SEED`: the generator's seed.
pub const SEED_ENV: &str = "TRANSFER_CONFORMANCE_SEED";
/// `TRANSFER_CONFORMANCE_REPLAY`: a recipe (one line of JSON) to replay
/// instead of running the suite.
pub const REPLAY_ENV: &str = "TRANSFER_CONFORMANCE_REPLAY";
/// `TRANSFER_CONFORMANCE_ROUTES`: the declared routes (comma-separated) a
/// `ProviderSuite` runs; the others are skipped.
pub const ROUTES_ENV: &str = "TRANSFER_CONFORMANCE_ROUTES";
/// `TRANSFER_CONFORMANCE_PROVIDER`: the built-in provider a replay under
/// `cargo test --test generated` runs.
pub const PROVIDER_ENV: &str = "TRANSFER_CONFORMANCE_PROVIDER";
/// `TRANSFER_CONFORMANCE_INJECT`: the faults (comma-separated) such a
/// replay injects.
pub const INJECT_ENV: &str = "TRANSFER_CONFORMANCE_INJECT";
/// `TRANSFER_CONFORMANCE_NO_SKIP`: `1` turns a skipped rule test into a
/// failure.
pub const NO_SKIP_ENV: &str = "TRANSFER_CONFORMANCE_NO_SKIP";
/// `TRANSFER_CONFORMANCE_REPORT`: a file the whole report is written to.
pub const REPORT_FILE_ENV: &str = "TRANSFER_CONFORMANCE_REPORT";
/// `TRANSFER_CONFORMANCE_REQUIRE_DEVICES`: `all`, or device kinds
/// (comma-separated), whose absence is a failure instead of a skip.
pub const REQUIRE_DEVICES_ENV: &str = "TRANSFER_CONFORMANCE_REQUIRE_DEVICES";
/// `TRANSFER_CONFORMANCE_REQUIRE_<KIND>`: `1` is an alias of
/// `TRANSFER_CONFORMANCE_REQUIRE_DEVICES=<kind>`, for any device kind: the
/// kind in capitals, each `-` written `_` (`TRANSFER_CONFORMANCE_REQUIRE_SIM=1`,
/// `TRANSFER_CONFORMANCE_REQUIRE_VENDOR_NPU=1` for `vendor-npu`). A device
/// crate may name its own alias; [`require_kind_env`] writes it.
pub const REQUIRE_KIND_ENV: &str = "TRANSFER_CONFORMANCE_REQUIRE_<KIND>";

/// The prefix of a device kind's alias ([`REQUIRE_KIND_ENV`]).
const REQUIRE_KIND_PREFIX: &str = "TRANSFER_CONFORMANCE_REQUIRE_";

/// The variable that requires devices of `kind` ([`REQUIRE_KIND_ENV`]).
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::settings::require_kind_env;
///
/// assert_eq!(require_kind_env("vendor-npu"), "TRANSFER_CONFORMANCE_REQUIRE_VENDOR_NPU");
/// ```
pub fn require_kind_env(kind: &str) -> String {
    format!(
        "{REQUIRE_KIND_PREFIX}{}",
        kind.to_ascii_uppercase().replace('-', "_")
    )
}

/// The device kind a variable `name` of the form [`REQUIRE_KIND_ENV`]
/// requires, or `None` for any other variable.
fn required_kind(name: &str) -> Option<String> {
    let kind = name.strip_prefix(REQUIRE_KIND_PREFIX)?;
    // `_DEVICES` is the list itself, and `_DEVICE` a typo of it, not a
    // kind: both stay unknown to this reading.
    let well_formed = !kind.is_empty()
        && kind != "DEVICES"
        && kind != "DEVICE"
        && kind
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    well_formed.then(|| kind.to_ascii_lowercase().replace('_', "-"))
}
/// `NEXTEST_RUN_ID`: set by nextest; the suite then runs once per test
/// binary and its other test processes read the run.
pub const NEXTEST_RUN_ID_ENV: &str = "NEXTEST_RUN_ID";

/// One setting, as the docs' table lists it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct SettingDoc {
    /// The variable.
    pub name: &'static str,
    /// What it takes.
    pub values: &'static str,
    /// Its default.
    pub default: &'static str,
    /// What it does.
    pub effect: &'static str,
    /// Who reads it: a provider crate's `cargo test` (through
    /// `ProviderSuite`), and which commands of the CLI.
    pub read_by: &'static str,
    /// Whether a provider crate sets it (`true`), or only this repository's
    /// own tests do (`false`).
    pub vendor_facing: bool,
}

/// Every setting the suite reads, in the order the docs list them.
pub const SETTINGS: [SettingDoc; 11] = [
    SettingDoc {
        name: PROFILE_ENV,
        values: "`quick`, `default`, `deep`",
        default: "the suite's declared profile (`quick`); `default` for the CLI's `generated`",
        effect: "how many generated and concurrent cases run, and how large",
        read_by: "`cargo test` (`ProviderSuite`); the CLI's `generated`, where `--profile` is not given",
        vendor_facing: true,
    },
    SettingDoc {
        name: SEED_ENV,
        values: "an unsigned integer",
        default: "drawn, and printed with every failure",
        effect: "the seed of the generated and concurrent cases",
        read_by: "`cargo test` (`ProviderSuite`); the CLI's `generated`, where `--seed` is not given",
        vendor_facing: true,
    },
    SettingDoc {
        name: REPLAY_ENV,
        values: "a recipe (one line of JSON, as a failure prints it)",
        default: "unset: run the whole suite",
        effect: "run only that case, on every declared route",
        read_by: "`cargo test` (`ProviderSuite`, and this repository's `--test generated`)",
        vendor_facing: true,
    },
    SettingDoc {
        name: ROUTES_ENV,
        values: "declared route names, comma-separated",
        default: "unset: every declared route",
        effect: "run only these routes, as a failure's rerun line does (the others' rule tests are skipped; a name the suite does not declare fails every route)",
        read_by: "`cargo test` (`ProviderSuite`)",
        vendor_facing: true,
    },
    SettingDoc {
        name: PROVIDER_ENV,
        values: "a built-in provider's name",
        default: "unset: every built-in provider",
        effect: "the provider a replay under `cargo test --test generated` runs",
        read_by: "this repository's `cargo test --test generated`",
        vendor_facing: false,
    },
    SettingDoc {
        name: INJECT_ENV,
        values: "fault names, comma-separated",
        default: "none",
        effect: "the faults a replay under `cargo test --test generated` injects",
        read_by: "this repository's `cargo test --test generated`",
        vendor_facing: false,
    },
    SettingDoc {
        name: NO_SKIP_ENV,
        values: "`1` or `0`",
        default: "`0`",
        effect: "`1` turns a skipped rule test into a failure",
        read_by: "`cargo test` (`ProviderSuite`)",
        vendor_facing: true,
    },
    SettingDoc {
        name: REPORT_FILE_ENV,
        values: "a path ending in `.json`, `.md`, `.xml` or anything else (a table)",
        default: "unset: no file",
        effect: "the whole report of a `ProviderSuite` run is written there by the suite's rule tests (`conformance_tests!`, `ProviderSuite::shared_run`); a test that calls `ProviderSuite::run` itself holds the `Report` and writes it (`report.to_json()?` and `to_junit()?` return a `Result`; `to_markdown()` and `to_table()` a `String`)",
        read_by: "`cargo test` (`ProviderSuite`)",
        vendor_facing: true,
    },
    SettingDoc {
        name: REQUIRE_DEVICES_ENV,
        values: "`all`, or device kinds, comma-separated (`sim`, your adapter's `kind`)",
        default: "unset: an absent device is a skip",
        effect: "an absent device of a named kind fails every case of its routes instead of skipping them",
        read_by: "`cargo test` (`ProviderSuite`); every CLI command that runs providers",
        vendor_facing: true,
    },
    SettingDoc {
        name: REQUIRE_KIND_ENV,
        values: "`1` or `0`",
        default: "`0`",
        effect: "`1` is an alias of `TRANSFER_CONFORMANCE_REQUIRE_DEVICES=<kind>`, the kind in capitals with `-` written `_` (`TRANSFER_CONFORMANCE_REQUIRE_SIM=1`)",
        read_by: "`cargo test` (`ProviderSuite`); every CLI command that runs providers",
        vendor_facing: true,
    },
    SettingDoc {
        name: NEXTEST_RUN_ID_ENV,
        values: "set by nextest",
        default: "unset",
        effect: "the suite runs once per test binary, and nextest's other test processes read its report",
        read_by: "`cargo nextest` (`ProviderSuite`)",
        vendor_facing: true,
    },
];

/// A setting with a value the suite does not know.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The variable is one of the suite's, its value is not.
    #[error("{name}={value} is not a valid value; it takes {expected}")]
    BadValue {
        /// The variable.
        name: String,
        /// The value given.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A variable with the suite's prefix that names no setting (a typo).
    #[error("{name} is not a setting of the suite; known settings: {known}")]
    UnknownVariable {
        /// The variable.
        name: String,
        /// Every setting of the suite.
        known: String,
    },
}

/// Which absent devices are a failure instead of a skip.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum RequiredDevices {
    /// None: an absent device is a skip.
    #[default]
    None,
    /// Every device.
    All,
    /// Devices of these kinds.
    Kinds(Vec<String>),
}

impl RequiredDevices {
    /// Whether a device of `kind` is required.
    pub fn requires(&self, kind: &str) -> bool {
        match self {
            RequiredDevices::None => false,
            RequiredDevices::All => true,
            RequiredDevices::Kinds(kinds) => kinds.iter().any(|named| named == kind),
        }
    }
}

/// Every `TRANSFER_CONFORMANCE_*` setting of this process.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::settings::{Settings, SettingsError};
/// use tenferro_transfer_harness::strategy::Profile;
///
/// let settings = Settings::from_vars([
///     ("TRANSFER_CONFORMANCE_PROFILE", "deep"),
///     ("TRANSFER_CONFORMANCE_REQUIRE_VENDOR_NPU", "1"),
///     ("PATH", "/usr/bin"),
/// ])
/// .unwrap();
/// assert_eq!(settings.profile, Some(Profile::Deep));
/// assert!(settings.require_devices.requires("vendor-npu"));
///
/// let typo = Settings::from_vars([("TRANSFER_CONFORMANCE_PROFIL", "deep")]).unwrap_err();
/// assert!(matches!(typo, SettingsError::UnknownVariable { .. }));
/// let bad = Settings::from_vars([("TRANSFER_CONFORMANCE_NO_SKIP", "yes")]).unwrap_err();
/// assert!(bad.to_string().contains("TRANSFER_CONFORMANCE_NO_SKIP=yes"));
/// ```
#[derive(Clone, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// [`PROFILE_ENV`].
    pub profile: Option<Profile>,
    /// [`SEED_ENV`].
    pub seed: Option<u64>,
    /// [`REPLAY_ENV`].
    pub replay: Option<String>,
    /// [`ROUTES_ENV`], split at commas (empty: every route).
    pub routes: Vec<String>,
    /// [`PROVIDER_ENV`].
    pub provider: Option<String>,
    /// [`INJECT_ENV`], split at commas.
    pub inject: Vec<String>,
    /// [`NO_SKIP_ENV`].
    pub no_skip: bool,
    /// [`REPORT_FILE_ENV`].
    pub report_file: Option<PathBuf>,
    /// [`REQUIRE_DEVICES_ENV`] and every [`REQUIRE_KIND_ENV`].
    pub require_devices: RequiredDevices,
    /// The setting that required devices, as written, for messages.
    pub require_setting: Option<String>,
    /// [`NEXTEST_RUN_ID_ENV`].
    pub nextest_run_id: Option<String>,
}

fn flag(name: &str, value: &str) -> Result<bool, SettingsError> {
    match value.trim() {
        "1" => Ok(true),
        "0" | "" => Ok(false),
        _ => Err(SettingsError::BadValue {
            name: name.to_owned(),
            value: value.to_owned(),
            expected: "`1` or `0`",
        }),
    }
}

/// The non-empty items of a comma-separated `value`, trimmed.
fn comma_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The error for `name`, of the suite's prefix, that names no setting.
fn unknown_variable(name: &str) -> SettingsError {
    SettingsError::UnknownVariable {
        name: name.to_owned(),
        known: SETTINGS
            .iter()
            .filter(|setting| setting.name.starts_with(PREFIX))
            .map(|setting| setting.name)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

impl Settings {
    /// The settings of this process's environment, read once.
    ///
    /// # Errors
    ///
    /// The first setting with a value the suite does not know, or the
    /// first variable of the suite's prefix that names no setting.
    pub fn current() -> Result<&'static Settings, SettingsError> {
        static CURRENT: OnceLock<Result<Settings, SettingsError>> = OnceLock::new();
        CURRENT
            .get_or_init(|| {
                Settings::from_vars(std::env::vars_os().filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                }))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The settings `vars` (name, value pairs) hold; variables outside
    /// the suite's are ignored.
    ///
    /// # Errors
    ///
    /// As [`Settings::current`].
    pub fn from_vars<N: AsRef<str>, V: AsRef<str>>(
        vars: impl IntoIterator<Item = (N, V)>,
    ) -> Result<Self, SettingsError> {
        let mut settings = Settings::default();
        let mut aliases = Vec::new();
        for (name, value) in vars {
            let (name, value) = (name.as_ref(), value.as_ref());
            match required_kind(name) {
                Some(kind) => {
                    if flag(name, value)? {
                        aliases.push((name.to_owned(), kind));
                    }
                }
                None => settings.read(name, value)?,
            }
        }
        aliases.sort();
        for (name, kind) in aliases {
            if !settings.require_devices.requires(&kind) {
                settings.require_kind(&name, kind);
            }
        }
        Ok(settings)
    }

    /// Read the variable `name`, set to `value`, into these settings
    /// (all but the [`REQUIRE_KIND_ENV`] aliases, read last); a variable
    /// outside the suite's is ignored.
    fn read(&mut self, name: &str, value: &str) -> Result<(), SettingsError> {
        match name {
            PROFILE_ENV => {
                self.profile =
                    Some(
                        Profile::from_str(value.trim()).map_err(|_| SettingsError::BadValue {
                            name: PROFILE_ENV.to_owned(),
                            value: value.to_owned(),
                            expected: "`quick`, `default` or `deep`",
                        })?,
                    );
            }
            SEED_ENV => {
                self.seed = Some(value.trim().parse().map_err(|_| SettingsError::BadValue {
                    name: SEED_ENV.to_owned(),
                    value: value.to_owned(),
                    expected: "an unsigned integer",
                })?);
            }
            REPLAY_ENV => self.replay = Some(value.to_owned()),
            ROUTES_ENV => self.routes = comma_list(value),
            PROVIDER_ENV => self.provider = Some(value.trim().to_owned()),
            INJECT_ENV => self.inject = comma_list(value),
            NO_SKIP_ENV => self.no_skip = flag(NO_SKIP_ENV, value)?,
            REPORT_FILE_ENV => {
                if !value.is_empty() {
                    self.report_file = Some(PathBuf::from(value));
                }
            }
            REQUIRE_DEVICES_ENV => self.read_require_devices(value),
            NEXTEST_RUN_ID_ENV => self.nextest_run_id = Some(value.to_owned()),
            other if other.starts_with(PREFIX) => return Err(unknown_variable(other)),
            _ => {}
        }
        Ok(())
    }

    /// Read [`REQUIRE_DEVICES_ENV`], set to `value`.
    fn read_require_devices(&mut self, value: &str) {
        let kinds = comma_list(value);
        if kinds.iter().any(|kind| kind == "all") {
            self.require_devices = RequiredDevices::All;
        } else if !kinds.is_empty() {
            self.require_devices = RequiredDevices::Kinds(kinds);
        }
        if self.require_devices != RequiredDevices::None {
            self.require_setting = Some(format!("{REQUIRE_DEVICES_ENV}={value}"));
        }
    }

    /// Add `kind` to the required devices, as its alias `name`
    /// ([`REQUIRE_KIND_ENV`]) asks, naming that setting when no other
    /// required devices.
    fn require_kind(&mut self, name: &str, kind: String) {
        self.require_devices = match std::mem::take(&mut self.require_devices) {
            RequiredDevices::Kinds(mut kinds) => {
                kinds.push(kind);
                RequiredDevices::Kinds(kinds)
            }
            _ => RequiredDevices::Kinds(vec![kind]),
        };
        if self.require_setting.is_none() {
            self.require_setting = Some(format!("{name}=1"));
        }
    }

    /// The setting (as written) that requires every device, when one does:
    /// a route that says itself that its device is not here, without an
    /// endpoint that names the device's kind, fails under it.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::settings::Settings;
    ///
    /// let all = Settings::from_vars([("TRANSFER_CONFORMANCE_REQUIRE_DEVICES", "all")]).unwrap();
    /// assert!(all.requiring_every_device().unwrap().ends_with("=all"));
    /// let cuda = Settings::from_vars([("TRANSFER_CONFORMANCE_REQUIRE_DEVICES", "cuda")]).unwrap();
    /// assert!(cuda.requiring_every_device().is_none());
    /// ```
    pub fn requiring_every_device(&self) -> Option<String> {
        matches!(self.require_devices, RequiredDevices::All).then(|| {
            self.require_setting
                .clone()
                .unwrap_or_else(|| format!("{REQUIRE_DEVICES_ENV}=all"))
        })
    }

    /// The setting (as written) that requires a device of `kind`, when one
    /// does.
    pub fn requiring(&self, kind: &str) -> Option<String> {
        self.require_devices.requires(kind).then(|| {
            self.require_setting
                .clone()
                .unwrap_or_else(|| format!("{REQUIRE_DEVICES_ENV}={kind}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_row_and_every_row_is_read() {
        for setting in SETTINGS {
            // A value no setting takes: a flag rejects it, the others
            // either reject it or keep it.
            let name = setting.name.replace("<KIND>", "SIM");
            let read = Settings::from_vars([(name.as_str(), "1")]);
            assert!(
                !matches!(read, Err(SettingsError::UnknownVariable { .. })),
                "{} is in the table but not read",
                setting.name
            );
        }
    }

    #[test]
    fn a_kind_alias_requires_its_kind_and_names_itself() {
        let npu = require_kind_env("vendor-npu");
        let settings = Settings::from_vars([(npu.as_str(), "1")]).unwrap();
        assert!(settings.require_devices.requires("vendor-npu"));
        assert!(!settings.require_devices.requires("sim"));
        assert_eq!(
            settings.requiring("vendor-npu").as_deref(),
            Some("TRANSFER_CONFORMANCE_REQUIRE_VENDOR_NPU=1")
        );
        let off = Settings::from_vars([(npu.as_str(), "0")]).unwrap();
        assert_eq!(off.require_devices, RequiredDevices::None);
        // Beside the list, the alias adds its kind and the list is named.
        let both =
            Settings::from_vars([(npu.as_str(), "1"), (REQUIRE_DEVICES_ENV, "sim")]).unwrap();
        assert!(both.require_devices.requires("vendor-npu"));
        assert!(both.require_devices.requires("sim"));
        assert_eq!(
            both.requiring("sim").as_deref(),
            Some("TRANSFER_CONFORMANCE_REQUIRE_DEVICES=sim")
        );
        // Not aliases: the list itself, and names no kind is written as.
        assert_eq!(required_kind(REQUIRE_DEVICES_ENV), None);
        assert!(matches!(
            Settings::from_vars([("TRANSFER_CONFORMANCE_REQUIRE_DEVICE", "1")]),
            Err(SettingsError::UnknownVariable { .. })
        ));
        assert_eq!(required_kind("TRANSFER_CONFORMANCE_REQUIRE_"), None);
        assert_eq!(required_kind("TRANSFER_CONFORMANCE_REQUIRE_npu"), None);
        let all = Settings::from_vars([(REQUIRE_DEVICES_ENV, "all")]).unwrap();
        assert!(all.require_devices.requires("vendor-npu"));
        assert_eq!(
            all.requiring("npu").as_deref(),
            Some("TRANSFER_CONFORMANCE_REQUIRE_DEVICES=all")
        );
    }

    #[test]
    fn bad_values_and_typos_are_errors_that_name_them() {
        for (name, value) in [
            (PROFILE_ENV, "fast"),
            (SEED_ENV, "-1"),
            (NO_SKIP_ENV, "yes"),
            ("TRANSFER_CONFORMANCE_REQUIRE_SIM", "true"),
        ] {
            let error = Settings::from_vars([(name, value)]).unwrap_err();
            assert!(
                error.to_string().contains(&format!("{name}={value}")),
                "{error}"
            );
        }
        let typo = Settings::from_vars([("TRANSFER_CONFORMANCE_SEEDS", "1")]).unwrap_err();
        assert!(
            typo.to_string().contains("TRANSFER_CONFORMANCE_SEEDS"),
            "{typo}"
        );
    }
}
