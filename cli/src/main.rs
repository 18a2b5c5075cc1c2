//! `transfer-conformance`: runs the conformance suite against the built-in
//! providers and prints the report.
//!
//! The CLI is its own crate so that a provider crate's `[dev-dependencies]`
//! on `tenferro-transfer-conformance` never compiles clap or indicatif.

// No function past 80 lines of code (clippy.toml); the oracle's
// rule-by-rule checks are the allowed exception, marked where they are.
#![warn(clippy::too_many_lines)]

mod progress;

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use progress::TerminalProgress;
use tenferro_transfer_conformance::generated::{GeneratedOptions, replay, run_generated};
use tenferro_transfer_conformance::harness::settings::SEED_ENV;
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{HarnessError, Rule, Settings, panic_message};
use tenferro_transfer_conformance::mock_devices::providers::Fault;
use tenferro_transfer_conformance::record::CaseOutcome;
use tenferro_transfer_conformance::{
    BuiltinProvider, ReportFormat, SuiteOptions, all_builtin_providers, builtin_provider,
    run_fixed_suite_with_progress, selftest,
};

/// Exit codes, as `--help` prints them. README.md and
/// docs/report-format.md repeat these rows word for word
/// (`cli/tests/docs.rs` compares them).
const EXIT_CODES: &str = "\
Exit codes:
  0  every case passed (skipped cases, if any, are listed, never counted as passes)
  1  at least one case failed (a broken rule, or a case the harness could not set up)
  2  bad usage (an unknown flag, provider, fault or profile, a flag, format or
     TRANSFER_CONFORMANCE_* setting the command does not take, a setting's value
     the suite does not know, a recipe that does not parse), or a report that
     could not be written
  3  nothing was checked: no case failed and none passed (every case skipped)

What each command returns: docs/report-format.md, \"Exit codes\".";

/// Conformance suite for tenferro TransferProvider implementations.
///
/// With no subcommand, runs every built-in provider on its route over all
/// seven dtypes and the fixed shapes, prints the report, and exits non-zero
/// if any case fails.
#[derive(Debug, Parser)]
#[command(name = "transfer-conformance", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Report format. The suite run takes all four; `self-test`,
    /// `generated` and `rules` take table and json; `replay` takes table.
    #[arg(long, value_enum, default_value_t = Format::Table, global = true)]
    format: Format,
    /// Colour the suite run's table (the only coloured output): auto (the
    /// default) colours only when stdout is a terminal and NO_COLOR is
    /// unset or empty. Only the suite run, in the table format, takes it.
    #[arg(long, value_enum, value_name = "WHEN", global = true)]
    color: Option<ColourChoice>,
    /// Run only this built-in provider (repeatable): sim-upload, sim-download, sim-peer, host,
    /// cuda-upload, cuda-download. Every command but `rules` takes it.
    #[arg(long = "provider", value_name = "NAME", global = true)]
    providers: Vec<String>,
    /// Inject a fault into every provider (repeatable), to see how a broken
    /// provider is reported; e.g. one-ulp, wrong-dtype. The suite run,
    /// `generated` and `replay` take it.
    #[arg(long = "inject", value_name = "FAULT", value_parser = parse_fault, global = true)]
    inject: Vec<Fault>,
    /// Per-case deadline in milliseconds (default 60000): a provider that
    /// has not returned by then fails the `deadline` rule, and the run goes
    /// on. The suite run and `generated` take it.
    #[arg(long = "deadline-ms", value_name = "MS", global = true)]
    deadline_ms: Option<u64>,
}

/// The per-case deadline when `--deadline-ms` is not given.
const DEFAULT_DEADLINE_MS: u64 = 60_000;

impl Cli {
    fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms.unwrap_or(DEFAULT_DEADLINE_MS))
    }
}

fn parse_fault(name: &str) -> Result<Fault, String> {
    Fault::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Fault::ALL.iter().map(|fault| fault.name()).collect();
        format!("unknown fault `{name}`; known faults: {}", known.join(", "))
    })
}

