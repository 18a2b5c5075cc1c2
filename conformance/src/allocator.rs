//! The system allocator's policy for large blocks, settled once before a
//! generated run draws its first case.
//!
//! glibc, the allocator of a Rust program on Linux, serves a block above
//! its mmap threshold (128 KiB at first) by mapping it, and raises the
//! threshold to the size of each mapped block freed, up to 32 MiB. The
//! cases of a generated run come in every size, so each new largest one
//! was mapped afresh while the heaps kept the blocks of the earlier cases
//! resident: three images of the largest case at once instead of two
//! (`generated --profile deep` peaked at 4.0 times its largest case).
//! Raised once, to the largest case the run may draw, the threshold stays
//! put, and every case's blocks come from the heaps, which reuse them (a
//! view's backing larger than that is still mapped, as before).

use tenferro_transfer_harness::element_width;
use tenferro_transfer_harness::strategy::{Capabilities, Profile};

/// Past the largest case's bytes, room for a block's header and for the
/// allocator's rounding.
const SLACK: usize = 64 << 10;

/// glibc's largest mmap threshold: past it every block is mapped, and
/// nothing needs settling.
const LARGEST_THRESHOLD: usize = 32 << 20;

/// The bytes of the largest owned case a run of `profile` inside
/// `capabilities` may draw: its most elements of its widest dtype.
pub(crate) fn largest_case_bytes(profile: Profile, capabilities: &Capabilities) -> usize {
    let widest = capabilities
        .dtypes
        .iter()
        .filter_map(|dtype| element_width(*dtype))
        .max()
        .unwrap_or(1);
    profile
        .max_elements()
        .min(capabilities.max_elements)
        .saturating_mul(widest)
        .min(capabilities.max_bytes)
}

/// Allocate, and free untouched, one block a little larger than
/// `largest_case_bytes`, so that glibc's mmap threshold is the run's from
/// its first case (module docs). The block is never written, so it costs
/// no memory; under another allocator it is allocated and freed, and that
/// is all.
pub(crate) fn settle_large_blocks(largest_case_bytes: usize) {
    let block = largest_case_bytes
        .saturating_add(SLACK)
        .min(LARGEST_THRESHOLD);
    // `black_box`, so that the allocation is not optimised away.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(block)));
}

#[cfg(test)]
mod tests {
    use tenferro_tensor::DType;

    use super::*;

    #[test]
    fn the_largest_case_is_the_most_elements_of_the_widest_dtype_within_the_bytes() {
        assert_eq!(
            largest_case_bytes(Profile::Deep, &Capabilities::all()),
            16 << 20
        );
        let narrow = Capabilities::all().dtypes([DType::F32]).max_elements(8);
        assert_eq!(largest_case_bytes(Profile::Deep, &narrow), 32);
        let capped = Capabilities::all().max_bytes(1000);
        assert_eq!(largest_case_bytes(Profile::Quick, &capped), 1000);
        assert_eq!(
            largest_case_bytes(Profile::Quick, &Capabilities::all()),
            4096 * 16
        );
    }

    #[test]
    fn settling_never_asks_for_more_than_the_largest_threshold() {
        // Uncapped, this would ask for `usize::MAX` bytes and panic.
        settle_large_blocks(usize::MAX);
        settle_large_blocks(0);
    }
}
