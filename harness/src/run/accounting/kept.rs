//! Memory a provider keeps on purpose, told from a leak: a run whose
//! devices' memory grew is repeated, and memory that stops growing is what
//! the provider keeps and reuses (a caching allocator's blocks, a staging
//! pool, a registered-memory table), reported, never a failure; memory
//! that grows again with the repetitions is a leak. A device that only
//! counts its memory in use cannot tell a reserved block from a leaked
//! one; repetition can.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Leak, MemoryGrowth, Sample};
use crate::device::memory::Stay;
use crate::{Endpoint, LeakCheck, Route};

/// How a piece of work whose memory grew is repeated: how many more times
/// it runs, over how many of the last repetitions the memory must not grow
/// for the growth to be kept memory, and how long a cache may fill.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Repetition {
    pub(crate) times: usize,
    pub(crate) last: usize,
    /// The most repetitions while the memory grew on every one so far: a
    /// cache that holds each freed block back for a number of later calls
    /// before it reuses one fills a block a call, then stops growing.
    pub(crate) filling: usize,
}

impl Repetition {
    /// One run of a few inputs: twelve more, the last six of which must
    /// not grow (more calls than a provider that leaks once in five calls
    /// makes without leaking); or, where the memory grew on every
    /// repetition and then stopped, until it has not grown over six more
    /// (over twelve more otherwise), up to 48 repetitions: a release
    /// deferred by 28 calls, whose blocks of other sizes leave one a
    /// repetition, rises for 28 and is quiet from the 40th (blind probe 8;
    /// 36 failed it).
    pub(crate) const RUN: Repetition = Repetition {
        times: 12,
        last: 6,
        filling: 48,
    };
}

/// The shape of the growth over a run's repetitions, one repetition at a
/// time: grown on each of the first `grown`, flat on the `flat` since;
/// `broken` once it grew again after a flat repetition, or when the first
/// repetition did not grow (not a cache filling a block a call).
#[derive(Clone, Copy, Debug, Default)]
struct Filling {
    grown: usize,
    flat: usize,
    broken: bool,
}

impl Filling {
    fn note(&mut self, grew: bool) {
        match (grew, self.flat) {
            (true, 0) => self.grown += 1,
            (true, _) => self.broken = true,
            (false, _) if self.grown == 0 => self.broken = true,
            (false, _) => self.flat += 1,
        }
    }

    /// Whether the growth so far is a cache filling: grown on every
    /// repetition, then flat, if at all.
    fn may_fill(&self) -> bool {
        !self.broken
    }
}

/// How many more times, at most, a phase of many calls whose memory grew
/// is run again ([`phase_kept_or_leaked`]), unless a run of the route was
/// seen to fill a cache over more calls ([`Route::filling_seen`]).
const PHASE_REPEATS: usize = 3;

/// The most times a phase is run again while a cache may still be
/// filling, unless a run of the route was seen to fill one over more calls
/// ([`Route::filling_seen`]): then two more than that, up to
/// [`Repetition::RUN`]'s `filling`.
const PHASE_FILLING_REPEATS: usize = 12;

/// Memory a run left in use on a device that repeating the run did not
/// grow: what the provider keeps between calls and reuses. Reported with
/// the case, never a `no-leak` failure.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{KeptMemory, MemoryInUse};
///
/// let kept = KeptMemory::new("npu0", MemoryInUse::allocations(5).growth_since(&MemoryInUse::allocations(4)));
/// assert_eq!(kept.to_string(), "npu0 keeps +1 allocation(s) that the provider reuses");
/// ```
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KeptMemory {
    /// The endpoint's name.
    pub endpoint: String,
    /// How much more stays in use than before the run, after it and its
    /// repetitions.
    pub growth: MemoryGrowth,
}

impl KeptMemory {
    /// `growth` kept on `endpoint`.
    pub fn new(endpoint: impl Into<String>, growth: MemoryGrowth) -> Self {
        Self {
            endpoint: endpoint.into(),
            growth,
        }
    }
}

