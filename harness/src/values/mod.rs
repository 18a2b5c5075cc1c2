//! The lowest layer: what a case is and how its values are read. A
//! [`Case`](crate::Case) of one dtype, shape and layout, its elements and
//! their byte images, the special values drawn into it, and the first
//! difference between two images. Nothing here knows a device.

pub(crate) mod case;
pub(crate) mod compact;
pub(crate) mod compared;
pub(crate) mod element;
pub(crate) mod image_diff;
pub(crate) mod special_values;
