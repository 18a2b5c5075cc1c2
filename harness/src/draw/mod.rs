//! Drawing cases, the top layer: the proptest strategies of
//! [`strategy`](crate::strategy), the declared capabilities they draw
//! within, the cases just outside them that capability honesty stages and
//! judges (`honesty`), and the `arbitrary` decoding of the fuzz targets.

#[cfg(feature = "arbitrary")]
pub(crate) mod arbitrary_impls;
pub(crate) mod capabilities;
pub(crate) mod honesty;
pub mod strategy;
