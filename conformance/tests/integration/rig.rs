//! The rig against the real runtime: request metadata, bit-exact values,
//! caught failures, and reuse of prepared plans.

use std::sync::Arc;

use rstest::rstest;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_mock_devices::{SimDevice, SimDownload, SimPeer, SimRoutes, SimUpload};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::{Complex, DType};
use tenferro_transfer_harness::{
    Case, Compared, Endpoint, HostProvider, Layout, Oracle, ProviderResult, Rig, Route, Rule,
    RuntimeVerdict, ViewAxis, ViewSpec,
};

/// A route and its reference provider.
fn reference(route: Route) -> (Route, Arc<dyn TransferProvider>) {
    let sim = |endpoint: &Endpoint| endpoint.downcast::<SimDevice>().cloned();
    let provider: Arc<dyn TransferProvider> = match (sim(route.source()), sim(route.destination()))
    {
        (None, Some(device)) => Arc::new(SimUpload::new(device)),
        (Some(device), None) => Arc::new(SimDownload::new(device)),
        (Some(from), Some(to)) => Arc::new(SimPeer::new(from, to)),
        (None, None) => Arc::new(HostProvider::new()),
    };
    (route, provider)
}

fn routes() -> Vec<Route> {
    vec![
        Route::host_to_sim().unwrap(),
        Route::sim_to_host().unwrap(),
        Route::sim_to_sim().unwrap(),
        Route::host_to_host().unwrap(),
        Route::managed_to_host().unwrap(),
    ]
}

fn view_case() -> Case {
    let spec = ViewSpec {
        backing_shape: vec![6, 5],
        axes: vec![
            ViewAxis {
                first: 4,
                step: -2,
                len: 3,
            },
            ViewAxis {
                first: 1,
                step: 3,
                len: 2,
            },
        ],
        permutation: vec![],
    };
    Case::patterned(DType::F64, spec.shape(), Layout::View(spec)).unwrap()
}

#[rstest]
#[case::host_to_sim(0)]
#[case::sim_to_host(1)]
#[case::sim_to_sim(2)]
#[case::host_to_host(3)]
fn request_metadata_matches_the_route_and_the_snapshot(#[case] index: usize) {
    let (route, provider) = reference(routes().swap_remove(index));
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    let case = view_case();
    let outcome = rig.run(&case).unwrap();
    let request = &outcome.call().expect("exactly one provider call").request;

    assert_eq!(&request.source_engine_id, route.source().engine_id());
    assert_eq!(
        &request.destination_engine_id,
        route.destination().engine_id()
    );
    assert_eq!(
        request.source_storage_class,
        route.source().storage_class().unwrap()
    );
    assert_eq!(
        request.destination_storage_class,
        route.destination().storage_class().unwrap()
    );
    assert_ne!(
        request.source_provider_device_identity,
        request.destination_provider_device_identity
    );
    // The rig read these from `runtime.snapshot()?.engine(id)?.event_domain_id()`.
    assert_eq!(
        (
            request.source_event_domain_id,
            request.destination_event_domain_id
        ),
        rig.event_domains()
    );
    assert_eq!(outcome.snapshot_event_domains, rig.event_domains());
    assert_ne!(
        request.source_event_domain_id,
        request.destination_event_domain_id
    );

    let Layout::View(spec) = case.layout() else {
        unreachable!()
    };
    assert!(request.input_is_view);
    assert_eq!(request.input_dtype, DType::F64);
    assert_eq!(request.input_shape, case.shape());
    assert_eq!(request.input_strides, spec.strides());
    assert_eq!(request.input_offset, spec.offset());
    assert!(Oracle.judge(&case, &route, &outcome).passed());
}

fn specials(dtype: DType) -> Case {
    match dtype {
        DType::F32 => Case::from_values(
            vec![9],
            [
                0x7fc0_1234_u32,
                0x7fa0_0001,
                0x8000_0000,
                0x0000_0001,
                0x807f_ffff,
                0x7f80_0000,
                0xff80_0000,
                0x7f7f_ffff,
                0xff7f_ffff,
            ]
            .map(f32::from_bits)
            .to_vec(),
        ),
        DType::F64 => Case::from_values(
            vec![3, 3],
            [
                0x7ff8_0000_dead_beef_u64,
                0x7ff4_0000_0000_0001,
                0x8000_0000_0000_0000,
                0x0000_0000_0000_0001,
                0x800f_ffff_ffff_ffff,
                0x7ff0_0000_0000_0000,
                0xfff0_0000_0000_0000,
                0x7fef_ffff_ffff_ffff,
                0xffef_ffff_ffff_ffff,
            ]
            .map(f64::from_bits)
            .to_vec(),
        ),
        DType::I32 => Case::from_values(vec![4], vec![i32::MIN, i32::MAX, -1, 0]),
        DType::I64 => Case::from_values(vec![2, 2], vec![i64::MIN, i64::MAX, -1, 0]),
        DType::Bool => Case::from_values(vec![5], vec![false, true, true, false, true]),
        DType::C32 => Case::from_values(
            vec![3],
            vec![
                Complex::new(f32::from_bits(0x7fc0_0bad), -0.0),
                Complex::new(f32::from_bits(1), f32::INFINITY),
                Complex::new(-0.0, f32::from_bits(0x7fa0_0001)),
            ],
        ),
        DType::C64 => Case::from_values(
            vec![2],
            vec![
                Complex::new(f64::from_bits(0x7ff8_0000_0000_0bad), f64::from_bits(1)),
                Complex::new(-0.0, f64::NEG_INFINITY),
            ],
        ),
        _ => unreachable!(),
    }
    .unwrap()
}

