//! The harness's own device adapter: the host (tenferro-cpu). CUDA's lives
//! in [`crate::cuda`], behind its feature; the simulated devices' in their
//! own crate. Each is written the way a vendor writes theirs, through
//! [`crate::DeviceEndpoint`] only.

pub(crate) mod host;
