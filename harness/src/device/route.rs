//! `Route`: where a transfer starts and where it must land.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tenferro_tensor::{AllocationDomainId, DeviceId, MemoryKind, Placement};

use crate::{Endpoint, HarnessError};

/// Which memory a correct transfer's output must sit in, stated
/// declaratively so the oracle can judge it independently of the runtime.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum PlacementRule {
    /// Pinned or unpinned host memory.
    Host,
    /// Managed memory (a host engine's own allocation domain).
    Managed,
    /// Device memory of this device.
    Device(DeviceId),
}

/// Which storage a correct transfer's output must use.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum StorageRule {
    /// Plain host storage: no backend family, no allocation domain.
    PlainHost,
    /// Backend storage of this family in this allocation domain.
    Domain {
        /// Required backend family.
        family: &'static str,
        /// Required allocation domain.
        domain: AllocationDomainId,
    },
}

impl PlacementRule {
    /// Whether `placement` satisfies the rule.
    pub fn accepts(&self, placement: &Placement) -> bool {
        match self {
            Self::Host => matches!(
                placement.memory_kind,
                MemoryKind::PinnedHost | MemoryKind::UnpinnedHost
            ),
            Self::Managed => placement.memory_kind == MemoryKind::Managed,
            Self::Device(device) => {
                placement.memory_kind == MemoryKind::Device
                    && placement.device.as_ref() == Some(device)
            }
        }
    }
}

impl StorageRule {
    /// Backend storage of `family` in allocation domain `domain`
    /// ([`StorageRule::Domain`]), as a device adapter states its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::AllocationDomainId;
    /// use tenferro_transfer_harness::StorageRule;
    ///
    /// let domain = AllocationDomainId::fresh();
    /// let rule = StorageRule::domain("my-npu", domain);
    /// assert!(rule.accepts(Some("my-npu"), Some(domain)));
    /// assert!(!rule.accepts(None, None));
    /// ```
    pub fn domain(family: &'static str, domain: AllocationDomainId) -> Self {
        Self::Domain { family, domain }
    }

    /// Whether a backend family and allocation domain satisfy the rule.
    pub fn accepts(&self, family: Option<&str>, domain: Option<AllocationDomainId>) -> bool {
        match self {
            Self::PlainHost => family.is_none(),
            Self::Domain {
                family: want,
                domain: want_domain,
            } => family == Some(want) && domain == Some(*want_domain),
        }
    }
}

impl fmt::Display for PlacementRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Host => formatter.write_str("host memory (pinned or unpinned)"),
            Self::Managed => formatter.write_str("managed memory"),
            Self::Device(device) => write!(
                formatter,
                "device memory on {:?} #{}",
                device.kind, device.ordinal
            ),
        }
    }
}

impl fmt::Display for StorageRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PlainHost => formatter.write_str("plain host storage (no backend family)"),
            Self::Domain { family, domain } => {
                write!(formatter, "backend family {family:?} in {domain:?}")
            }
        }
    }
}

/// A transfer route: the source the input starts on, and the destination
/// the provider must deliver to.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{Endpoint, Route};
///
/// let route = Route::new(Endpoint::host("cpu0").unwrap(), Endpoint::host("cpu1").unwrap()).unwrap();
/// assert_eq!(route.label(), "cpu0->cpu1");
/// ```
#[derive(Clone, Debug)]
pub struct Route {
    source: Endpoint,
    destination: Endpoint,
    /// Whether `no-leak` uses the devices' counts of memory in use
    /// ([`Route::counting_memory`]).
    counts_memory: bool,
    /// The most repetitions of one run over which the provider's memory
    /// grew a step each time before it stopped ([`Route::filling_seen`]),
    /// shared by the route's clones.
    filling: Arc<AtomicUsize>,
}

impl Route {
    /// A route between two endpoints (any devices, through their
    /// [`DeviceEndpoint`](crate::DeviceEndpoint) adapters), which must have
    /// distinct engine ids.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidRoute`] if both ends share an engine id.
    pub fn new(source: Endpoint, destination: Endpoint) -> Result<Self, HarnessError> {
        if source.engine_id() == destination.engine_id() {
            return Err(HarnessError::InvalidRoute {
                reason: format!(
                    "source and destination share engine id {}",
                    source.engine_id().as_str()
                ),
            });
        }
        Ok(Self {
            source,
            destination,
            counts_memory: true,
            filling: Arc::default(),
        })
    }

    /// The route with `no-leak` judged from the devices' counts of memory
    /// in use ([`DeviceEndpoint::memory_in_use`](crate::DeviceEndpoint::memory_in_use))
    /// where they keep no ledger (`true`, the default), or from ledgers
    /// only (`false`: what level V1 of the conformance suite checks).
    #[must_use]
    pub fn counting_memory(mut self, counts: bool) -> Self {
        self.counts_memory = counts;
        self
    }

    /// Whether `no-leak` uses the devices' counts of memory in use.
    pub fn counts_memory(&self) -> bool {
        self.counts_memory
    }

    /// The most repetitions of one run, on this route or a clone of it,
    /// over which the memory in use grew on every one before it stopped
    /// (kept memory, not a leak): a cache that holds each freed block back
    /// for that many later calls of its size. A phase whose memory grew is
    /// run again up to that many times plus two (at least twelve, at most
    /// 48) before growth that never stops is called a leak. 0 where no
    /// run filled a cache so.
    pub(crate) fn filling_seen(&self) -> usize {
        self.filling.load(Ordering::Relaxed)
    }

    /// A run's memory grew on each of `repetitions` repetitions, then
    /// stopped.
    pub(crate) fn note_filling(&self, repetitions: usize) {
        self.filling.fetch_max(repetitions, Ordering::Relaxed);
    }

    /// The source endpoint.
    pub fn source(&self) -> &Endpoint {
        &self.source
    }

    /// The destination endpoint.
    pub fn destination(&self) -> &Endpoint {
        &self.destination
    }

    /// `source->destination`, e.g. `host->sim0`.
    pub fn label(&self) -> String {
        format!("{}->{}", self.source.name(), self.destination.name())
    }

    /// `Ok` when both devices are here; otherwise the first unavailable
    /// endpoint's skip (or failure, where the user requires the device):
    /// see [`Endpoint::gate`].
    ///
    /// # Errors
    ///
    /// As [`Endpoint::gate`].
    pub fn gate(&self) -> Result<(), HarnessError> {
        self.source.gate()?;
        self.destination.gate()
    }
}
