//! What an adapter says its device is ([`DeviceDescription`]): the one
//! value from which the harness takes the device's name and kind, its
//! engine's identities and the rules a correct output on it keeps.

use tenferro_runtime::{EngineId, StorageClass};

use crate::{PlacementRule, StorageRule};

/// What a device is, as the suite sees it: its name and kind, the
/// identities the runtime knows its engine by, and what a correct output
/// on it looks like. What [`DeviceEndpoint::describe`](crate::DeviceEndpoint::describe) returns.
///
/// # Examples
///
/// ```
/// use tenferro_runtime::{EngineId, StorageClass};
/// use tenferro_transfer_harness::{DeviceDescription, PlacementRule, StorageRule};
///
/// let description = DeviceDescription::new(
///     "my-cpu",
///     "my-cpu",
///     EngineId::new("my-vendor.cpu.v1").unwrap(),
///     StorageClass::new("tenferro-cpu.host.v1").unwrap(),
///     PlacementRule::Host,
///     StorageRule::PlainHost,
/// );
/// assert_eq!(description.name, "my-cpu");
/// ```
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct DeviceDescription {
    /// The endpoint's name in reports (`host`, `sim0`, `npu0`).
    pub name: String,
    /// The kind of device, for [`REQUIRE_DEVICES_ENV`](crate::REQUIRE_DEVICES_ENV)
    /// (`host`, `sim`, or your own).
    pub kind: String,
    /// The engine id the runtime knows the device's engine by; it must
    /// differ from the other side's.
    pub engine_id: EngineId,
    /// The storage class transfers use on the device.
    pub storage_class: StorageClass,
    /// The placement a correct output on the device has.
    pub placement: PlacementRule,
    /// The storage (backend family, allocation domain) a correct output on
    /// the device has.
    pub storage: StorageRule,
}

impl DeviceDescription {
    /// A description from its parts.
    pub fn new(
        name: impl Into<String>,
        kind: impl Into<String>,
        engine_id: EngineId,
        storage_class: StorageClass,
        placement: PlacementRule,
        storage: StorageRule,
    ) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            engine_id,
            storage_class,
            placement,
            storage,
        }
    }
}
