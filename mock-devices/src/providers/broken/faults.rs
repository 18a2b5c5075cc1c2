//! The fault vocabulary of [`super::Broken`]: every way it breaks the
//! contract, with stable kebab-case names (the CLI's `--inject`, reports)
//! and the classes the provider applies them by.

use super::super::hostile::Hostility;

/// One way to break the contract.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
#[non_exhaustive]
pub enum Fault {
    /// `dtype`: the output has another dtype (an f32 input comes back f64;
    /// f64 comes back f32, i32 as i64, i64 as i32, bool as i32, c32 as c64,
    /// c64 as c32).
    WrongDtype,
    /// `shape`: the output gains a trailing axis of extent one.
    RankChanged,
    /// `shape`: the output's dimensions are reversed.
    DimsPermuted,
    /// `buffer-length`: the output buffer reports one element more than it
    /// holds, after the tensor was built.
    LyingLength,
    /// `placement`: the output claims unpinned host memory on a device route.
    HostPlacement,
    /// `placement`: the output claims the next device ordinal.
    WrongOrdinal,
    /// `residency`: the destination's backend family over a foreign
    /// allocation domain.
    ForeignDomain,
    /// `residency`: the destination's allocation domain with a forged
    /// backend family.
    WrongFamily,
    /// `values`: element 0 is one unit in the last place off (its bits
    /// plus one; a bool is flipped).
    OneUlp,
    /// `values`: every NaN is replaced by the canonical quiet NaN, losing
    /// its payload.
    CanonicalNan,
    /// `values`: every `-0.0` becomes `+0.0`.
    NegativeZeroLost,
    /// `values`: element 0 is swapped with the first element whose bits
    /// differ from it.
    Swapped,
    /// `values`: a view is copied as if it were compact from its offset.
    IgnoreStrides,
    /// `values`: a view is copied with its strides but from offset zero.
    IgnoreOffset,
    /// `no-error`: returns `Err` for a valid input.
    ErrOnValid,
    /// `values`, in a narrow corner: element 0 is one ULP off, but only for
    /// C64 tensors of rank 2 or more whose last dimension is odd.
    CornerC64OddLastDim,
    /// `values`, in a narrow corner: only the last element is one ULP off,
    /// and only when the input is a view with a non-zero offset.
    CornerLastOfOffsetView,
    /// `values`, in a narrow corner: element 0 is one ULP off, but only when
    /// the tensor holds more than 4096 elements.
    CornerAbove4096,
    /// `no-panic`: panics.
    Panic,
    /// `completion`: returns after queueing the final copy into device
    /// memory, without waiting for it (the classic forgotten synchronize).
    /// Only device destinations can show it.
    EarlyReturn,
    /// `values`: only the first half of the elements arrive; the rest keep
    /// the device's poison.
    PartialCopy,
    /// `no-leak`: keeps a staging allocation of the transfer alive forever.
    Leaky,
    /// `deadline`: never returns until the harness's watchdog releases it.
    Hang,
    /// `no-panic`: queues a copy into device memory and panics while it is
    /// in flight (on host destinations, panics after the copy).
    PanicMidCopy,
    /// `no-panic`: the returned device storage panics in `map_read` (a
    /// plain host output has no storage of the provider's: unchanged).
    PanickingMapRead,
    /// `no-panic`: the returned device storage panics in `len` (host
    /// outputs unchanged).
    PanickingLen,
    /// `no-panic`: dropping the returned device storage panics (host
    /// outputs unchanged).
    PanickingDrop,
    /// `buffer-length`: the returned device storage's `len` is right the
    /// first time it is asked and one more every later time (host outputs
    /// unchanged).
    UnstableLength,
    /// `values`: the returned device storage's `map_read` hands out every
    /// element but the last, though `len` counts them all (host outputs
    /// unchanged).
    ShortMapRead,
    /// `input-intact`: after the correct transfer returned, overwrites the
    /// whole backing memory of its input, a borrow (every element becomes
    /// the poison, or zero where it held the poison, so every element
    /// changes). Only where the input is simulated memory (a
    /// [`SimStorage`](crate::SimStorage): a simulated device's, or a host
    /// allocation domain's such as the harness's managed host memory); a
    /// plain host input (a `Vec`) is left alone, and an empty input has
    /// nothing to overwrite.
    WritesInput,
    /// `output-stable`: an output pool (one per thread, keyed by element
    /// type and count) remembers its last output allocation weakly and,
    /// while an earlier output still holds it, hands that same allocation
    /// out again with the new values: the new output is right, and the
    /// earlier output, still held by the caller, silently changes to the
    /// new values. Only where the output is simulated memory, and seen
    /// only when the caller holds an earlier output of the same size whose
    /// values differ.
    ReusesLiveOutput,
    /// `no-leak`: keeps every fifth output allocation in simulated memory
    /// alive forever (outputs in plain host memory are not counted).
    LeaksEveryFifth,
    /// `no-leak`: on every transfer a thread of the provider's own (a
    /// "driver thread") allocates a 64-byte buffer in the output's
    /// simulated memory (the destination device), or in the input's where
    /// the output is plain host memory (the source device), and the
    /// provider keeps it alive forever: the ledger lists an allocation
    /// made during the call by a thread that is not the caller's. Nothing
    /// where neither side is simulated memory.
    LeaksOnDriverThread,
    /// `values`: one staging slot per element type and count, shared by
    /// every call: a call puts its values in the slot, builds its copy
    /// descriptor (a millisecond), then copies whatever the slot holds. A
    /// call of the same size on another thread in between overwrites the
    /// slot, and its values arrive in the first call's output. Seen only
    /// when calls of the same size overlap.
    SharedStagingSlot,
    /// `values`: a content cache that compares a few sampled elements (the
    /// first and the last): when an earlier input of the same dtype and
    /// shape agrees with this one there, the output is filled from the
    /// earlier values. Seen only when two inputs of one shape differ
    /// elsewhere (a twin).
    SampledContentCache,
}

