//! `transfer-conformance`: runs the conformance suite against the built-in
//! providers and prints the report.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use tenferro_transfer_conformance::generated::{GeneratedOptions, replay, run_generated};
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{Rule, panic_message};
use tenferro_transfer_conformance::mock_devices::providers::Fault;
use tenferro_transfer_conformance::progress::TerminalProgress;
use tenferro_transfer_conformance::{
    BuiltinProvider, ReportFormat, SuiteOptions, all_builtin_providers, builtin_provider,
    run_fixed_suite_with_progress, selftest,
};

/// Exit codes, as `--help` prints them.
const EXIT_CODES: &str = "\
Exit codes:
  0  every case passed (skipped cases, if any, are listed, never counted as passes)
  1  at least one case failed (a broken rule, or a case the harness could not set up)
  2  bad usage: an unknown flag, provider, fault or profile, a format the command
     does not support, or a report that could not be written
  3  nothing was checked: no case failed and none passed (every case skipped)";

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
    /// Colour the table: auto colours only when stdout is a terminal and
    /// NO_COLOR is unset or empty.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColourChoice::Auto, global = true)]
    color: ColourChoice,
    /// Run only this built-in provider (repeatable): sim-upload, sim-download, sim-peer, host,
    /// cuda-upload, cuda-download.
    #[arg(long = "provider", value_name = "NAME", global = true)]
    providers: Vec<String>,
    /// Inject a fault into every provider of the suite run (repeatable), to
    /// see how a broken provider is reported; e.g. one-ulp, wrong-dtype.
    #[arg(long = "inject", value_name = "FAULT", value_parser = parse_fault, global = true)]
    inject: Vec<Fault>,
    /// Per-case deadline in milliseconds: a provider that has not returned
    /// by then fails the `deadline` rule, and the run goes on.
    #[arg(
        long = "deadline-ms",
        value_name = "MS",
        default_value_t = 60_000,
        global = true
    )]
    deadline_ms: u64,
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
        /// Case profile: quick, default or deep.
        #[arg(long, default_value = "default", value_parser = parse_profile)]
        profile: Profile,
        /// Generator seed (drawn when absent; always printed).
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
    let cli = Cli::parse();
    quiet_injected_panics();
    let providers = match select(&cli.providers) {
        Ok(providers) => providers,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.unwrap_or(Command::Run);
    if let Err(message) = check_format(&command, cli.format) {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    match command {
        Command::Run => {
            let options = SuiteOptions {
                inject: cli.inject.clone(),
                deadline: Duration::from_millis(cli.deadline_ms),
                ..SuiteOptions::default()
            };
            let report = run_fixed_suite_with_progress(
                &providers,
                &options,
                &mut TerminalProgress::stderr(),
            );
            let text = match cli.format {
                Format::Table => Ok(report.to_table_coloured(cli.color.enabled())),
                format => report
                    .render(format.report_format())
                    .map_err(|error| error_chain(&error)),
            };
            finish(text, report.outcome().exit_code())
        }
        Command::Rules => {
            print!("{}", rules_text(cli.format));
            ExitCode::SUCCESS
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
            let options = GeneratedOptions {
                seed,
                inject: cli.inject.clone(),
                deadline: Duration::from_millis(cli.deadline_ms),
                ..GeneratedOptions::new(profile)
            };
            let mut reports = Vec::new();
            for provider in &providers {
                match run_generated(provider, &options) {
                    Ok(report) => reports.push(report),
                    Err(error) if error.is_skip() => {
                        eprintln!("skip: {}: {error}", provider.name);
                    }
                    Err(error) => {
                        eprintln!("error: {}: {error}", provider.name);
                        return ExitCode::from(2);
                    }
                }
            }
            let failed = reports.iter().any(|report| report.failure.is_some());
            let text = match cli.format {
                Format::Json => {
                    serde_json::to_string_pretty(&reports).map_err(|error| error.to_string())
                }
                _ => Ok(reports
                    .iter()
                    .map(|report| report.to_text())
                    .collect::<String>()),
            };
            finish(text, u8::from(failed))
        }
        Command::Replay { recipe } => {
            let recipe: Recipe = match recipe.parse() {
                Ok(recipe) => recipe,
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::from(2);
                }
            };
            let mut failed = false;
            let mut out = String::new();
            for provider in &providers {
                match replay(provider, &cli.inject, &recipe) {
                    Ok(judgement) => {
                        failed |= !judgement.passed();
                        out.push_str(&format!(
                            "{}: {}\n",
                            provider.name,
                            if judgement.passed() { "pass" } else { "FAIL" }
                        ));
                        for violation in &judgement.violations {
                            out.push_str(&format!("  {}: {}\n", violation.rule, violation.message));
                        }
                    }
                    Err(error) if error.is_skip() => {
                        out.push_str(&format!("{}: skip: {error}\n", provider.name));
                    }
                    Err(error) => {
                        failed = true;
                        out.push_str(&format!("{}: cannot replay: {error}\n", provider.name));
                    }
                }
            }
            finish(Ok(out), u8::from(failed))
        }
    }
}

/// An error and its sources, joined by `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::once(error.to_string())
        .chain(tenferro_transfer_conformance::harness::source_chain(error))
        .collect::<Vec<_>>()
        .join(": ")
}

fn finish(text: Result<String, String>, code: u8) -> ExitCode {
    match text {
        Ok(text) => {
            println!("{text}");
            ExitCode::from(code)
        }
        Err(error) => {
            eprintln!("error: cannot render the report: {error}");
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
