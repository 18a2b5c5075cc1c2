//! Where each fault of the catalogue applies: predicates on a case and its
//! route that say whether a fault changes anything observable there.

use tenferro_mock_devices::{Element, SimDevice, compact_strides, strided_positions, with_element};
use tenferro_tensor::DType;
use tenferro_transfer_harness::{Case, Filler, Layout, PlacementRule, Route, StorageRule};

/// Every case on every route.
pub(in crate::selftest) fn always(_: &Case, _: &Route) -> bool {
    true
}

pub(super) fn device_destination(_: &Case, route: &Route) -> bool {
    matches!(
        route.destination().placement_rule(),
        PlacementRule::Device(_)
    )
}

pub(super) fn non_host_destination(_: &Case, route: &Route) -> bool {
    route.destination().placement_rule() != PlacementRule::Host
}

pub(super) fn domain_destination(_: &Case, route: &Route) -> bool {
    matches!(
        route.destination().storage_rule(),
        StorageRule::Domain { .. }
    )
}

fn is_simulated(endpoint: &tenferro_transfer_harness::Endpoint) -> bool {
    endpoint.downcast::<SimDevice>().is_some()
}

/// A route with a simulated device on either side.
pub(super) fn simulated_device(_: &Case, route: &Route) -> bool {
    is_simulated(route.source()) || is_simulated(route.destination())
}

/// Where the driver-thread leak lands: the destination's simulated memory,
/// else the source's simulated or managed memory (not plain host).
pub(super) fn driver_thread_lands(_: &Case, route: &Route) -> bool {
    is_simulated(route.destination())
        || matches!(route.source().storage_rule(), StorageRule::Domain { .. })
}

/// Inputs in simulated memory (a simulated device's, or a host domain's),
/// which the input-writing fault can reach; an empty one has no bytes.
pub(super) fn input_in_simulated_memory(case: &Case, route: &Route) -> bool {
    !case.is_empty() && matches!(route.source().storage_rule(), StorageRule::Domain { .. })
}

/// Outputs in a simulated device's memory, which the pool can hand out
/// again; an empty one has no bytes to change.
pub(super) fn output_in_simulated_memory(case: &Case, route: &Route) -> bool {
    !case.is_empty() && is_simulated(route.destination())
}

pub(super) fn non_empty(case: &Case, _: &Route) -> bool {
    !case.is_empty()
}

/// Cases with interior elements, which a twin changes (its first and last
/// stay): of a broadcast view, elements read from another backing element
/// than the first's and the last's.
pub(super) fn interior(case: &Case, _: &Route) -> bool {
    match case.layout() {
        Layout::View(spec) if spec.broadcasts() => {
            let positions = spec.positions();
            let (Some(first), Some(last)) = (positions.first(), positions.last()) else {
                return false;
            };
            positions
                .iter()
                .any(|position| position != first && position != last)
        }
        _ => case.len() >= 3,
    }
}

/// Cases whose seeded values differ between threads: a bool of a few
/// elements may draw the same values twice.
pub(super) fn distinct_concurrent_values(case: &Case, _: &Route) -> bool {
    case.len() >= 2 && (case.dtype() != DType::Bool || case.len() >= 16)
}

pub(super) fn asymmetric_shape(case: &Case, _: &Route) -> bool {
    case.shape().iter().rev().copied().collect::<Vec<_>>() != case.shape()
}

/// Every float image (complex parts separately) of the case, as bits.
fn float_parts(case: &Case) -> Vec<u64> {
    let part = match case.dtype() {
        DType::F32 | DType::C32 => 4,
        DType::F64 | DType::C64 => 8,
        _ => return Vec::new(),
    };
    case.values()
        .chunks_exact(part)
        .map(|chunk| {
            chunk
                .iter()
                .rev()
                .fold(0_u64, |bits, &byte| (bits << 8) | u64::from(byte))
        })
        .collect()
}

