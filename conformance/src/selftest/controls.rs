//! The self-test's controls: correct providers that keep state between
//! calls, which every schedule and kind of device must pass.

use std::sync::Arc;

use tenferro_mock_devices::providers::{CachingAllocator, ContentCache};
use tenferro_runtime::TransferProvider;

use super::catalogue::{Devices, Exercised};

/// A correct provider that keeps state between calls, and how the
/// self-test exercises it: on every schedule and kind of device, it must
/// show no violation (memory it keeps and reuses is reported, not a leak).
#[derive(Clone, Debug)]
pub struct ControlSpec {
    /// Name in the kill matrix (`control:<name>`).
    pub name: &'static str,
    /// The schedules and devices it runs on.
    pub exercises: Vec<(Exercised, Devices)>,
    wrap: fn(Arc<dyn TransferProvider>) -> Arc<dyn TransferProvider>,
}

impl ControlSpec {
    /// The control around a reference provider `inner`.
    pub fn wrap(&self, inner: Arc<dyn TransferProvider>) -> Arc<dyn TransferProvider> {
        (self.wrap)(inner)
    }
}

/// The self-test's correct stateful providers: a caching allocator (four
/// blocks per size), a recycling pool (one), and a cache keyed by the full
/// content, each on every schedule and on aliasing, copying and counting
/// devices.
pub fn controls() -> Vec<ControlSpec> {
    use Devices as D;
    use Exercised as E;
    let everywhere = vec![
        (E::Plainly, D::AsBuilt),
        (E::Plainly, D::CountingOnly),
        (E::Held, D::AsBuilt),
        (E::Together, D::CopyingKernels),
        (E::Together, D::CountingOnly),
        (E::Twins, D::AsBuilt),
        (E::ConcurrentTwins, D::AsBuilt),
    ];
    vec![
        ControlSpec {
            name: "caching-allocator",
            exercises: everywhere.clone(),
            wrap: |inner| Arc::new(CachingAllocator::new(inner, 4)),
        },
        ControlSpec {
            name: "recycling-pool",
            exercises: everywhere.clone(),
            wrap: |inner| Arc::new(CachingAllocator::new(inner, 1)),
        },
        ControlSpec {
            name: "full-content-cache",
            exercises: everywhere,
            wrap: |inner| Arc::new(ContentCache::new(inner)),
        },
    ]
}
