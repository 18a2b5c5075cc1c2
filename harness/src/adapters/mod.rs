//! The harness's own device adapter: the host (tenferro-cpu). Every other
//! device's lives in a crate of its own above the harness (the simulated
//! devices', the GPU adapters'). Each is written the way a vendor writes theirs, through
//! [`crate::DeviceEndpoint`] only.

pub(crate) mod host;
