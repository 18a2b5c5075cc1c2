//! The fixed pass of one route, the one way every driver (a
//! `ProviderSuite`'s route, the CLI's fixed suite) runs its fixed cases:
//! each case judged inside the capabilities (the first of each dtype,
//! layout and size with its input read beside the call while it runs, the
//! second owned one with its input handed over unread), its twins right
//! after it
//! (what a provider kept from one call must not answer the next), then one
//! state record per dtype and, where asked, the pass that holds the
//! outputs as a caller holds them. The drivers differ only in the cases
//! they give it, how they head the records, and which rules they keep.

use std::collections::HashSet;

use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{Case, Layout, Route, Watchdog};

use crate::coverage::{LayoutClass, SizeClass};

use crate::held::held_pass;
use crate::record::CaseRecord;
use crate::report::RowHead;
use crate::runner::{CaseRun, JudgedAs, run_case, unread_sibling};
use crate::sequences::StatePass;

/// What one route's fixed cases left behind: their twins' state, and the
/// recipes the held pass runs again.
#[derive(Default)]
pub(crate) struct FixedPass {
    state: StatePass,
    held: Vec<Recipe>,
    /// The kinds of case whose input was read beside the call.
    watched: HashSet<(DType, Vec<LayoutClass>, SizeClass)>,
    /// The kinds of owned case whose input was handed over unread.
    unread: HashSet<(DType, Vec<LayoutClass>, SizeClass)>,
}

/// The records a fixed pass ends with, after its cases' own.
pub(crate) struct FixedPassEnd {
    /// One record per dtype: its twins and its run of mixed sizes.
    pub(crate) state: Vec<CaseRecord>,
    /// The held pass's two records, or none where it was not asked for.
    pub(crate) held: Vec<CaseRecord>,
}

impl FixedPass {
    /// Run `case`, the fixed case of `recipe`, on `watchdog`, judged inside
    /// the capabilities; then its twins. The run is the caller's to record.
    pub(crate) fn run(
        &mut self,
        watchdog: &mut Watchdog,
        route: &Route,
        recipe: &Recipe,
        case: &Case,
    ) -> CaseRun {
        // A reader beside the call, on the first case of each dtype,
        // layout and size: a borrow others may read at the same time must
        // not change while the call runs either. (A thread and reads a
        // call: on every case, they cost the main job a third more.)
        let kind = (
            case.dtype(),
            LayoutClass::of(case),
            SizeClass::of(case.len()),
        );
        let watch = self.watched.insert(kind.clone());
        // The next owned case of the kind reaches the provider as staged,
        // unread: a read through the source waits for writes still queued
        // into it, and the provider must (`Rig::hand_inputs_unread`).
        let unread = !watch && kind.1 == [LayoutClass::Owned] && self.unread.insert(kind);
        watchdog.watch_inputs(watch);
        watchdog.hand_inputs_unread(unread);
        let mut run = run_case(watchdog, route, case, JudgedAs::Inside, None);
        if watch {
            watchdog.watch_inputs(false);
        }
        if unread {
            watchdog.hand_inputs_unread(false);
        }
        // A view's backing holds more than the case's values, so its
        // unread run judges no `input-intact`: each fixed view runs first
        // read, and where that broke no rule, a case of its kind with other
        // values handed over unread (`unread_sibling`: the block the read
        // run freed may come back holding the case's values); a rule it
        // breaks there is the answer.
        let passed = matches!(&run, Ok((judgement, _)) if judgement.passed());
        if matches!(case.layout(), Layout::View(_))
            && passed
            && let Ok(other) = unread_sibling(recipe).case()
        {
            watchdog.hand_inputs_unread(true);
            let again = run_case(watchdog, route, &other, JudgedAs::Inside, None);
            watchdog.hand_inputs_unread(false);
            if matches!(&again, Ok((judgement, _)) if !judgement.passed()) {
                run = again;
            }
        }
        self.state.after_fixed(watchdog, route, recipe);
        self.held.push(recipe.clone());
        run
    }

    /// The state records (`name`, `head`), then, with `hold`, the held
    /// pass over every case that ran.
    pub(crate) fn finish(
        self,
        watchdog: &mut Watchdog,
        route: &Route,
        name: &str,
        head: &RowHead,
        hold: bool,
    ) -> FixedPassEnd {
        let state = self.state.finish(watchdog, route, name, head);
        let held = if hold {
            held_pass(watchdog, route, &self.held, name, head).into()
        } else {
            Vec::new()
        };
        FixedPassEnd { state, held }
    }
}
