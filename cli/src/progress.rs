//! The progress bar of the suite run: on stderr, drawn only when stderr is a
//! terminal.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tenferro_transfer_conformance::CaseResult;
use tenferro_transfer_conformance::progress::Progress;

/// An [indicatif] progress bar on stderr, drawn only when stderr is a
/// terminal: pipes, files, `cargo test` and CI logs never see it.
///
/// indicatif is the well-kept bar the brief names; it rate-limits its own
/// redraws, so a fast run pays almost nothing for it.
#[derive(Debug)]
pub struct TerminalProgress {
    bar: ProgressBar,
}

impl TerminalProgress {
    /// A bar on stderr if stderr is a terminal, else one that draws nothing.
    pub fn stderr() -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        let style = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} cases, {msg} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        Self { bar }
    }

    /// Whether the bar draws anything (the test below asks).
    #[cfg(test)]
    fn is_visible(&self) -> bool {
        !self.bar.is_hidden()
    }
}

impl Progress for TerminalProgress {
    fn start(&mut self, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
    }

    fn case_done(&mut self, result: &CaseResult) {
        self.bar.set_message(format!(
            "{} {} {}",
            result.provider, result.route, result.dtype
        ));
        self.bar.inc(1);
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_is_hidden_when_stderr_is_not_a_terminal() {
        // Under `cargo test` stderr is captured or piped, never a terminal.
        if !std::io::stderr().is_terminal() {
            assert!(!TerminalProgress::stderr().is_visible());
        }
    }
}