#[rstest]
fn special_values_arrive_bit_exact(
    #[values(0, 1, 2, 3)] route: usize,
    #[values(
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::C32,
        DType::C64
    )]
    dtype: DType,
) {
    let (route, provider) = reference(routes().swap_remove(route));
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    let case = specials(dtype);
    let outcome = rig.run(&case).unwrap();
    let Some(ProviderResult::Returned(returned)) = outcome.call().map(|call| &call.result) else {
        panic!("the provider did not return: {outcome:?}");
    };
    // Compared with the case's values bit for bit as the Spy read them.
    assert_eq!(returned.bytes, Compared::Same, "provider output bits");
    let RuntimeVerdict::Accepted(output) = &outcome.runtime else {
        panic!(
            "the runtime rejected a reference transfer: {:?}",
            outcome.runtime
        );
    };
    assert_eq!(
        output.bytes,
        Compared::Same,
        "bits after the destination consumed them"
    );
    assert!(Oracle.judge(&case, &route, &outcome).passed());
}

#[test]
fn a_wrong_value_fails_the_case_with_a_precise_message() {
    let (route, provider) = reference(Route::host_to_sim().unwrap());
    let mut rig = Rig::new(
        route.clone(),
        Arc::new(Broken::new(provider, vec![Fault::OneUlp])),
    )
    .unwrap();
    let case = Case::from_values(vec![2, 2], vec![1.5_f32, 2.0, 3.0, 4.0]).unwrap();
    let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
    assert_eq!(judgement.rules(), vec![Rule::Values]);
    let message = &judgement.violations()[0].message;
    assert!(message.starts_with("1 of 4 elements differ; first at [0, 0] (element 0): expected 1.5 (0x3fc00000), actual 1.5000001 (0x3fc00001)"), "{message}");
}

#[test]
fn provider_errors_and_panics_are_outcomes_and_the_rig_stays_usable() {
    let (route, provider) = reference(Route::sim_to_sim().unwrap());
    let case = Case::patterned(DType::I32, vec![3], Layout::Owned).unwrap();

    let mut failing = Rig::new(
        route.clone(),
        Arc::new(Broken::new(Arc::clone(&provider), vec![Fault::ErrOnValid])),
    )
    .unwrap();
    let outcome = failing.run(&case).unwrap();
    assert!(
        matches!(&outcome.runtime, RuntimeVerdict::ProviderError { message, .. } if message.contains("injected failure"))
    );
    assert_eq!(
        Oracle.judge(&case, &route, &outcome).rules(),
        vec![Rule::NoError]
    );

    let mut panicking = Rig::new(
        route.clone(),
        Arc::new(Broken::new(provider, vec![Fault::Panic])),
    )
    .unwrap();
    for _ in 0..3 {
        let outcome = panicking.run(&case).unwrap();
        assert!(
            matches!(&outcome.runtime, RuntimeVerdict::ProviderPanicked { message } if message.contains("injected panic"))
        );
        assert_eq!(
            Oracle.judge(&case, &route, &outcome).rules(),
            vec![Rule::NoPanic]
        );
    }
}

/// One plan per dtype, rank and layout kind: the rig's program is
/// shape-generic, so cases of other shapes reuse it, each through its own
/// provider call.
#[test]
fn prepared_plans_are_reused_per_dtype_rank_and_layout_kind() {
    let (route, provider) = reference(Route::host_to_sim().unwrap());
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    let view = ViewSpec {
        backing_shape: vec![6],
        axes: vec![ViewAxis {
            first: 1,
            step: 2,
            len: 3,
        }],
        permutation: vec![],
    };
    for (shape, layout, plans) in [
        (vec![4], Layout::Owned, 1),
        (vec![4], Layout::Owned, 1),
        (vec![5], Layout::Owned, 1),
        (vec![0], Layout::Owned, 1),
        (vec![2, 3], Layout::Owned, 2),
        (vec![3], Layout::View(view), 3),
    ] {
        let case = Case::patterned(DType::F32, shape.clone(), layout).unwrap();
        let outcome = rig.run(&case).unwrap();
        assert_eq!(outcome.calls.len(), 1, "{shape:?}");
        assert!(Oracle.judge(&case, &route, &outcome).passed(), "{shape:?}");
        assert_eq!(rig.prepared_count(), plans, "{shape:?}");
    }
    rig.run(&Case::patterned(DType::F64, vec![4], Layout::Owned).unwrap())
        .unwrap();
    assert_eq!(rig.prepared_count(), 4);
}

