//! What a transfer does besides its output, seen at the device level: the
//! simulated engine's reshape keeps the transfer's allocation (it aliases),
//! and each side-effect fault of `Broken` (writes-input, reuses-live-output,
//! leaks-every-fifth, leaks-on-driver-thread) does what it says and leaves
//! the output right. Every transfer runs through a real tenferro `Runtime`:
//! only the runtime can make a `TransferRequest`.

use std::sync::Arc;

use tenferro_cpu::CpuEngine;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_mock_devices::{
    Element, EngineRole, SimDevice, SimDownload, SimEngine, SimPeer, read_compact, sim_storage_of,
};
use tenferro_runtime::{
    EngineId, EngineRegistration, ExecutionEngine, GraphCompiler, Runtime, StorageClass,
    TracedTensor, TransferEndpoint, TransferProvider,
};
use tenferro_tensor::{Tensor, TensorRead};

/// A runtime whose only plan for `x.reshape(shape)` is: `x` enters on a
/// simulated source device, the provider moves it, the reshape runs on the
/// destination.
struct Route {
    runtime: Runtime,
    source: SimEngine,
    destination: Box<dyn ExecutionEngine>,
}

impl Route {
    fn new(
        source: &SimDevice,
        destination: (
            EngineRegistration,
            TransferEndpoint,
            Box<dyn ExecutionEngine>,
        ),
        provider: Arc<dyn TransferProvider>,
    ) -> Self {
        let (registration, endpoint, engine) = destination;
        let mut builder = Runtime::builder();
        builder
            .register_engine(source.registration(EngineRole::Source).unwrap())
            .unwrap();
        builder.register_engine(registration).unwrap();
        builder
            .register_transfer_provider(source.endpoint(), endpoint, provider)
            .unwrap();
        Self {
            runtime: builder.build().unwrap(),
            source: source.engine(),
            destination: engine,
        }
    }

    /// Simulated device to simulated device.
    fn sim_to_sim(
        source: &SimDevice,
        destination: &SimDevice,
        provider: Arc<dyn TransferProvider>,
    ) -> Self {
        let registration = destination.registration(EngineRole::Destination).unwrap();
        let engine = Box::new(destination.engine());
        Self::new(
            source,
            (registration, destination.endpoint(), engine),
            provider,
        )
    }

    /// Simulated device to plain host memory (a tenferro-cpu engine).
    fn sim_to_host(source: &SimDevice, provider: Arc<dyn TransferProvider>) -> Self {
        let id = EngineId::new("tests.side-effects.host.v1").unwrap();
        let engine = CpuEngine::serial().with_runtime_engine_id(id.clone());
        let registration =
            tenferro_cpu::runtime_engine_registration_with_id(&engine, id.clone()).unwrap();
        let storage = StorageClass::new("tenferro-cpu.host.v1").unwrap();
        Self::new(
            source,
            (
                registration,
                TransferEndpoint::new(id, storage),
                Box::new(engine),
            ),
            provider,
        )
    }

    /// Run `x.reshape(shape)` on `input`: the runtime's output.
    fn transfer(&mut self, input: &Tensor) -> tenferro_runtime::Result<Tensor> {
        let (dtype, shape) = (input.dtype(), input.shape().to_vec());
        let x = TracedTensor::input_concrete_shape(dtype, &shape)?;
        let y = x.reshape(shape.clone())?;
        let program = GraphCompiler::new().compile_with_input_specs(&y, &[(&x, dtype, &shape)])?;
        let read = TensorRead::from_tensor(input);
        let inputs = std::slice::from_ref(&read);
        let prepared = self.runtime.prepare(
            &program,
            inputs,
            &[self.source.target(), self.destination.target()],
        )?;
        let mut engines: [&mut dyn ExecutionEngine; 2] =
            [&mut self.source, self.destination.as_mut()];
        let output = self.runtime.run(&mut engines, &prepared, inputs)?.remove(0);
        Ok(output
            .into_owned()
            .expect("a reshape on the destination is owned"))
    }
}

fn values(tensor: &Tensor) -> Vec<i64> {
    read_compact::<i64>(&TensorRead::from_tensor(tensor)).unwrap()
}

fn broken(inner: impl TransferProvider, fault: Fault) -> Arc<dyn TransferProvider> {
    Arc::new(Broken::new(Arc::new(inner), vec![fault]))
}

