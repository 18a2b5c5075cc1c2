//! The device adapter itself (`support::VendorEndpoint`), tested directly:
//! what it tells the suite about allocations, memory in use, completion
//! and staged inputs. The suite's own verdicts are in `conformance.rs`
//! and `side_effects.rs`.

mod support;

use support::VendorEndpoint;
use tenferro_tensor::{DType, Tensor, TensorRead};
use tenferro_transfer_conformance::harness::{
    Case, CompletionState, DeviceEndpoint, Layout, MemoryInUse, ViewAxis, ViewSpec,
};

/// The adapter's ledger lists a device allocation, on the thread that made
/// it, for exactly as long as it lives.
#[test]
fn the_ledger_lists_each_allocation_until_it_is_freed() {
    let endpoint = VendorEndpoint::open(3).unwrap();
    let ledger = endpoint.allocation_ledger().unwrap();
    let me = std::thread::current().id();
    let tensor = endpoint
        .device
        .tensor(vec![2, 2], vec![1.0_f32; 4])
        .unwrap();
    assert_eq!(ledger.live_ids_of(me).len(), 1);
    assert_eq!(ledger.live_bytes(), 16);
    let elsewhere = std::thread::spawn(|| std::thread::current().id())
        .join()
        .unwrap();
    assert!(ledger.live_ids_of(elsewhere).is_empty());
    drop(tensor);
    assert!(ledger.live_allocations().is_empty());
    assert_eq!(endpoint.device.live_allocations(), 0);
}

/// The counts see every allocation and its bytes while it lives; a tensor
/// that shares an allocation (the engine's reshape) counts once; an
/// endpoint that only counts shows no ledger.
#[test]
fn the_counts_follow_allocations_not_tensors() {
    let endpoint = VendorEndpoint::counting_only(5).unwrap();
    assert!(endpoint.allocation_ledger().is_none());
    let empty = MemoryInUse::allocations(0).with_bytes(0);
    assert_eq!(endpoint.memory_in_use(), Some(empty));
    let tensor = endpoint.device.tensor(vec![3], vec![1_i64, 2, 3]).unwrap();
    let one = MemoryInUse::allocations(1).with_bytes(24);
    assert_eq!(endpoint.memory_in_use(), Some(one));
    let mut engine = endpoint.device.engine();
    let reshaped = tenferro_tensor::TensorStructural::reshape_read(
        &mut engine,
        TensorRead::from_tensor(&tensor),
        &[3, 1],
    )
    .unwrap();
    assert_eq!(endpoint.memory_in_use(), Some(one), "the reshape aliases");
    drop(tensor);
    assert_eq!(endpoint.memory_in_use(), Some(one), "the alias holds it");
    drop(reshaped);
    assert_eq!(endpoint.memory_in_use(), Some(empty));
}

/// A tensor dropped while the copy into it is queued is freed once the
/// copy is done; `settle` waits for that.
#[test]
fn settle_waits_for_the_frees_a_queued_copy_defers() {
    let endpoint = VendorEndpoint::open(6).unwrap();
    let (tensor, ticket) = endpoint
        .device
        .upload_async(vec![2], vec![1_i32, 2])
        .unwrap();
    drop(tensor);
    drop(ticket);
    assert_eq!(endpoint.device.live_allocations(), 1, "the copy holds it");
    endpoint.settle();
    assert_eq!(
        endpoint.memory_in_use(),
        Some(MemoryInUse::allocations(0).with_bytes(0))
    );
    assert!(
        endpoint
            .allocation_ledger()
            .unwrap()
            .live_allocations()
            .is_empty()
    );
}

/// The completion probe sees a queued copy as pending until it lands, and
/// the device refuses to map its memory meanwhile.
#[test]
fn the_completion_probe_sees_a_copy_in_flight() {
    let endpoint = VendorEndpoint::open(4).unwrap();
    let (tensor, ticket) = endpoint
        .device
        .upload_async(vec![3], vec![1_i32, 2, 3])
        .unwrap();
    assert!(matches!(
        endpoint.completion(&tensor),
        CompletionState::Pending { .. }
    ));
    let typed = tensor.as_typed::<i32>().unwrap();
    let tenferro_tensor::StorageBuffer::Backend(storage) = typed.buffer() else {
        panic!("device memory is backend storage");
    };
    assert_eq!(
        storage.map_read().unwrap_err(),
        tenferro_tensor::HostAccessError::GpuAccessInProgress
    );
    ticket.wait();
    assert_eq!(endpoint.completion(&tensor), CompletionState::Complete);
    assert_eq!(&*storage.map_read().unwrap(), &[1, 2, 3]);
    // A host tensor is not the device's: its completion is unknown.
    let host = Tensor::from_vec_col_major(vec![1], vec![1_i32]).unwrap();
    assert!(matches!(
        endpoint.completion(&host),
        CompletionState::Unknown { .. }
    ));
}

/// The adapter stages a case in device memory, owned or as a strided view
/// carved by tenferro, and the staged input is what the case says.
#[test]
fn staged_inputs_live_in_device_memory_with_the_cases_values() {
    let endpoint = VendorEndpoint::open(7).unwrap();
    let spec = ViewSpec {
        backing_shape: vec![5, 3],
        axes: vec![
            ViewAxis {
                first: 4,
                step: -2,
                len: 3,
            },
            ViewAxis {
                first: 1,
                step: 1,
                len: 2,
            },
        ],
        permutation: vec![1, 0],
    };
    for layout in [Layout::Owned, Layout::View(spec)] {
        let case = Case::patterned(DType::F64, vec![2, 3], layout).unwrap();
        let mut staged = None;
        endpoint
            .stage(&case, &mut |input| {
                let values = example_vendor_device::read_compact::<f64>(&input).unwrap();
                staged = Some((
                    endpoint.device.owns(&input),
                    matches!(input, TensorRead::View(_)),
                    values,
                ));
            })
            .unwrap();
        let (owned, view, values) = staged.unwrap();
        assert!(owned, "{case:?} is not in device memory");
        assert_eq!(view, matches!(case.layout(), Layout::View(_)));
        let bits = |values: Vec<f64>| values.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(values), bits(case.typed_values::<f64>()), "{case:?}");
    }
    assert_eq!(endpoint.device.live_allocations(), 0);
}