/// Silence the panics the broken providers inject on purpose (the Spy
/// catches and reports them); every other panic still prints.
fn quiet_injected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_message(info.payload()).starts_with("injected panic") {
            default(info);
        }
    }));
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the suite (the default).
    Run,
    /// List the rule catalogue.
    Rules,
    /// Run every deliberately broken provider and print the kill matrix.
    SelfTest,
    /// Run proptest-generated cases through each provider; a failure is
    /// shrunk to a minimal case and printed with a replay command.
    Generated {
        /// Case profile: quick, default or deep (default: TRANSFER_CONFORMANCE_PROFILE,
        /// else default).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Generator seed (default: TRANSFER_CONFORMANCE_SEED, else drawn;
        /// always printed).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Replay one case recipe (the JSON a failing generated run prints).
    Replay {
        /// The recipe.
        recipe: String,
    },
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    name.parse()
        .map_err(|error: tenferro_transfer_conformance::harness::HarnessError| error.to_string())
}

#[derive(Clone, Copy, Debug, Eq, PartialEq, ValueEnum)]
enum Format {
    /// Aligned text, one row per case (colour only on a terminal).
    Table,
    /// JSON, as docs/report-format.md describes it.
    Json,
    /// A rules x routes x dtypes matrix, for a pull request.
    Markdown,
    /// JUnit XML, for CI systems.
    Junit,
}

impl Format {
    fn report_format(self) -> ReportFormat {
        match self {
            Format::Table => ReportFormat::Table,
            Format::Json => ReportFormat::Json,
            Format::Markdown => ReportFormat::Markdown,
            Format::Junit => ReportFormat::Junit,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColourChoice {
    /// Colour when stdout is a terminal and NO_COLOR is unset or empty.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColourChoice {
    fn enabled(self) -> bool {
        match self {
            ColourChoice::Always => true,
            ColourChoice::Never => false,
            ColourChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
            }
        }
    }
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Run => "the suite run",
            Command::Rules => "rules",
            Command::SelfTest => "self-test",
            Command::Generated { .. } => "generated",
            Command::Replay { .. } => "replay",
        }
    }

    /// The formats a command can print. Asking for another is bad usage
    /// (exit code 2), never a silent fallback to another format.
    fn formats(&self) -> &'static [Format] {
        match self {
            Command::Run => &[Format::Table, Format::Json, Format::Markdown, Format::Junit],
            Command::Rules | Command::SelfTest | Command::Generated { .. } => {
                &[Format::Table, Format::Json]
            }
            Command::Replay { .. } => &[Format::Table],
        }
    }
}

/// Flags a command does not take are bad usage (exit code 2), as formats
/// are: a flag that silently did nothing would look like a check that ran.
fn check_flags(command: &Command, cli: &Cli) -> Result<(), String> {
    let takes = |flag: &str| match command {
        Command::Run => flag != "--color" || cli.format == Format::Table,
        Command::Generated { .. } => flag != "--color",
        Command::Replay { .. } => flag != "--deadline-ms" && flag != "--color",
        Command::SelfTest => flag == "--provider",
        Command::Rules => false,
    };
    let given = [
        ("--provider", !cli.providers.is_empty()),
        ("--inject", !cli.inject.is_empty()),
        ("--deadline-ms", cli.deadline_ms.is_some()),
        ("--color", cli.color.is_some()),
    ];
    match given.iter().find(|(flag, given)| *given && !takes(flag)) {
        Some(("--color", _)) => Err(format!(
            "--color does not apply to {}: only the suite run's table is coloured",
            match command {
                Command::Run => "--format json, markdown or junit",
                command => command.name(),
            }
        )),
        Some((flag, _)) => Err(format!("{flag} does not apply to {}", command.name())),
        None => Ok(()),
    }
}

/// Settings of the environment a command does not read are bad usage, as
/// flags are: `generated` reads the profile and the seed, every command
/// that runs providers reads which devices are required, and the others
/// (a replay, a provider or faults for `cargo test --test generated`, no
/// skips, a report file) are `cargo test`'s alone.
fn check_settings(command: &Command, settings: &Settings) -> Result<(), String> {
    use tenferro_transfer_conformance::harness::settings::{
        INJECT_ENV, NO_SKIP_ENV, PROFILE_ENV, PROVIDER_ENV, REPLAY_ENV, REPORT_FILE_ENV,
        REQUIRE_DEVICES_ENV,
    };
    let generated = matches!(command, Command::Generated { .. });
    let given = [
        (PROFILE_ENV, settings.profile.is_some(), generated),
        (SEED_ENV, settings.seed.is_some(), generated),
        (
            settings
                .require_setting
                .as_deref()
                .unwrap_or(REQUIRE_DEVICES_ENV),
            settings.require_setting.is_some(),
            !matches!(command, Command::Rules),
        ),
        (REPLAY_ENV, settings.replay.is_some(), false),
        (PROVIDER_ENV, settings.provider.is_some(), false),
        (INJECT_ENV, !settings.inject.is_empty(), false),
        (NO_SKIP_ENV, settings.no_skip, false),
        (REPORT_FILE_ENV, settings.report_file.is_some(), false),
    ];
    match given.iter().find(|(_, given, read)| *given && !read) {
        Some((name, ..)) => Err(format!(
            "{name} is set, and {} does not read it (docs/settings.md says who reads each setting)",
            command.name()
        )),
        None => Ok(()),
    }
}

