//! Transfer providers: the correct references, and the deliberately broken
//! ones that show what each rule of the contract means.

mod broken;
mod hostile;
mod reference;
mod stateful;

pub use broken::{Broken, FORGED_FAMILY, Fault, wrong_dtype_of};
pub use reference::{SimDownload, SimPeer, SimUpload};
pub use stateful::{CachingAllocator, ContentCache};
