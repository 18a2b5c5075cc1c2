//! Running a case, above the devices: the [`Rig`](crate::Rig) that moves a
//! staged case through the real `Runtime`, the [`Spy`](crate::Spy) around
//! the provider, what a transfer did besides its output (`effects`), the
//! [`Outcome`](crate::Outcome) that records it all, the memory accounting
//! of `no-leak`, and the [`Watchdog`](crate::Watchdog) that runs a case on
//! a worker under a deadline (parking calls that hang, `hold`).

pub(crate) mod accounting;
pub(crate) mod effects;
pub mod hold;
pub(crate) mod outcome;
pub(crate) mod rig;
pub(crate) mod spy;
pub mod trace;
pub(crate) mod watchdog;
