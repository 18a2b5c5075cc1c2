//! `transfer-conformance`: runs the conformance suite against the built-in
//! providers and prints the report.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use tenferro_transfer_conformance::generated::{GeneratedOptions, replay, run_generated};
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{Rule, panic_message};
use tenferro_transfer_conformance::mock_devices::providers::Fault;
use tenferro_transfer_conformance::{
    BuiltinProvider, SuiteOptions, all_builtin_providers, builtin_provider, run_fixed_suite,
    selftest,
};

/// Conformance suite for tenferro TransferProvider implementations.
///
/// With no subcommand, runs every built-in provider on its route over all
/// seven dtypes and the fixed shapes, prints the report, and exits non-zero
/// if any case fails.
#[derive(Debug, Parser)]
#[command(name = "transfer-conformance", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Table, global = true)]
    format: Format,
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

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Aligned text.
    Table,
    /// JSON.
    Json,
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
    match cli.command.unwrap_or(Command::Run) {
        Command::Run => {
            let options = SuiteOptions {
                inject: cli.inject.clone(),
                deadline: Duration::from_millis(cli.deadline_ms),
                ..SuiteOptions::default()
            };
            let report = run_fixed_suite(&providers, &options);
            let text = match cli.format {
                Format::Table => Ok(report.to_table()),
                Format::Json => report.to_json(),
            };
            finish(text, report.failed())
        }
        Command::Rules => {
            print!("{}", rules_text(cli.format));
            ExitCode::SUCCESS
        }
        Command::SelfTest => {
            let report = selftest::run(&providers);
            let text = match cli.format {
                Format::Table => Ok(report.to_table()),
                Format::Json => report.to_json(),
            };
            finish(text, !report.passed())
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
                Format::Table => Ok(reports
                    .iter()
                    .map(|report| report.to_text())
                    .collect::<String>()),
                Format::Json => serde_json::to_string_pretty(&reports),
            };
            finish(text, failed)
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
            finish(Ok(out), failed)
        }
    }
}

fn finish(text: Result<String, serde_json::Error>, failed: bool) -> ExitCode {
    match text {
        Ok(text) => {
            println!("{text}");
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
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
        Format::Table => {
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