impl fmt::Display for KeptMemory {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} keeps {} that the provider reuses",
            self.endpoint, self.growth
        )
    }
}

/// Decide what a piece of work whose accounting found `leaks` left behind:
/// `again` does it once more (its outcome is not judged). Over
/// `repetition.times` repetitions, memory that rises above its peak so far
/// (the work's own sample and every repetition's) in the last
/// `repetition.last` of them may be a leak; memory that only comes back to
/// a level it had before (a cache trimmed, then refilled) is not. Memory
/// that rose there repeats on, up to `repetition.filling` repetitions in
/// all: it is kept memory once it has not risen above its peak over
/// `repetition.last` more where it grew on every repetition until it
/// stopped (a cache that filled a block a call; the route learns how long
/// it took, [`Route::filling_seen`]), or over `repetition.times` more
/// otherwise (a cache whose blocks of other sizes leave as this work's
/// arrive, a release deferred by some calls); else it is a leak (`leaks`
/// stand). Memory that did not rise is kept memory; memory back where it
/// was before the work was no leak at all. `stays`: the work's stays on the
/// devices, when other work may run beside it (a repetition beside other
/// calls cannot be judged).
pub(crate) fn kept_or_leaked(
    route: &Route,
    before: &[Sample; 2],
    stays: Option<&[Stay; 2]>,
    leaks: Vec<Leak>,
    repetition: Repetition,
    mut again: impl FnMut(),
) -> LeakCheck {
    let counted = route.counts_memory();
    let endpoints = [route.source(), route.destination()];
    let settled = || endpoints.map(|endpoint| settled(endpoint, counted));
    let grew = |now: &[Sample; 2], then: &[Sample; 2]| {
        now.iter()
            .zip(then)
            .any(|(now, then)| net_growth(now, then).grew())
    };
    let mut previous = settled();
    let mut peak = Peak::of(&previous);
    let mut profile: [Vec<MemoryGrowth>; 2] = [Vec::new(), Vec::new()];
    let mut filling = Filling::default();
    let mut growing = false;
    let mut last_rise = 0;
    let mut repeat = 0;
    loop {
        repeat += 1;
        again();
        let now = settled();
        for ((profile, now), before) in profile.iter_mut().zip(&now).zip(before) {
            profile.push(net_growth(now, before));
        }
        filling.note(grew(&now, &previous));
        if peak.rises_to(&now) {
            last_rise = repeat;
            // Above every level before, in the last repetitions: maybe a
            // leak, unless it stops rising.
            growing |= repeat > repetition.times.saturating_sub(repetition.last);
        }
        previous = now;
        if repeat < repetition.times {
            continue;
        }
        if !growing {
            break;
        }
        let quiet = if filling.may_fill() {
            repetition.last
        } else {
            repetition.times
        };
        if repeat - last_rise >= quiet {
            growing = false;
            break;
        }
        if repeat >= repetition.filling {
            break;
        }
    }
    if stays.is_some_and(|stays| !stays.iter().all(Stay::alone)) {
        return LeakCheck::Unchecked(
            "the memory in use grew over the run, and other calls ran on the device while the run was repeated to tell memory the provider keeps from a leak".to_owned(),
        );
    }
    if growing {
        return LeakCheck::Checked(with_profile(leaks, &endpoints, profile));
    }
    if filling.may_fill() {
        route.note_filling(filling.grown);
    }
    kept_memory(&endpoints, &previous, before)
}

/// `leaks`, each growth with where its endpoint's memory stood after each
/// repetition (`profile`, one per endpoint of `endpoints`).
fn with_profile(
    leaks: Vec<Leak>,
    endpoints: &[&Endpoint; 2],
    profile: [Vec<MemoryGrowth>; 2],
) -> Vec<Leak> {
    leaks
        .into_iter()
        .map(|leak| match leak {
            Leak::Growth {
                endpoint, growth, ..
            } => {
                let repeated = endpoints
                    .iter()
                    .zip(&profile)
                    .find(|(known, _)| known.name() == endpoint)
                    .map(|(_, profile)| profile.clone())
                    .unwrap_or_default();
                Leak::Growth {
                    endpoint,
                    growth,
                    repeated,
                }
            }
            other => other,
        })
        .collect()
}

