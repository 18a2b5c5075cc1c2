//! Rounds of twins among the concurrent calls: every thread sends the same
//! dtype, shape and layout at once, each with values of its own, and a
//! crossed value names the thread whose input arrived.

use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
use tenferro_transfer_harness::{Compared, ProviderResult, Rule};

use super::CallKept;
use crate::runner::CaseRun;

/// One round in this many is a round of twins: every thread sends the same
/// dtype, shape and layout, each with values of its own.
pub const TWIN_ROUND_EVERY: usize = 4;

/// Make every [`TWIN_ROUND_EVERY`]th round one of twins: each thread's
/// case takes the first thread's dtype, shape and layout (one input, no
/// twin of its own) and keeps its own seeded values. A provider that
/// shares a staging buffer of one size between calls crosses their values
/// only when calls of one size meet.
pub(super) fn same_shape_rounds(plans: &mut [Vec<Recipe>]) {
    let Some((first, others)) = plans.split_first_mut() else {
        return;
    };
    for (index, common) in first.iter_mut().enumerate() {
        if index % TWIN_ROUND_EVERY != TWIN_ROUND_EVERY - 1 {
            continue;
        }
        *common = common.clone().moved_with(Vec::new()).untwinned();
        for plan in others.iter_mut() {
            if let Some(own) = plan.get_mut(index) {
                *own = Recipe {
                    seed: own.seed,
                    specials: own.specials,
                    values: ValueSource::Seeded,
                    ..common.clone()
                };
            }
        }
    }
}

/// Whether `index` is a round of twins ([`same_shape_rounds`]).
pub(super) fn twin_round(index: usize) -> bool {
    index % TWIN_ROUND_EVERY == TWIN_ROUND_EVERY - 1
}

/// Whose input `run`'s output holds, when it is not its own: the thread of
/// the same round whose case has those values, named in the `values`
/// violation.
pub(super) fn name_crossed(
    run: &mut CaseRun<CallKept>,
    thread: usize,
    index: usize,
    plans: &[Vec<Recipe>],
) {
    let Ok((judgement, CallKept { calls, .. })) = run else {
        return;
    };
    if !judgement.rules().contains(&Rule::Values) {
        return;
    }
    let returned = match calls.last().map(|call| &call.result) {
        // Only an output that is not its own case's values kept its image.
        Some(ProviderResult::Returned(returned)) => match &returned.bytes {
            Compared::Image(bytes) => bytes.clone(),
            _ => return,
        },
        _ => return,
    };
    let owner = plans.iter().enumerate().find(|(other, plan)| {
        *other != thread
            && plan
                .get(index)
                .and_then(|recipe| recipe.case().ok())
                .is_some_and(|case| case.values() == returned.as_slice())
    });
    if let Some((other, _)) = owner {
        judgement.annotate(
            Rule::Values,
            &format!(
                "; the output holds the values that thread {other} sent in the same round, at the same moment: state shared between concurrent calls (a staging buffer, a pool) crossed them"
            ),
        );
    }
}