pub(super) fn has_payload_nan(case: &Case, _: &Route) -> bool {
    let (canonical, exponent, mantissa) = match case.dtype() {
        DType::F32 | DType::C32 => (
            u64::from(f32::NAN.to_bits()),
            0x7f80_0000_u64,
            0x007f_ffff_u64,
        ),
        DType::F64 | DType::C64 => (
            f64::NAN.to_bits(),
            0x7ff0_0000_0000_0000,
            0x000f_ffff_ffff_ffff,
        ),
        _ => return false,
    };
    float_parts(case)
        .into_iter()
        .any(|bits| bits & exponent == exponent && bits & mantissa != 0 && bits != canonical)
}

pub(super) fn has_negative_zero(case: &Case, _: &Route) -> bool {
    let negative_zero = match case.dtype() {
        DType::F32 | DType::C32 => 0x8000_0000,
        DType::F64 | DType::C64 => 0x8000_0000_0000_0000,
        _ => return false,
    };
    float_parts(case).contains(&negative_zero)
}

pub(super) fn has_two_distinct(case: &Case, _: &Route) -> bool {
    let Some(width) = tenferro_mock_devices::element_width(case.dtype()) else {
        return false;
    };
    let mut elements = case.values().chunks_exact(width);
    let first = elements.next();
    elements.any(|element| Some(element) != first)
}

fn misread_differs(case: &Case, ignore_strides: bool) -> bool {
    let Layout::View(spec) = case.layout() else {
        return false;
    };
    fn misread<T: Element + Filler>(
        case: &Case,
        spec: &tenferro_transfer_harness::ViewSpec,
        ignore_strides: bool,
    ) -> bool {
        let backing = case.backing_values::<T>();
        let correct = case.typed_values::<T>();
        let shape = case.shape();
        let (strides, offset) = if ignore_strides {
            (compact_strides(shape), spec.offset())
        } else {
            (spec.strides(), 0)
        };
        correct
            .iter()
            .zip(strided_positions(shape, &strides, offset))
            .any(|(value, position)| {
                let read = usize::try_from(position)
                    .ok()
                    .and_then(|p| backing.get(p))
                    .unwrap_or(value);
                let (mut want, mut got) = (Vec::new(), Vec::new());
                T::extend_bytes(std::slice::from_ref(value), &mut want);
                T::extend_bytes(std::slice::from_ref(read), &mut got);
                want != got
            })
    }
    with_element!(case.dtype(), T => misread::<T>(case, spec, ignore_strides), external => false)
}

/// Whether the second half of the case's elements (what a partial copy
/// leaves as poison) differs from the device's poison.
pub(super) fn suffix_differs_from_poison(case: &Case, _: &Route) -> bool {
    fn differs<T: Element>(case: &Case) -> bool {
        let values = case.typed_values::<T>();
        let (mut poison, mut suffix) = (Vec::new(), Vec::new());
        T::extend_bytes(&[T::POISON], &mut poison);
        T::extend_bytes(&values[values.len() / 2..], &mut suffix);
        suffix
            .chunks_exact(T::WIDTH)
            .any(|element| element != poison)
    }
    with_element!(case.dtype(), T => differs::<T>(case), external => false)
}

/// The few cases a hang is tried on: each costs a whole deadline.
pub(super) fn few_tiny_cases(case: &Case, _: &Route) -> bool {
    case.len() <= 1 && case.dtype() == DType::F64
}

pub(super) fn sim_endpoint(_: &Case, route: &Route) -> bool {
    [route.source(), route.destination()]
        .iter()
        .any(|endpoint| endpoint.downcast::<SimDevice>().is_some())
}

pub(super) fn sim_destination(case: &Case, route: &Route) -> bool {
    route.destination().downcast::<SimDevice>().is_some() && always(case, route)
}

pub(super) fn non_empty_sim_destination(case: &Case, route: &Route) -> bool {
    sim_destination(case, route) && non_empty(case, route)
}

pub(super) fn tiny_on_sim(case: &Case, route: &Route) -> bool {
    sim_endpoint(case, route) && few_tiny_cases(case, route)
}

pub(super) fn non_empty_on_sim(case: &Case, route: &Route) -> bool {
    sim_endpoint(case, route) && suffix_differs_from_poison(case, route)
}

pub(super) fn strides_matter(case: &Case, _: &Route) -> bool {
    misread_differs(case, true)
}

pub(super) fn offset_matters(case: &Case, _: &Route) -> bool {
    misread_differs(case, false)
}