/// Decide what a phase of many calls whose accounting found `leaks` left
/// behind: `again` runs the phase's work once more. Calls that run side by
/// side reuse a cache's blocks in an order their timing decides, so a
/// repetition may still add a few blocks to a bounded cache; a leak adds
/// about as much as the phase did. The phase runs again up to
/// [`PHASE_REPEATS`] times: a repetition that adds nothing makes the
/// growth kept memory; two in a row that each add at least half as much
/// as the phase did make it a leak (one alone may be the timing of the
/// calls: a cache that met more of them side by side). Repetitions that
/// each add less, but add, run on up to [`PHASE_FILLING_REPEATS`] times,
/// or two more than the calls over which a run of the route was seen to
/// fill a cache ([`Route::filling_seen`]): memory that rose on every one
/// of them is a leak (a steady leak behind a cache the phase filled,
/// smaller than what the cache keeps), memory that stops rising is kept.
pub(crate) fn phase_kept_or_leaked(
    route: &Route,
    before: &[Sample; 2],
    leaks: Vec<Leak>,
    mut again: impl FnMut(),
) -> LeakCheck {
    let counted = route.counts_memory();
    let endpoints = [route.source(), route.destination()];
    let settled = || endpoints.map(|endpoint| settled(endpoint, counted));
    let mut previous = settled();
    let phase: Vec<MemoryGrowth> = previous
        .iter()
        .zip(before)
        .map(|(now, then)| net_growth(now, then))
        .collect();
    // A cache seen to fill a block a call over `filling` calls of one size
    // fills over as many runs of a phase whose calls meet each size once:
    // until then, a repetition may add about as much as the phase did.
    let filling = route.filling_seen();
    // A cache that fills a block a call over `filling` calls of a size
    // fills as slowly over runs of a phase that meet the size once each.
    let most = (filling + 2).clamp(PHASE_FILLING_REPEATS, Repetition::RUN.filling);
    let mut repeats = (filling + 2).clamp(PHASE_REPEATS, most);
    let mut profile: [Vec<MemoryGrowth>; 2] = [Vec::new(), Vec::new()];
    let mut linear_in_a_row = 0;
    let mut repeat = 0;
    loop {
        repeat += 1;
        again();
        let now = settled();
        for ((profile, now), before) in profile.iter_mut().zip(&now).zip(before) {
            profile.push(net_growth(now, before));
        }
        let added: Vec<MemoryGrowth> = now
            .iter()
            .zip(&previous)
            .map(|(now, then)| net_growth(now, then))
            .collect();
        if !added.iter().any(MemoryGrowth::grew) {
            return kept_memory(&endpoints, &now, before);
        }
        let linear = added
            .iter()
            .zip(&phase)
            .any(|(added, phase)| added.grew() && at_least_half(added, phase));
        linear_in_a_row = if linear { linear_in_a_row + 1 } else { 0 };
        if linear_in_a_row >= 2 && (repeat > filling || repeat == repeats) {
            return LeakCheck::Checked(with_profile(leaks, &endpoints, profile));
        }
        if repeat == repeats {
            if repeats < most {
                // Every run so far added memory, less than the phase did:
                // a bounded cache still filling as the calls' timing
                // allows stops within a few runs more; a steady leak
                // behind a cache the phase filled (a block freed whose
                // bytes the device still counts) does not.
                repeats = most;
            } else {
                // Memory rose on every one of the runs of the same calls:
                // no bounded cache fills that way.
                return LeakCheck::Checked(with_profile(leaks, &endpoints, profile));
            }
        }
        previous = now;
    }
}

/// Whether `added` is at least half of `phase`, in what both count.
fn at_least_half(added: &MemoryGrowth, phase: &MemoryGrowth) -> bool {
    let half = |added: Option<i64>, phase: Option<i64>| match (added, phase) {
        (Some(added), Some(phase)) => Some(added.saturating_mul(2) >= phase),
        _ => None,
    };
    [
        half(added.allocations, phase.allocations),
        half(added.bytes, phase.bytes),
    ]
    .into_iter()
    .flatten()
    .any(|half| half)
}

