//! The lowest layer: what a case is and how its values are read. A
//! [`Case`](crate::Case) of one dtype, shape and layout, its elements and
//! their byte images (held, or made from a seed where a large generated
//! case is compared), the special values drawn into it, and the first
//! difference between two images. Nothing here knows a device.

pub(crate) mod case;
pub(crate) mod compact;
pub(crate) mod compared;
pub(crate) mod element;
pub(crate) mod equal_as_numbers;
pub(crate) mod generated;
pub(crate) mod image_diff;
pub(crate) mod layout;
pub(crate) mod patterns;
pub(crate) mod runs;
pub(crate) mod special_values;
