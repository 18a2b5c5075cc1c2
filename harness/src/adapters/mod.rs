//! The built-in device adapters: host (tenferro-cpu) and simulated devices
//! (CUDA's lives in [`crate::cuda`], behind its feature). Each is written
//! the way a vendor writes theirs, through [`crate::DeviceEndpoint`] only.

pub(crate) mod host;
pub(crate) mod sim;