fn check_format(command: &Command, format: Format) -> Result<(), String> {
    if command.formats().contains(&format) {
        return Ok(());
    }
    let name = |format: &Format| format.report_format().name();
    Err(format!(
        "--format {} does not apply to {}; it takes {}",
        name(&format),
        command.name(),
        command
            .formats()
            .iter()
            .map(name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    quiet_injected_panics();
    // The suite's TRANSFER_CONFORMANCE_* settings, read once: one it does
    // not know (a bad value, a misspelt name) is bad usage, and so is one
    // the command does not read.
    let settings = match Settings::current() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let providers = match select(&cli.providers) {
        Ok(providers) => providers,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.take().unwrap_or(Command::Run);
    if let Err(message) = check_format(&command, cli.format)
        .and_then(|()| check_flags(&command, &cli))
        .and_then(|()| check_settings(&command, settings))
    {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    match command {
        Command::Run => run_suite(&cli, &providers),
        Command::Rules => {
            let text = rules_text(cli.format);
            // `finish` ends the text with the newline it already has.
            finish(Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned()), 0)
        }
        Command::SelfTest => {
            let report = selftest::run(&providers);
            let text = match cli.format {
                Format::Json => report.to_json().map_err(|error| error.to_string()),
                _ => Ok(report.to_table()),
            };
            finish(text, u8::from(!report.passed()))
        }
        Command::Generated { profile, seed } => {
            // A flag wins over the setting.
            let profile = profile.or(settings.profile).unwrap_or(Profile::Default);
            let options = GeneratedOptions {
                seed: seed.or(settings.seed),
                inject: cli.inject.clone(),
                deadline: cli.deadline().into(),
                ..GeneratedOptions::new(profile)
            };
            run_generated_command(cli.format, &providers, &options)
        }
        Command::Replay { recipe } => run_replay(&cli, &providers, &recipe),
    }
}

/// The suite run: every provider of `providers` over the fixed cases,
/// with progress on stderr, and the report in `cli`'s format.
fn run_suite(cli: &Cli, providers: &[BuiltinProvider]) -> ExitCode {
    let options = SuiteOptions {
        inject: cli.inject.clone(),
        deadline: cli.deadline(),
        ..SuiteOptions::default()
    };
    let report =
        run_fixed_suite_with_progress(providers, &options, &mut TerminalProgress::stderr());
    let text = match cli.format {
        Format::Table => {
            Ok(report.to_table_coloured(cli.color.unwrap_or(ColourChoice::Auto).enabled()))
        }
        format => report
            .render(format.report_format())
            .map_err(|error| error_chain(&error)),
    };
    finish(text, report.outcome().exit_code())
}

/// `generated`: the generated cases of `options` on each provider of
/// `providers`, the reports printed in `format`.
fn run_generated_command(
    format: Format,
    providers: &[BuiltinProvider],
    options: &GeneratedOptions,
) -> ExitCode {
    let mut reports = Vec::new();
    // A provider the harness could not run fails the run, as a case
    // it could not set up fails the suite run; the others still run.
    let mut errors = 0;
    for provider in providers {
        match run_generated(provider, options) {
            Ok(report) => reports.push(report),
            Err(error) if error.is_skip() => {
                eprintln!("skip: {}: {error}", provider.name);
            }
            Err(error) => {
                eprintln!("error: {}: {error}", provider.name);
                errors += 1;
            }
        }
    }
    let failed = errors > 0 || reports.iter().any(|report| report.failure.is_some());
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&reports).map_err(|error| error.to_string()),
        _ => Ok(reports
            .iter()
            .map(|report| report.to_text())
            .collect::<String>()),
    };
    finish(text, judged_exit_code(failed, !reports.is_empty()))
}

/// `replay`: the case of `recipe` on each provider of `providers`, one
/// verdict a provider.
fn run_replay(cli: &Cli, providers: &[BuiltinProvider], recipe: &str) -> ExitCode {
    let recipe: Recipe = match recipe.parse() {
        Ok(recipe) => recipe,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut verdicts = ReplayVerdicts::default();
    for provider in providers {
        verdicts.add(provider, replay(provider, &cli.inject, &recipe));
    }
    finish(
        Ok(verdicts.out),
        judged_exit_code(verdicts.failed, verdicts.judged),
    )
}

/// What a replay found so far, provider by provider.
#[derive(Default)]
struct ReplayVerdicts {
    /// Whether a provider failed, or could not replay the case.
    failed: bool,
    /// Whether a provider's answer was judged.
    judged: bool,
    /// The lines printed.
    out: String,
}

impl ReplayVerdicts {
    /// Add the replay of `provider`, which gave `replayed`.
    fn add(&mut self, provider: &BuiltinProvider, replayed: Result<CaseOutcome, HarnessError>) {
        let out = &mut self.out;
        match replayed {
            Ok(CaseOutcome::Skipped { reason }) => {
                out.push_str(&format!(
                    "{}: skip: not run here: {reason}\n",
                    provider.name
                ));
            }
            Ok(CaseOutcome::NotSetUp { message }) => {
                self.failed = true;
                out.push_str(&format!("{}: cannot replay: {message}\n", provider.name));
            }
            Ok(outcome) => {
                self.judged = true;
                self.failed |= outcome.failed();
                out.push_str(&format!(
                    "{}: {}\n",
                    provider.name,
                    if outcome.failed() { "FAIL" } else { "pass" }
                ));
                for violation in outcome.violations() {
                    out.push_str(&format!("  {}: {}\n", violation.rule, violation.message));
                }
            }
            Err(error) if error.is_skip() => {
                out.push_str(&format!("{}: skip: {error}\n", provider.name));
            }
            Err(error) => {
                self.failed = true;
                out.push_str(&format!(
                    "{}: cannot replay: {}\n",
                    provider.name,
                    error_chain(&error)
                ));
            }
        }
    }
}

/// The exit code of a command that judges providers: 1 when anything
/// failed, 3 when nothing was judged (every provider skipped: a skip is
/// never a pass), else 0.
fn judged_exit_code(failed: bool, judged: bool) -> u8 {
    match (failed, judged) {
        (true, _) => 1,
        (false, false) => 3,
        (false, true) => 0,
    }
}

/// An error and its sources, joined by `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::once(error.to_string())
        .chain(tenferro_transfer_conformance::harness::source_chain(error))
        .collect::<Vec<_>>()
        .join(": ")
}

/// Print the report and exit with `code`; a report that cannot be rendered
/// or written to stdout (a closed pipe, a full disk) exits 2 instead.
fn finish(text: Result<String, String>, code: u8) -> ExitCode {
    let text = match text {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: cannot render the report: {error}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: cannot write the report: {error}");
            ExitCode::from(2)
        }
    }
}

fn select(names: &[String]) -> Result<Vec<BuiltinProvider>, String> {
    if names.is_empty() {
        return Ok(all_builtin_providers());
    }
    names
        .iter()
        .map(|name| {
            builtin_provider(name).copied().ok_or_else(|| {
                let known: Vec<&str> = all_builtin_providers()
                    .iter()
                    .map(|provider| provider.name)
                    .collect();
                format!(
                    "unknown provider `{name}`; known providers: {}",
                    known.join(", ")
                )
            })
        })
        .collect()
}

fn rules_text(format: Format) -> String {
    match format {
        Format::Json => {
            let rules: Vec<serde_json::Value> = Rule::ALL
                .into_iter()
                .map(|rule| {
                    serde_json::json!({
                        "id": rule.id(),
                        "statement": rule.statement(),
                        "origin": rule.origin(),
                        "method": rule.method(),
                    })
                })
                .collect();
            format!("{:#}\n", serde_json::Value::Array(rules))
        }
        _ => {
            let mut out = String::new();
            for rule in Rule::ALL {
                out.push_str(&format!(
                    "{}\n    rule:   {}\n    origin: {}\n    check:  {}\n",
                    rule.id(),
                    rule.statement(),
                    rule.origin(),
                    rule.method()
                ));
            }
            out
        }
    }
}
