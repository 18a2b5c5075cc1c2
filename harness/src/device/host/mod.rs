//! The host, the one device the harness names: its adapter (tenferro-cpu
//! memory, written the way a vendor writes theirs, through
//! [`DeviceEndpoint`](crate::DeviceEndpoint) only) and the real
//! host-to-host provider, [`HostProvider`](crate::HostProvider).

pub(crate) mod adapter;
pub(crate) mod provider;