impl Fault {
    /// Every fault, in declaration order.
    pub const ALL: [Fault; 35] = [
        Fault::WrongDtype,
        Fault::RankChanged,
        Fault::DimsPermuted,
        Fault::LyingLength,
        Fault::HostPlacement,
        Fault::WrongOrdinal,
        Fault::ForeignDomain,
        Fault::WrongFamily,
        Fault::OneUlp,
        Fault::CanonicalNan,
        Fault::NegativeZeroLost,
        Fault::Swapped,
        Fault::IgnoreStrides,
        Fault::IgnoreOffset,
        Fault::ErrOnValid,
        Fault::CornerC64OddLastDim,
        Fault::CornerLastOfOffsetView,
        Fault::CornerAbove4096,
        Fault::Panic,
        Fault::EarlyReturn,
        Fault::PartialCopy,
        Fault::Leaky,
        Fault::Hang,
        Fault::PanicMidCopy,
        Fault::PanickingMapRead,
        Fault::PanickingLen,
        Fault::PanickingDrop,
        Fault::UnstableLength,
        Fault::ShortMapRead,
        Fault::WritesInput,
        Fault::ReusesLiveOutput,
        Fault::LeaksEveryFifth,
        Fault::LeaksOnDriverThread,
        Fault::SharedStagingSlot,
        Fault::SampledContentCache,
    ];

    /// A stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::WrongDtype => "wrong-dtype",
            Fault::RankChanged => "rank-changed",
            Fault::DimsPermuted => "dims-permuted",
            Fault::LyingLength => "lying-length",
            Fault::HostPlacement => "host-placement",
            Fault::WrongOrdinal => "wrong-ordinal",
            Fault::ForeignDomain => "foreign-domain",
            Fault::WrongFamily => "wrong-family",
            Fault::OneUlp => "one-ulp",
            Fault::CanonicalNan => "canonical-nan",
            Fault::NegativeZeroLost => "negative-zero-lost",
            Fault::Swapped => "swapped",
            Fault::IgnoreStrides => "ignore-strides",
            Fault::IgnoreOffset => "ignore-offset",
            Fault::ErrOnValid => "err-on-valid",
            Fault::CornerC64OddLastDim => "corner-c64-odd-last-dim",
            Fault::CornerLastOfOffsetView => "corner-last-of-offset-view",
            Fault::CornerAbove4096 => "corner-above-4096",
            Fault::Panic => "panic",
            Fault::EarlyReturn => "early-return",
            Fault::PartialCopy => "partial-copy",
            Fault::Leaky => "leaky",
            Fault::Hang => "hang",
            Fault::PanicMidCopy => "panic-mid-copy",
            Fault::PanickingMapRead => "panicking-map-read",
            Fault::PanickingLen => "panicking-len",
            Fault::PanickingDrop => "panicking-drop",
            Fault::UnstableLength => "unstable-length",
            Fault::ShortMapRead => "short-map-read",
            Fault::WritesInput => "writes-input",
            Fault::ReusesLiveOutput => "reuses-live-output",
            Fault::LeaksEveryFifth => "leaks-every-fifth",
            Fault::LeaksOnDriverThread => "leaks-on-driver-thread",
            Fault::SharedStagingSlot => "shared-staging-slot",
            Fault::SampledContentCache => "sampled-content-cache",
        }
    }

    /// The fault called `name` (see [`Fault::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::providers::Fault;
    ///
    /// assert_eq!(Fault::from_name("one-ulp"), Some(Fault::OneUlp));
    /// assert_eq!(Fault::from_name("no-such-fault"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|fault| fault.name() == name)
    }

    pub(super) fn corrupts_values(self) -> bool {
        matches!(
            self,
            Fault::OneUlp
                | Fault::CornerC64OddLastDim
                | Fault::CornerLastOfOffsetView
                | Fault::CornerAbove4096
                | Fault::CanonicalNan
                | Fault::NegativeZeroLost
                | Fault::Swapped
                | Fault::IgnoreStrides
                | Fault::IgnoreOffset
                | Fault::PartialCopy
        )
    }

    /// How the returned storage misbehaves, for the storage faults.
    pub(super) fn hostility(self) -> Option<Hostility> {
        match self {
            Fault::PanickingMapRead => Some(Hostility::PanicInMapRead),
            Fault::PanickingLen => Some(Hostility::PanicInLen),
            Fault::PanickingDrop => Some(Hostility::PanicInDrop),
            Fault::UnstableLength => Some(Hostility::UnstableLength),
            Fault::ShortMapRead => Some(Hostility::ShortMapRead),
            _ => None,
        }
    }

    /// Whether the fault answers from state kept between calls.
    pub(super) fn keeps_state(self) -> bool {
        matches!(self, Fault::SharedStagingSlot | Fault::SampledContentCache)
    }

    pub(super) fn breaks_metadata(self) -> bool {
        matches!(
            self,
            Fault::WrongDtype
                | Fault::RankChanged
                | Fault::DimsPermuted
                | Fault::LyingLength
                | Fault::HostPlacement
                | Fault::WrongOrdinal
                | Fault::ForeignDomain
                | Fault::WrongFamily
        )
    }
}
