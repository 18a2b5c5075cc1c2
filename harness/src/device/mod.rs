//! The device adapter API, above the values: what the harness needs of a
//! device ([`DeviceEndpoint`](crate::DeviceEndpoint)) and what it answers
//! (description, completion, memory in use, allocation ledger, read-backs),
//! the routes between two devices, staging a case on one, and what a route
//! does when its device is absent. The host is the only device named here
//! (`host`); every other device's adapter lives in a crate above the
//! harness.

pub(crate) mod absent;
pub(crate) mod completion;
pub(crate) mod description;
pub(crate) mod device_error;
pub(crate) mod endpoint;
pub(crate) mod host;
pub(crate) mod ledger;
pub(crate) mod memory;
pub(crate) mod registration;
pub(crate) mod route;
pub(crate) mod side;
pub(crate) mod skip;
pub(crate) mod stage;