/// The rig keeps at most 256 plans; past that the one used least
/// recently makes room, and the rest stay (a full cache was emptied, and
/// every signature in use was prepared again).
#[test]
fn a_full_plan_cache_makes_room_one_plan_at_a_time() {
    let route = Route::host_to_host().unwrap();
    let mut rig = Rig::new(
        route.clone(),
        Arc::new(tenferro_transfer_harness::HostProvider::new()),
    )
    .unwrap();
    let kinds: Vec<(DType, Vec<usize>)> = [DType::F32, DType::F64, DType::I32, DType::I64]
        .into_iter()
        .flat_map(|dtype| {
            [vec![], vec![2], vec![2, 1], vec![1, 2, 1]]
                .into_iter()
                .map(move |shape| (dtype, shape))
        })
        .collect();
    let mut runs = 0;
    'all: for first in &kinds {
        for second in &kinds {
            for third in &kinds[..2] {
                let cases: Vec<Case> = [first, second, third]
                    .iter()
                    .map(|(dtype, shape)| {
                        Case::patterned(*dtype, shape.clone(), Layout::Owned).unwrap()
                    })
                    .collect();
                let outcomes = rig.run_together(&cases).unwrap();
                assert_eq!(outcomes.len(), 3);
                runs += 1;
                if runs == 300 {
                    break 'all;
                }
            }
        }
    }
    assert_eq!(rig.prepared_count(), 256);
}

#[test]
fn an_outcome_without_exactly_one_provider_call_is_reported_not_passed() {
    let (route, provider) = reference(Route::host_to_sim().unwrap());
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    let case = Case::patterned(DType::F64, vec![2], Layout::Owned).unwrap();
    let mut outcome = rig.run(&case).unwrap();
    let call = outcome.calls[0].clone();
    for calls in [vec![], vec![call.clone(), call]] {
        outcome.calls = calls;
        let judgement = Oracle.judge(&case, &route, &outcome);
        assert_eq!(
            judgement.rules(),
            vec![Rule::RuntimeAgreement],
            "{judgement:?}"
        );
    }
}

/// Host to a fresh simulated device whose layout kernels alias or copy.
fn host_to_sim_with(kernels: tenferro_mock_devices::Kernels) -> (Route, SimDevice) {
    let device = SimDevice::new(0).unwrap();
    device.set_kernels(kernels);
    let route = Route::new(
        Endpoint::host("host").unwrap(),
        Endpoint::new(device.clone()),
    )
    .unwrap();
    (route, device)
}

/// Two inputs of one size in one run: each passes on its own; a pool that
/// hands out the allocation the runtime still holds for the first fails
/// `output-stable` on the second, on a device whose kernels alias and on
/// one whose kernels copy (where only the runtime holds the provider's
/// output), and on no other rule.
#[rstest]
fn a_run_of_two_inputs_holds_the_first_output_while_the_second_moves(
    #[values(
        tenferro_mock_devices::Kernels::Aliasing,
        tenferro_mock_devices::Kernels::Copying
    )]
    kernels: tenferro_mock_devices::Kernels,
) {
    let cases = [
        Case::patterned(DType::F32, vec![5, 3], Layout::Owned).unwrap(),
        Case::from_values(vec![5, 3], (0..15).map(|i| i as f32 * -1.5).collect()).unwrap(),
    ];
    let (route, device) = host_to_sim_with(kernels);
    let mut rig = Rig::new(route.clone(), Arc::new(SimUpload::new(device.clone()))).unwrap();
    let outcomes = rig.run_together(&cases).unwrap();
    assert_eq!(outcomes.len(), 2);
    for (case, outcome) in cases.iter().zip(&outcomes) {
        let judgement = Oracle.judge(case, &route, outcome);
        assert!(judgement.passed(), "{judgement:?}");
        assert_eq!(outcome.calls.len(), 1);
    }
    assert!(
        Oracle
            .judge(&cases[1], &route, &outcomes[1])
            .was_checked(Rule::OutputStable)
    );
    let (route, device) = host_to_sim_with(kernels);
    let pool = Broken::new(
        Arc::new(SimUpload::new(device)),
        vec![Fault::ReusesLiveOutput],
    );
    let mut rig = Rig::new(route.clone(), Arc::new(pool)).unwrap();
    let outcomes = rig.run_together(&cases).unwrap();
    let first = Oracle.judge(&cases[0], &route, &outcomes[0]);
    let second = Oracle.judge(&cases[1], &route, &outcomes[1]);
    assert!(first.passed(), "{first:?}");
    assert_eq!(
        second.rules(),
        vec![Rule::OutputStable],
        "{second:?}\n{:?}",
        outcomes[1].trace
    );
    eprintln!("{}", second.violations()[0].message);
}