fn devices() -> (SimDevice, SimDevice) {
    (SimDevice::new(0).unwrap(), SimDevice::new(1).unwrap())
}

#[test]
fn the_engine_reshape_keeps_the_transfers_allocation() {
    let (a, b) = devices();
    let mut route = Route::sim_to_sim(&a, &b, Arc::new(SimPeer::new(a.clone(), b.clone())));
    let input = a.tensor(vec![2, 2], vec![1_i64, 2, 3, 4]).unwrap();
    let output = route.transfer(&input).unwrap();
    assert_eq!(values(&output), vec![1, 2, 3, 4]);
    // One allocation on the destination ever: the provider's, which the
    // runtime's output still holds (a reshape that copied made two).
    assert_eq!(b.ledger().total(), 1);
    assert_eq!(b.memory_in_use(), (1, 32));
    drop(output);
    assert_eq!(b.memory_in_use(), (0, 0));
}

#[test]
fn a_transfer_that_returns_before_its_copy_still_fails_at_the_engine() {
    let (a, b) = devices();
    let provider = broken(SimPeer::new(a.clone(), b.clone()), Fault::EarlyReturn);
    let mut route = Route::sim_to_sim(&a, &b, provider);
    let input = a.tensor(vec![3], vec![1_i64, 2, 3]).unwrap();
    let error = route.transfer(&input).unwrap_err();
    assert!(
        format!("{error:?}").contains("GpuAccessInProgress"),
        "{error:?}"
    );
    drop(route);
    b.release_all();
    assert_eq!(b.ledger().live(), 0);
}

#[test]
fn writes_input_overwrites_a_simulated_input_and_keeps_the_output_right() {
    let (a, b) = devices();
    let original = [1.5_f64, -0.0, f64::from_bits(0x7ff8_0000_0000_0bad)];
    let bits = |values: &[f64]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    for (name, mut route) in [
        (
            "sim to sim",
            Route::sim_to_sim(
                &a,
                &b,
                broken(SimPeer::new(a.clone(), b.clone()), Fault::WritesInput),
            ),
        ),
        (
            "sim to host",
            Route::sim_to_host(&a, broken(SimDownload::new(a.clone()), Fault::WritesInput)),
        ),
    ] {
        let input = a.tensor(vec![3], original.to_vec()).unwrap();
        let output = route.transfer(&input).unwrap();
        let read = |tensor: &Tensor| read_compact::<f64>(&TensorRead::from_tensor(tensor)).unwrap();
        assert_eq!(bits(&read(&output)), bits(&original), "{name}: output");
        let after = read(&input);
        for (before, now) in original.iter().zip(&after) {
            assert_ne!(
                before.to_bits(),
                now.to_bits(),
                "{name}: input element kept"
            );
        }
        assert_eq!(after[0].to_bits(), f64::POISON.to_bits(), "{name}");
    }
    // The correct provider leaves its input as it was.
    let mut route = Route::sim_to_sim(&a, &b, Arc::new(SimPeer::new(a.clone(), b.clone())));
    let input = a.tensor(vec![3], original.to_vec()).unwrap();
    route.transfer(&input).unwrap();
    let after = read_compact::<f64>(&TensorRead::from_tensor(&input)).unwrap();
    assert_eq!(bits(&after), bits(&original));
}

#[test]
fn writes_input_changes_an_input_that_already_holds_the_poison() {
    let (a, b) = devices();
    let provider = broken(SimPeer::new(a.clone(), b.clone()), Fault::WritesInput);
    let mut route = Route::sim_to_sim(&a, &b, provider);
    let input = a.tensor(vec![2], vec![i64::POISON, 7]).unwrap();
    route.transfer(&input).unwrap();
    assert_eq!(values(&input), vec![0, i64::POISON]);
}

