//! One run of the suite per test binary, under `cargo test` and nextest
//! alike.
//!
//! `cargo test` runs every test of a binary in one process, so the
//! `OnceLock` of [`conformance_tests!`](crate::conformance_tests) runs the
//! suite once. nextest runs each test in a process of its own: without
//! sharing, every rule test would run the whole suite again (one run per rule
//! test: 15 per route at level v2, 13 at v1), and parallel processes would open the device at once. Under
//! nextest (`NEXTEST_RUN_ID` is set), the first test process to start takes
//! an exclusive file lock, runs the suite and writes its report; the others
//! wait on the lock and read that report.
//!
//! The run's typed records (`crate::record`) are kept, in JSON, in
//! `transfer-conformance-runs/` beside the test
//! binary, named by the binary, the nextest run id and a hash of every
//! `TRANSFER_CONFORMANCE_*` and `TENFERRO_*` variable: a new nextest run, a
//! rebuilt binary or a changed setting never reads an older report. Should
//! the folder not be writable, or the report not read back, the test runs
//! the suite itself (and says so on stderr): slower, never wrong.

use std::collections::hash_map::DefaultHasher;
use std::fs::{self, File};
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tenferro_transfer_harness::Settings;

use super::ProviderSuite;
use crate::record::CaseRecord;
use crate::report::{Report, ReportFormat};

/// Set by nextest in every test process: one id per `cargo nextest run`.
pub use tenferro_transfer_harness::settings::NEXTEST_RUN_ID_ENV;

/// A path to write the whole report to, after the suite's run in a test
/// binary: JSON for `.json`, the Markdown matrix for `.md`, JUnit XML for
/// `.xml`, the table otherwise.
pub use tenferro_transfer_harness::settings::REPORT_FILE_ENV;

/// Kept reports older than this are removed when a new one is written.
const KEEP: Duration = Duration::from_secs(24 * 60 * 60);

impl ProviderSuite {
    /// The suite's report for this test binary: [`ProviderSuite::run`] once
    /// per process under `cargo test`, once per binary and nextest run
    /// under nextest (see the module documentation). What the
    /// `conformance_tests!` macro calls.
    ///
    /// With [`REPORT_FILE_ENV`] set, the process that ran the suite also
    /// writes the whole report to that file.
    pub fn shared_run(&self) -> Report {
        let run_id = Settings::current()
            .ok()
            .and_then(|settings| settings.nextest_run_id.clone());
        let Some(run_id) = run_id else {
            let report = self.run();
            write_report_file(&report);
            return report;
        };
        match self.run_shared_by(&run_id) {
            Ok(report) => report,
            Err(error) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "transfer-conformance: could not share the suite's run between nextest's processes ({error}); this test runs it itself"
                );
                let report = self.run();
                write_report_file(&report);
                report
            }
        }
    }

    fn run_shared_by(&self, run_id: &str) -> std::io::Result<Report> {
        let exe = std::env::current_exe()?;
        let folder = exe
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("transfer-conformance-runs");
        fs::create_dir_all(&folder)?;
        let binary = exe
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = format!(
            "{}-{}-{:016x}",
            sanitize(&binary),
            sanitize(run_id),
            settings_hash()
        );
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(folder.join(format!("{stem}.lock")))?;
        // Exclusive: the first process runs the suite, the rest wait here.
        lock.lock()?;
        let path = folder.join(format!("{stem}.json"));
        // The typed records are kept, not the rendered report: the rule
        // tests read their verdicts from records.
        if let Ok(text) = fs::read_to_string(&path)
            && let Ok(records) = serde_json::from_str::<Vec<CaseRecord>>(&text)
        {
            let report = Report::from_records(records);
            let _ = writeln!(
                std::io::stderr(),
                "transfer-conformance: read the suite's run of this binary ({})",
                path.display()
            );
            return Ok(report);
        }
        let report = self.run();
        write_report_file(&report);
        let partial = path.with_extension("partial");
        fs::write(&partial, serde_json::to_string(report.records())?)?;
        fs::rename(&partial, &path)?;
        let _ = writeln!(
            std::io::stderr(),
            "transfer-conformance: ran the suite once for this binary and nextest run ({})",
            path.display()
        );
        remove_old(&folder, &path);
        Ok(report)
    }
}

/// Write `report` to [`REPORT_FILE_ENV`]'s path, when it is set; a failure
/// to write is said on stderr (the tests' verdicts do not depend on it).
fn write_report_file(report: &Report) {
    let Some(path) = Settings::current()
        .ok()
        .and_then(|settings| settings.report_file.clone())
    else {
        return;
    };
    let format = match path.extension().and_then(|extension| extension.to_str()) {
        Some("json") => ReportFormat::Json,
        Some("md") => ReportFormat::Markdown,
        Some("xml") => ReportFormat::Junit,
        _ => ReportFormat::Table,
    };
    let written = report
        .render(format)
        .map_err(|error| error.to_string())
        .and_then(|text| fs::write(&path, text).map_err(|error| error.to_string()));
    let _ = match written {
        Ok(()) => writeln!(
            std::io::stderr(),
            "transfer-conformance: wrote the report to {} ({REPORT_FILE_ENV})",
            path.display()
        ),
        Err(error) => writeln!(
            std::io::stderr(),
            "transfer-conformance: could not write the report to {} ({REPORT_FILE_ENV}): {error}",
            path.display()
        ),
    };
}

/// A file-name-safe form of `text`.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// A hash of every setting that changes a run: the suite's own (read once,
/// by [`Settings::current`]) and tenferro's `TENFERRO_*` variables.
fn settings_hash() -> u64 {
    let mut tenferro: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("TENFERRO_"))
        .collect();
    tenferro.sort();
    let mut hasher = DefaultHasher::new();
    format!("{:?}", Settings::current()).hash(&mut hasher);
    tenferro.hash(&mut hasher);
    hasher.finish()
}

/// Remove kept reports and locks older than [`KEEP`], other than `kept`.
fn remove_old(folder: &Path, kept: &PathBuf) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > KEEP);
        if old && &path != kept {
            let _ = fs::remove_file(path);
        }
    }
}
