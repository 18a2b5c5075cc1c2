//! A device that is not here: the endpoint a route gets when its device
//! cannot be opened or is not built in, so that its cases are skips with
//! the reason (failures where the settings require the device).

use tenferro_runtime::{EngineId, EngineRegistration, ExecutionEngine, StorageClass};

use crate::{
    Availability, DeviceDescription, DeviceEndpoint, EngineRole, HarnessError, PlacementRule,
    StorageRule,
};

/// Whether the settings require a device of `kind` (`all`, or
/// [`REQUIRE_DEVICES_ENV`](crate::REQUIRE_DEVICES_ENV) naming it, or its
/// alias [`REQUIRE_KIND_ENV`](crate::REQUIRE_KIND_ENV) set to `1`). A setting the suite does not know counts as requiring
/// nothing here; the run that reads the settings reports it.
pub fn device_required(kind: &str) -> bool {
    crate::Settings::current().is_ok_and(|settings| settings.require_devices.requires(kind))
}

/// A device that is not here ([`Endpoint::absent`]): it is never opened,
/// registered or staged on, because its routes stop at the gate.
#[derive(Debug)]
pub(crate) struct AbsentDevice {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) reason: String,
    pub(crate) id: EngineId,
    pub(crate) class: StorageClass,
}

impl AbsentDevice {
    fn absent(&self) -> HarnessError {
        HarnessError::Unavailable {
            reason: format!("{}: {}", self.name, self.reason),
        }
    }
}

impl DeviceEndpoint for AbsentDevice {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            self.name.clone(),
            self.kind.clone(),
            self.id.clone(),
            self.class.clone(),
            PlacementRule::Host,
            StorageRule::PlainHost,
        )
    }

    fn registration(&self, _role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        Err(self.absent())
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Err(self.absent())
    }

    fn availability(&self) -> Availability {
        Availability::Unavailable {
            reason: self.reason.clone(),
        }
    }
}