#[test]
fn reuses_live_output_changes_an_earlier_output_still_held() {
    let (a, b) = devices();
    let provider = broken(SimPeer::new(a.clone(), b.clone()), Fault::ReusesLiveOutput);
    let mut route = Route::sim_to_sim(&a, &b, provider);
    let first = route
        .transfer(&a.tensor(vec![3], vec![1_i64, 2, 3]).unwrap())
        .unwrap();
    assert_eq!(values(&first), vec![1, 2, 3]);
    // Same dtype and element count, another shape: the pool hands out the
    // allocation `first` still holds.
    let second = route
        .transfer(&a.tensor(vec![3, 1], vec![7_i64, 8, 9]).unwrap())
        .unwrap();
    assert_eq!(values(&second), vec![7, 8, 9]);
    assert_eq!(second.shape(), &[3, 1]);
    assert_eq!(values(&first), vec![7, 8, 9], "the earlier output changed");
    let (first_storage, second_storage) = (
        sim_storage_of::<i64>(&first).unwrap(),
        sim_storage_of::<i64>(&second).unwrap(),
    );
    assert!(first_storage.same_allocation(second_storage));
    assert_eq!(b.ledger().live(), 1);
    // Another size is another slot: untouched.
    let other = route
        .transfer(&a.tensor(vec![2], vec![5_i64, 6]).unwrap())
        .unwrap();
    assert_eq!(values(&other), vec![5, 6]);
    assert_eq!(values(&first), vec![7, 8, 9]);
    drop((first, second, other));
    assert_eq!(b.ledger().live(), 0);
}

#[test]
fn reuses_live_output_takes_a_fresh_allocation_once_the_earlier_one_dropped() {
    let (a, b) = devices();
    let provider = broken(SimPeer::new(a.clone(), b.clone()), Fault::ReusesLiveOutput);
    let mut route = Route::sim_to_sim(&a, &b, provider);
    let first = route
        .transfer(&a.tensor(vec![2], vec![1_i64, 2]).unwrap())
        .unwrap();
    let first_id = sim_storage_of::<i64>(&first).unwrap().id();
    drop(first);
    let second = route
        .transfer(&a.tensor(vec![2], vec![3_i64, 4]).unwrap())
        .unwrap();
    assert_eq!(values(&second), vec![3, 4]);
    assert_ne!(sim_storage_of::<i64>(&second).unwrap().id(), first_id);
    // The correct provider never shares: the earlier output keeps its values.
    let mut route = Route::sim_to_sim(&a, &b, Arc::new(SimPeer::new(a.clone(), b.clone())));
    let held = route
        .transfer(&a.tensor(vec![2], vec![1_i64, 2]).unwrap())
        .unwrap();
    route
        .transfer(&a.tensor(vec![2], vec![3_i64, 4]).unwrap())
        .unwrap();
    assert_eq!(values(&held), vec![1, 2]);
}

#[test]
fn leaks_every_fifth_keeps_one_allocation_in_five() {
    let (a, b) = devices();
    let provider = broken(SimPeer::new(a.clone(), b.clone()), Fault::LeaksEveryFifth);
    let mut route = Route::sim_to_sim(&a, &b, provider);
    for round in 1..=10_i64 {
        let output = route
            .transfer(&a.tensor(vec![2], vec![round, -round]).unwrap())
            .unwrap();
        assert_eq!(values(&output), vec![round, -round]);
        drop(output);
        let leaked = usize::try_from(round / 5).unwrap();
        assert_eq!(b.memory_in_use(), (leaked, 16 * leaked), "after {round}");
    }
    assert_eq!(a.ledger().live(), 0);
}

#[test]
fn leaks_on_driver_thread_allocates_on_another_thread() {
    let (a, b) = devices();
    let me = std::thread::current().id();
    let provider = broken(
        SimPeer::new(a.clone(), b.clone()),
        Fault::LeaksOnDriverThread,
    );
    let mut route = Route::sim_to_sim(&a, &b, provider);
    let output = route
        .transfer(&a.tensor(vec![2], vec![1_i64, 2]).unwrap())
        .unwrap();
    assert_eq!(values(&output), vec![1, 2]);
    drop(output);
    let live = b.ledger().live_allocations();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].bytes, 64);
    assert_ne!(live[0].thread, me);
    assert!(b.ledger().live_ids_of(me).is_empty());
    // With a plain host destination, the source device gets the buffer.
    let provider = broken(SimDownload::new(a.clone()), Fault::LeaksOnDriverThread);
    let mut route = Route::sim_to_host(&a, provider);
    let output = route
        .transfer(&a.tensor(vec![2], vec![1_i64, 2]).unwrap())
        .unwrap();
    assert_eq!(values(&output), vec![1, 2]);
    drop(output);
    let live = a.ledger().live_allocations();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_ne!(live[0].thread, me);
}
