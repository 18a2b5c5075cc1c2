//! The rule catalogue: every rule of the transfer contract, with a stable
//! kebab-case id, the sentence that states it, where it comes from in
//! tenferro, and how the harness checks it.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// The rule catalogue, written once: for each rule its variant of
/// [`Rule`], the name of its test in `conformance_tests!`, its id, the
/// conformance level that introduced it, the line that documents it, its
/// two letters in the self-test's matrix, the sentence that states it, where it comes from in tenferro and how the
/// harness checks it. [`Rule`] and its methods, the levels and the
/// macro's tests are all expanded from it: a new rule is one entry here
/// (plus the oracle's check, its broken provider and its tests).
///
/// `__rule_catalogue!([callback path] { prefix tokens })` expands to
/// `callback! { prefix tokens [ entries ] }`, each entry being
/// `Variant test_name "id" Level "doc" { abbreviation: "..", statement:
/// "..", origin: "..", method: "..", },`; an implementation detail of the
/// conformance crate's levels and macro.
#[doc(hidden)]
#[macro_export]
macro_rules! __rule_catalogue {
    ([$($callback:tt)*] { $($prefix:tt)* }) => {
        $($callback)*! { $($prefix)* [
            Dtype dtype "dtype" V1 "Output dtype equals the input's." {
                abbreviation: "dt",
                statement: "The returned tensor has the dtype of the input.",
                origin: "validate_transfer_output (runtime/execution.rs): TransferProviderContractError::DTypeMismatch",
                method: "The Spy reads the returned tensor's dtype before the runtime sees it; the oracle compares it with the case's.",
            },
            Shape shape "shape" V1 "Output shape equals the input's." {
                abbreviation: "sh",
                statement: "The returned tensor has the shape of the input.",
                origin: "validate_transfer_output (runtime/execution.rs): TransferProviderContractError::ShapeMismatch",
                method: "The Spy reads the returned shape; the oracle compares it with the case's.",
            },
            BufferLength buffer_length "buffer-length" V1 "Output buffer length equals the shape's element count." {
                abbreviation: "bl",
                statement: "The returned tensor's buffer holds exactly as many elements as the shape.",
                origin: "validate_transfer_output (runtime/execution.rs): TransferProviderContractError::InvalidBufferLength",
                method: "The Spy reads buffer().len() exactly as the runtime does, and again after reading the buffer; the oracle compares it with the shape's element count and reports a length that changes between calls.",
            },
            Placement placement "placement" V1 "Output placement is accepted by the destination." {
                abbreviation: "pl",
                statement: "The returned tensor's placement is one the destination engine accepts for its storage class.",
                origin: "validate_transfer_output (runtime/execution.rs): TransferProviderContractError::DestinationPlacementMismatch",
                method: "The oracle tests the returned placement against the destination endpoint's declared placement rule.",
            },
            Residency residency "residency" V1 "Output storage is owned by the destination." {
                abbreviation: "rs",
                statement: "The returned tensor's backend family and allocation domain are owned by the destination engine.",
                origin: "validate_transfer_output (runtime/execution.rs): TransferProviderContractError::DestinationResidencyMismatch",
                method: "The oracle tests the returned backend family and allocation domain against the destination's declared storage rule.",
            },
            Completion completion "completion" V1 "The copy has completed when `transfer_blocking` returns." {
                abbreviation: "cm",
                statement: "transfer_blocking returns only after the copy has completed, so the output is immediately readable.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs): \"must not return after merely enqueueing work\"",
                method: "Right after transfer_blocking returns, the Spy asks the destination whether the copy into the output has completed (`DeviceEndpoint::completion`): simulated memory knows (a queued copy completes only when waited on), a vendor's device answers from its own fences; plain host memory cannot tell, so the rule is not checked there. Each call whose input reaches the provider unread is made just after a stall of the destination's queues where its adapter can stall them (`DeviceEndpoint::stall_queues`), so the work a provider queues on the destination is still pending at return if it did not wait for that work (it waited on another queue's fence, the source's say).",
            },
            Values values "values" V1 "Every element arrives bit-exact." {
                abbreviation: "va",
                statement: "Every element arrives bit-exact, whatever the input's strides and offset: NaN payloads, -0.0 and subnormals included.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs): the destination tensor is the input, transferred",
                method: "The Spy maps the returned buffer and compares it with the case's bytes as it reads it, a chunk at a time, keeping its image only where it differs; the oracle names the elements that differ. A provider suite moves, for each dtype, a vector of runs of one element (`Case::runs`: 1 to 65,537 elements long, each run's value differing from the last in bits but not always as a number, `0.0` then `-0.0`, NaNs of other payloads), which a copy that compresses what it sends (runs counted in too few bits, elements compared as numbers) changes. Twins (a case, then one of its dtype and shape with a few interior elements changed) and runs of several inputs meet what a provider kept from an earlier call; an output that holds another input's values names that input. The second owned fixed case of each dtype and size, and, after a run that read a fixed view first broke no rule, a case of that view's dtype, shape and layout with other values in every element (the block that run freed may come back holding the view's values), reach the provider as the source staged it, unread (a read through a device waits for the writes still queued into the input; a source's `stage` may leave its upload queued, as a kernel still writing a tensor leaves it), staged behind a stall of the source's queues where its adapter can stall them (`DeviceEndpoint::stall_queues`), so a provider that copies its input before those writes land delivers stale values; a replayed case that breaks no rule read first is followed so by such a case of its kind.",
            },
            NoError no_error "no-error" V1 "No `Err` for an input the provider declares it handles." {
                abbreviation: "ne",
                statement: "The provider does not return Err for an input inside its declared capabilities.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs) # Errors: Err only when the request cannot be served",
                method: "The Spy records an Err with its Display and source chain; every built-in case is inside the reference providers' capabilities. An Err that carries a device failure the fault plan injected on this case is an expected error, not a violation.",
            },
            NoPanic no_panic "no-panic" V1 "No panic." {
                abbreviation: "np",
                statement: "The provider reports failure as a typed Err, never as a panic.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs) # Errors: failures are typed errors",
                method: "The Spy runs the provider inside catch_unwind, records the panic message and hands the runtime an Err; every call into the returned storage (len, map_read, the completion probe) is guarded the same way, and a panic that escapes Runtime::run after the provider returned (the storage's Drop, or the runtime's calls into it) is the provider's too.",
            },
            Deadline deadline "deadline" V1 "No hang." {
                abbreviation: "dl",
                statement: "The provider returns (Ok or Err) within the deadline; it never hangs.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs): a blocking call that completes",
                method: "The Watchdog runs each case on a worker thread; a case that overruns its deadline is reported with the request in flight (or the returned storage's method that hung) and the event-domain trace, the hung thread is released or given up, and the next case runs.",
            },
            NoLeak no_leak "no-leak" V1 "Every allocation is released with its tensor." {
                abbreviation: "lk",
                statement: "Every allocation the transfer made is released when its tensor drops.",
                origin: "TransferProvider::transfer_blocking (runtime/transfer.rs): the returned Tensor owns its storage",
                method: "The devices' accounting is read before the case and after all its tensors are dropped and the devices settled: a ledger lists the allocations made meanwhile and still live (on any thread when the case ran alone on the device, on its own thread otherwise; others that cannot be attributed make the case unchecked), and from level v2 a device's counts of memory in use must not have grown. Memory that stays is told from a leak by repetition: the case runs twelve more times, and memory that rises over the last six above the most it held at any earlier sample may be a leak, memory that does not (that stays, or only comes back to a level it had: a cache trimmed, then refilled) is kept memory (reported with its allocations and bytes, never a failure); memory that rose is repeated on, up to 48 repetitions, and is kept once it has not risen above its peak over six more where it rose on every repetition until it stopped (a cache filling a block a call), or over twelve more otherwise (a deferred release), else it is a leak. Accounting that did not see the case's input or output while it was alive vouches for nothing: the rule is then not checked. The memory over a pass that holds outputs, and over the concurrent calls, is judged as a whole (the phase run again tells kept memory from a leak: up to three times, or, where a case's memory was seen filling over n repetitions, n + 2 times, at most twelve; memory that rose on each of those runs is run again up to twelve times, or n + 2 times up to 48, and is a leak if it rose on every one), and not at all while calls of the route that never returned still hold memory; over a phase, each device vouches with what it was shown to see: the source the staged inputs, the destination the outputs. Plain host memory accounts nothing.",
            },
            CapabilityHonesty capability_honesty "capability-honesty" V1 "An input outside the declared capabilities gets a typed `Err`." {
                abbreviation: "ch",
                statement: "An input outside the provider's declared capabilities gets a typed Err: no success (with wrong data or right), no panic.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs) # Errors: Err when the request cannot be served; the declared capabilities are the provider's own statement of what it serves",
                method: "The suite stages inputs just outside the declared capabilities (an undeclared dtype, a view when views are not declared, one element more than the declared maximum) and requires the provider to return Err; an Ok is reported with whatever else was wrong with it. Unchecked when the declared capabilities cover every case the suite can draw.",
            },
            RuntimeAgreement runtime_agreement "runtime-agreement" V1 "The suite's verdict agrees with the runtime's." {
                abbreviation: "ra",
                statement: "The suite's verdict on the runtime-checked rules equals the runtime's own verdict.",
                origin: "validate_transfer_output (runtime/execution.rs): its check order dtype, shape, buffer-length, placement, residency",
                method: "The oracle's first violation in the runtime's order must be the variant the runtime returned; no violation must mean the runtime accepted; a violation the runtime let through, failing only later (a destination engine that cannot use the output), is a disagreement too. The request's event-domain ids must be the snapshot's, and a transfer to a simulated device must launch in its event domain.",
            },
            InputIntact input_intact "input-intact" V2 "The input, a borrow, is unchanged by the transfer." {
                abbreviation: "ii",
                statement: "The transfer leaves its input as it found it: every byte of the input's backing storage, a view's gaps included, is the same after the call as before, and does not change while the call runs (others may read a borrow meanwhile).",
                origin: "TransferRequest (runtime/transfer.rs): \"Borrowed request passed to a TransferProvider\"; the input is a TensorRead, a borrow the caller still owns",
                method: "The rig reads the input's whole backing storage (a view's gaps too) through the source before the call (the cases handed over unread excepted, as `values` says: an owned input is compared with the case's values after the call; a view's backing, whose gaps the adapter fills as it likes, is not judged on its unread run), again as soon as the provider returns, and again after the output was read and dropped; on the first fixed case of each dtype, layout and size (and a replayed case), a thread beside the call also reads it over and over while the call runs. Any changed byte is a violation naming the first changed element. Not checked where the source cannot be read back; the reads beside a call see a change only while the reader gets a core, so they can miss one, never invent one.",
            },
            OutputStable output_stable "output-stable" V2 "An output keeps its bytes as long as the caller holds it." {
                abbreviation: "os",
                statement: "An output keeps its bytes for as long as the caller holds it: a later transfer never writes into a tensor returned before.",
                origin: "TransferProvider::transfer_blocking docs (runtime/transfer.rs): the returned Tensor is owned by the caller and immediately readable by the destination",
                method: "Within a run of several inputs, the runtime holds each provider output until the program ends, and the program reads each again after the last transfer: one that changed (on a device whose kernels copy as on one whose kernels alias) names the input and the later transfers. Across runs, the rig keeps recent outputs alive (the last few, and always the latest 16 of the dtype and length it moves, `HOLD_SAME_SIZE`) and reads them again after each later call and at the end of the route; the held pass moves each case next to one of its size, then, for each dtype, its largest case of at most 4,096 elements 16 times more, one a run, then 65 times in one run (the runtime holds them all, whatever the kernels do), and last the largest case above 65,536 elements of one dtype in a pair and twice more, so that a provider whose blocks of a size run out (a ring of staging outputs, a pool that counts a held block as free) hands out one the caller still holds; the first of those two runs reads its output only after the second (`Rig::defer_output_reads`), its destination's queues stalled as the call returns where the adapter can stall them (`DeviceEndpoint::stall_queues`), so the destination engine's kernel over the provider's output is still queued while the next call writes (a block freed in stream order and written from the host at once changes the result the caller holds); in the concurrent calls, each thread holds its recent outputs of at most 65,536 elements and reads them again after each of its calls and once every thread's calls have returned, so a call that writes into an output another thread's caller still holds (a cache that takes a held block from another thread's) is seen. A changed byte names the case whose output changed and the call after which it was seen.",
            },
        ] }
    };
}

