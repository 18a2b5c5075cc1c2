//! The `transfer-conformance` binary: exit codes, JSON shape, bad input.

use std::process::{Command, Output};

use serde_json::Value;
use tenferro_transfer_conformance::harness::strategy::Recipe;

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

#[test]
fn the_main_job_reports_every_route_and_dtype_passing() {
    let output = cli(&["--format", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = json(&output);
    assert_eq!(report["summary"]["failed"], 0);
    let results = report["results"].as_array().unwrap();
    // Only CUDA rows may be skipped (no GPU, or views of CUDA memory), and
    // each says why.
    let skipped: Vec<&Value> = results
        .iter()
        .filter(|row| row["verdict"] == "skip")
        .collect();
    assert_eq!(report["summary"]["skipped"], skipped.len());
    assert!(skipped.iter().all(|row| {
        row["provider"].as_str().unwrap().starts_with("cuda-")
            && !row["skip_reason"].as_str().unwrap().is_empty()
    }));
    for route in ["host->sim0", "sim0->host", "sim0->sim1", "host-src->host"] {
        for dtype in ["F32", "F64", "I32", "I64", "Bool", "C32", "C64"] {
            let rows: Vec<&Value> = results
                .iter()
                .filter(|row| row["route"] == route && row["dtype"] == dtype)
                .collect();
            assert!(
                rows.iter().all(|row| row["verdict"] == "pass"),
                "{route} {dtype}"
            );
            assert!(
                rows.iter()
                    .any(|row| row["layout"].as_str().unwrap().starts_with("view(")),
                "{route} {dtype}"
            );
            assert!(
                rows.iter()
                    .any(|row| row["shape"] == serde_json::json!([1024, 1024])),
                "{route} {dtype}"
            );
        }
    }
    for key in [
        "provider",
        "route",
        "dtype",
        "shape",
        "layout",
        "verdict",
        "violations",
    ] {
        assert!(results[0].get(key).is_some(), "result rows have `{key}`");
    }
}

#[test]
fn a_wrong_value_is_visible_in_the_exit_code() {
    let output = cli(&[
        "--provider",
        "sim-upload",
        "--inject",
        "one-ulp",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert!(report["summary"]["failed"].as_u64().unwrap() > 0);
    let violation = &report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["verdict"] == "fail")
        .unwrap()["violations"][0];
    assert_eq!(violation["rule"], "values");
    assert!(violation["message"].as_str().unwrap().contains("1 of"));
}

#[test]
fn unknown_flags_providers_and_faults_are_rejected_clearly() {
    let output = cli(&["--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--no-such-flag"));

    let output = cli(&["--provider", "rocm-upload"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown provider `rocm-upload`")
            && stderr.contains("sim-upload")
            && stderr.contains("cuda-upload"),
        "{stderr}"
    );

    let output = cli(&["--inject", "gremlins"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown fault `gremlins`"));
}

#[test]
fn rules_lists_the_whole_catalogue() {
    let output = cli(&["rules", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0));
    let ids: Vec<String> = json(&output)
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_owned())
        .collect();
    // The whole catalogue, in order: Rule::ALL (a test of the library ties
    // it to the levels' lists, and the frozen V1 list is pinned there).
    let catalogue: Vec<&str> = tenferro_transfer_conformance::harness::Rule::ALL
        .iter()
        .map(|rule| rule.id())
        .collect();
    assert_eq!(ids, catalogue);
}

#[test]
fn self_test_json_has_the_documented_shape_and_passes() {
    let output = cli(&["self-test", "--format", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let report = json(&output);
    assert_eq!(report["disagreements"], 0);
    for row in report["providers"].as_array().unwrap() {
        for key in [
            "name",
            "expected_rules",
            "caught_rules",
            "cases",
            "missed",
            "false_alarms",
        ] {
            assert!(row.get(key).is_some(), "{key}");
        }
        assert_eq!(row["missed"], 0, "{}", row["name"]);
        assert_eq!(row["false_alarms"], 0, "{}", row["name"]);
    }
    // Injected panics are caught and reported, not printed.
    assert!(!String::from_utf8_lossy(&output.stderr).contains("injected panic"));
}

#[test]
fn every_format_of_the_suite_run_prints_the_report_and_keeps_the_exit_code() {
    let args = ["--provider", "sim-peer", "--inject", "one-ulp", "--format"];
    for (format, starts) in [
        ("table", "provider "),
        ("json", "{"),
        ("markdown", "## Transfer conformance report"),
        ("junit", "<?xml"),
    ] {
        let output = cli(&[&args[..], &[format]].concat());
        assert_eq!(output.status.code(), Some(1), "{format}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(stdout.starts_with(starts), "{format}: {stdout}");
        // No colour and no progress bar in a pipe.
        assert!(!stdout.contains('\u{1b}'), "{format}");
        assert!(
            output.stderr.is_empty(),
            "{format}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let output = cli(&["--provider", "sim-peer", "--format", "markdown"]);
    assert_eq!(output.status.code(), Some(0));
    let markdown = String::from_utf8(output.stdout).unwrap();
    assert!(markdown.contains("**PASS**"), "{markdown}");
    assert!(markdown.contains("| `values` | ✅ | ✅ |"), "{markdown}");
    let output = cli(&["--provider", "sim-peer", "--format", "junit"]);
    assert_eq!(output.status.code(), Some(0));
    let junit = String::from_utf8(output.stdout).unwrap();
    let document = roxmltree::Document::parse(&junit).expect("well-formed XML");
    let cases = document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .count();
    // Twelve fixed shapes for each of seven dtypes, each dtype's twins and
    // inputs moved together, and the held pass's two.
    assert_eq!(cases, 7 * 12 + 7 + 2, "{junit}");
    assert!(!junit.contains("<failure"));
}

#[test]
fn colour_is_only_for_a_terminal_unless_asked_for() {
    let args = ["--provider", "sim-peer", "--inject", "one-ulp"];
    let piped = cli(&args);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\u{1b}'));
    let always = cli(&[&args[..], &["--color", "always"]].concat());
    let stdout = String::from_utf8_lossy(&always.stdout);
    assert!(stdout.contains("\u{1b}[1m\u{1b}[31mFAIL"), "{stdout}");
    // Colour codes never count towards column widths: the plain text is the
    // uncoloured table.
    let stripped = regex_free_strip(&stdout);
    assert_eq!(stripped, String::from_utf8_lossy(&piped.stdout));
    let never = cli(&[&args[..], &["--color", "never"]].concat());
    assert_eq!(never.stdout, piped.stdout);
}

/// `text` without ANSI SGR sequences (`ESC [ ... m`).
fn regex_free_strip(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_format_a_command_does_not_take_is_bad_usage() {
    for (args, message) in [
        (
            &["self-test", "--format", "markdown"][..],
            "--format markdown does not apply to self-test; it takes table, json",
        ),
        (
            &["generated", "--format", "junit"][..],
            "--format junit does not apply to generated; it takes table, json",
        ),
        (
            &["rules", "--format", "junit"][..],
            "--format junit does not apply to rules; it takes table, json",
        ),
        (
            &["replay", "--format", "json", "{}"][..],
            "--format json does not apply to replay; it takes table",
        ),
    ] {
        let output = cli(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let output = cli(&["--format", "yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("yaml"));
}

#[test]
fn help_documents_the_exit_codes_and_formats() {
    let output = cli(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8(output.stdout).unwrap();
    for text in [
        "Exit codes:",
        "0  every case passed",
        "1  at least one case failed",
        "2  bad usage",
        "3  nothing was checked",
        "markdown",
        "junit",
    ] {
        assert!(help.contains(text), "{text}:\n{help}");
    }
}

#[test]
fn cuda_rows_are_skips_with_the_reason_or_failures_when_cuda_is_required() {
    let Some(reason) = tenferro_transfer_conformance::cuda::cuda_unavailable_reason() else {
        return; // a usable GPU: tests/cuda.rs runs the real thing
    };
    let args = ["--provider", "cuda-upload", "--provider", "cuda-download"];
    let skipping = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args(args)
        .env_remove("TRANSFER_CONFORMANCE_REQUIRE_CUDA")
        .output()
        .unwrap();
    // Every row a skip: nothing was checked, which is exit 3, never a pass.
    assert_eq!(skipping.status.code(), Some(3));
    let table = String::from_utf8_lossy(&skipping.stdout);
    assert!(
        table.contains("host->cuda0") || table.contains("cuda-upload"),
        "{table}"
    );
    assert!(table.contains("skip"), "{table}");
    assert!(
        table.contains(&format!("skipped: cuda0: {reason}")),
        "{table}"
    );
    assert!(table.contains("0 passed, 0 failed"), "{table}");

    let required = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args(args)
        .env("TRANSFER_CONFORMANCE_REQUIRE_CUDA", "1")
        .output()
        .unwrap();
    assert_eq!(required.status.code(), Some(1));
    let table = String::from_utf8_lossy(&required.stdout);
    assert!(
        table.contains("TRANSFER_CONFORMANCE_REQUIRE_CUDA=1 requires the cuda device, but cuda0: "),
        "{table}"
    );
    assert!(table.contains("0 skipped"), "{table}");

    // CUDA is a device like any other: the general setting requires it too.
    for setting in ["cuda", "all", "sim,cuda"] {
        let required = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
            .args(args)
            .env_remove("TRANSFER_CONFORMANCE_REQUIRE_CUDA")
            .env("TRANSFER_CONFORMANCE_REQUIRE_DEVICES", setting)
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&required.stdout);
        assert_eq!(required.status.code(), Some(1), "{setting}: {table}");
        assert!(
            table.contains(&format!(
                "TRANSFER_CONFORMANCE_REQUIRE_DEVICES={setting} requires the cuda device, but cuda0: "
            )),
            "{table}"
        );
    }
}

#[test]
fn a_failing_case_prints_a_replay_command_that_reproduces_it() {
    // The generated run's failure of sim-peer with a one-ULP fault, seed 3,
    // as the CLI reports it.
    let generated = cli(&[
        "generated",
        "--provider",
        "sim-peer",
        "--inject",
        "one-ulp",
        "--seed",
        "3",
        "--profile",
        "quick",
        "--format",
        "json",
    ]);
    assert_eq!(generated.status.code(), Some(1));
    let failure = json(&generated)[0]["failure"].clone();
    let replay_command = failure["replay_command"].as_str().unwrap();
    assert!(
        replay_command
            .starts_with("cargo run --release -- replay --provider sim-peer --inject one-ulp '")
    );
    let minimal: Recipe = serde_json::from_value(failure["minimal"].clone()).unwrap();
    let json = minimal.to_json();
    assert!(replay_command.contains(&json), "{replay_command}");
    assert!(failure["replay_env"].as_str().unwrap().contains(&json));
    let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args([
            "replay",
            "--provider",
            "sim-peer",
            "--inject",
            "one-ulp",
            &json,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("sim-peer: FAIL") && stdout.contains("values:"),
        "{stdout}"
    );
}

#[test]
fn a_setting_the_suite_does_not_know_is_bad_usage() {
    for (name, value) in [
        ("TRANSFER_CONFORMANCE_PROFIL", "deep"),
        ("TRANSFER_CONFORMANCE_NO_SKIP", "yes"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
            .arg("rules")
            .env(name, value)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}={value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(name), "{stderr}");
    }
}

/// `--color` colours only the suite run's table: every other command and
/// format refuses it, as it refuses any flag it does not take.
#[test]
fn colour_is_refused_where_nothing_is_coloured() {
    for args in [
        &["rules", "--color", "always"][..],
        &["self-test", "--color", "never"][..],
        &["generated", "--color", "always"][..],
        &["replay", "--color", "always", "{}"][..],
        &["--format", "json", "--color", "always"][..],
    ] {
        let output = cli(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--color does not apply to"),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// A setting is honoured by the commands that read it and refused by the
/// others, never read and ignored: `generated` takes its profile and seed
/// from the settings when no flag gives them; the suite run reads neither.
#[test]
fn settings_are_honoured_or_refused() {
    let run = |args: &[&str], settings: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
            .args(args)
            .envs(settings.iter().copied())
            .output()
            .unwrap()
    };
    let generated = run(
        &["generated", "--provider", "sim-peer", "--format", "json"],
        &[
            ("TRANSFER_CONFORMANCE_PROFILE", "quick"),
            ("TRANSFER_CONFORMANCE_SEED", "42"),
        ],
    );
    assert_eq!(generated.status.code(), Some(0));
    let reports = json(&generated);
    assert_eq!(reports[0]["seed"], 42);
    assert_eq!(reports[0]["profile"], "quick");
    // A flag wins over the setting.
    let flagged = run(
        &[
            "generated",
            "--provider",
            "sim-peer",
            "--format",
            "json",
            "--seed",
            "7",
            "--profile",
            "quick",
        ],
        &[("TRANSFER_CONFORMANCE_SEED", "42")],
    );
    assert_eq!(json(&flagged)[0]["seed"], 7);
    for (args, name) in [
        (
            &["--provider", "sim-peer"][..],
            "TRANSFER_CONFORMANCE_PROFILE",
        ),
        (
            &["self-test", "--provider", "sim-peer"][..],
            "TRANSFER_CONFORMANCE_SEED",
        ),
        (&["rules"][..], "TRANSFER_CONFORMANCE_REPORT"),
    ] {
        let value = match name {
            "TRANSFER_CONFORMANCE_PROFILE" => "deep",
            "TRANSFER_CONFORMANCE_SEED" => "1",
            _ => "report.json",
        };
        let output = run(args, &[(name, value)]);
        assert_eq!(output.status.code(), Some(2), "{args:?} {name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("{name} is set")), "{stderr}");
        assert!(output.stdout.is_empty());
    }
}