/// The memory kept on each endpoint, from `now` against `before`: kept
/// memory where some stayed, no leak at all where none did.
fn kept_memory(endpoints: &[&Endpoint; 2], now: &[Sample; 2], before: &[Sample; 2]) -> LeakCheck {
    let kept: Vec<KeptMemory> = endpoints
        .iter()
        .zip(now.iter().zip(before))
        .filter_map(|(endpoint, (now, then))| {
            let mut growth = net_growth(now, then);
            if !growth.grew() {
                return None;
            }
            if growth.bytes.is_none()
                && let (Some(ledger), Some(mark)) = (endpoint.ledger(), &then.ledger)
            {
                let bytes: usize = ledger
                    .opened_since(mark)
                    .iter()
                    .map(|allocation| allocation.bytes)
                    .sum();
                growth.bytes = i64::try_from(bytes).ok();
            }
            Some(KeptMemory::new(endpoint.name(), growth))
        })
        .collect();
    if kept.is_empty() {
        LeakCheck::Checked(Vec::new())
    } else {
        LeakCheck::Kept(kept)
    }
}

/// `endpoint`'s accounting once it settled.
fn settled(endpoint: &Endpoint, counted: bool) -> Sample {
    endpoint.settle();
    Sample::of(endpoint, counted)
}

/// The most memory each endpoint held at any sample so far, by live
/// allocations (the ledger's, else the device's count) and by bytes.
struct Peak {
    allocations: [Option<i64>; 2],
    bytes: [Option<i64>; 2],
}

impl Peak {
    fn of(samples: &[Sample; 2]) -> Self {
        let mut peak = Self {
            allocations: [None; 2],
            bytes: [None; 2],
        };
        peak.rises_to(samples);
        peak
    }

    /// Take in `samples`; whether any endpoint held more of either measure
    /// than at every sample before.
    fn rises_to(&mut self, samples: &[Sample; 2]) -> bool {
        let mut rose = false;
        for (side, sample) in samples.iter().enumerate() {
            let (allocations, bytes) = levels(sample);
            for (level, peak) in [
                (allocations, &mut self.allocations[side]),
                (bytes, &mut self.bytes[side]),
            ] {
                if let Some(level) = level {
                    match peak {
                        Some(high) if level <= *high => {}
                        Some(high) => {
                            *high = level;
                            rose = true;
                        }
                        None => *peak = Some(level),
                    }
                }
            }
        }
        rose
    }
}

/// What a sample says is live: allocations (the ledger's where it keeps
/// one, as [`net_growth`] judges them, else the device's count) and bytes
/// (the device's count, where the ledger does not decide).
fn levels(sample: &Sample) -> (Option<i64>, Option<i64>) {
    let wide = |count: u64| i64::try_from(count).unwrap_or(i64::MAX);
    if let Some(mark) = &sample.ledger {
        return (Some(i64::try_from(mark.live()).unwrap_or(i64::MAX)), None);
    }
    match &sample.counts {
        Some(counts) => (counts.allocations.map(wide), counts.bytes.map(wide)),
        None => (None, None),
    }
}

/// How much more is live at `now` than at `then`: by the ledger's live
/// allocations where it keeps one (what found the growth), else by the
/// device's counts.
fn net_growth(now: &Sample, then: &Sample) -> MemoryGrowth {
    if let (Some(now), Some(then)) = (&now.ledger, &then.ledger) {
        let count = |mark: &crate::LedgerMark| i64::try_from(mark.live()).unwrap_or(i64::MAX);
        return MemoryGrowth {
            allocations: Some(count(now) - count(then)),
            bytes: None,
        };
    }
    match (&now.counts, &then.counts) {
        (Some(now), Some(then)) => now.growth_since(then),
        _ => MemoryGrowth::default(),
    }
}