/// [`Rule`] and its catalogue order, from the catalogue's entries.
macro_rules! define_rules {
    ([$($variant:ident $test:ident $id:literal $level:ident $doc:literal {
        abbreviation: $abbreviation:literal,
        statement: $statement:literal,
        origin: $origin:literal,
        method: $method:literal,
    },)+]) => {
        /// One rule of the `TransferProvider` contract.
        #[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
        #[non_exhaustive]
        pub enum Rule {
            $(
                #[doc = $doc]
                $variant,
            )+
        }

        /// How many rules the catalogue has.
        const RULE_COUNT: usize = [$($id),+].len();

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: [Rule; RULE_COUNT] = [$(Rule::$variant),+];

            /// The stable kebab-case id.
            ///
            /// # Examples
            ///
            /// ```
            /// use tenferro_transfer_harness::Rule;
            ///
            /// assert_eq!(Rule::BufferLength.id(), "buffer-length");
            /// assert_eq!("buffer-length".parse::<Rule>().unwrap(), Rule::BufferLength);
            /// ```
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)+
                }
            }

            /// The name of the rule's test in `conformance_tests!`
            /// (`buffer_length`).
            pub fn test_name(self) -> &'static str {
                match self {
                    $(Rule::$variant => stringify!($test),)+
                }
            }

            /// The name of the conformance level that introduced the rule
            /// (`v1`): a level checks the rules introduced at it and before.
            pub fn introduced_in(self) -> &'static str {
                match self {
                    $(Rule::$variant => level_name!($level),)+
                }
            }

            /// The rule's two letters in the self-test's kill matrix (`bl`).
            pub fn abbreviation(self) -> &'static str {
                match self {
                    $(Rule::$variant => $abbreviation,)+
                }
            }

            /// One sentence stating the rule.
            pub fn statement(self) -> &'static str {
                match self {
                    $(Rule::$variant => $statement,)+
                }
            }

            /// Where in tenferro-runtime 0.9.0 the rule comes from.
            pub fn origin(self) -> &'static str {
                match self {
                    $(Rule::$variant => $origin,)+
                }
            }

            /// How the harness checks the rule.
            pub fn method(self) -> &'static str {
                match self {
                    $(Rule::$variant => $method,)+
                }
            }
        }
    };
}

/// A level's identifier in the catalogue as its name.
macro_rules! level_name {
    (V1) => {
        "v1"
    };
    (V2) => {
        "v2"
    };
}

__rule_catalogue!([define_rules] {});

/// The five rules the runtime itself checks, in the order it checks them.
pub const RUNTIME_ORDER: [Rule; 5] = [
    Rule::Dtype,
    Rule::Shape,
    Rule::BufferLength,
    Rule::Placement,
    Rule::Residency,
];

impl Rule {
    /// The runtime's `TransferProviderContractError` variant for this rule,
    /// for the five rules the runtime checks.
    pub fn runtime_variant(self) -> Option<crate::ContractVariant> {
        use crate::ContractVariant as V;
        Some(match self {
            Rule::Dtype => V::DTypeMismatch,
            Rule::Shape => V::ShapeMismatch,
            Rule::BufferLength => V::InvalidBufferLength,
            Rule::Placement => V::DestinationPlacementMismatch,
            Rule::Residency => V::DestinationResidencyMismatch,
            _ => return None,
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        id.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

/// An id that names no rule.
#[derive(Debug, thiserror::Error)]
#[error("unknown rule id `{id}`; known ids: {}", known_ids())]
pub struct UnknownRule {
    /// The id given.
    pub id: String,
}

fn known_ids() -> String {
    Rule::ALL
        .iter()
        .map(|rule| rule.id())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Rule {
    type Err = UnknownRule;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Rule::ALL
            .into_iter()
            .find(|rule| rule.id() == id)
            .ok_or_else(|| UnknownRule { id: id.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::Rule;

    #[test]
    fn every_rule_has_its_own_two_letters() {
        let mut seen = HashSet::new();
        for rule in Rule::ALL {
            let letters = rule.abbreviation();
            assert_eq!(letters.chars().count(), 2, "{rule}: {letters}");
            assert!(seen.insert(letters), "{rule} shares `{letters}`");
        }
    }
}
