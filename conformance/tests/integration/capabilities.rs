//! Capabilities that fit real providers: per route, view kinds,
//! maximum rank, elements and bytes. A provider written here from scratch,
//! as a vendor would (it knows nothing of the harness's `ViewKinds` or
//! `CapabilityGate`), refuses exactly what it declares it does not serve
//! and passes every rule; the same provider forgetting any one limit fails
//! `capability-honesty`, and only that rule, on the case just outside it.

use std::sync::Arc;

use rstest::rstest;
use tenferro_runtime::TransferRequest;
use tenferro_tensor::{Error, Tensor, TensorRead};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{BoxError, Verdict};

const DTYPES: [DType; 3] = [DType::F32, DType::F64, DType::I32];
const MAX_RANK: usize = 4;
const MAX_ELEMENTS: usize = 4096;
const MAX_BYTES: usize = 8192;

/// The limits a vendor's upload enforces, each of which it may forget.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Limit {
    DType,
    NegativeSteps,
    Permutations,
    Broadcasts,
    Rank,
    Bytes,
}

/// A vendor's upload: the simulated device's copy behind its own checks,
/// written from tenferro's `TensorRead` alone. It serves views with
/// offsets and gaps, never with negative steps, permuted axes or a
/// broadcast (a zero stride).
#[derive(Debug)]
struct VendorUpload {
    inner: SimUpload,
    forgets: Option<Limit>,
}

impl VendorUpload {
    fn refusal(&self, input: &TensorRead<'_>) -> Option<(Limit, String)> {
        let shape = input.shape();
        let count: usize = shape.iter().product();
        let width = match input.dtype() {
            DType::F32 | DType::I32 => 4,
            DType::F64 => 8,
            other => return Some((Limit::DType, format!("{other:?} is not served"))),
        };
        if shape.len() > MAX_RANK {
            return Some((Limit::Rank, format!("rank {} is not served", shape.len())));
        }
        if count * width > MAX_BYTES {
            return Some((
                Limit::Bytes,
                format!("{} bytes is too large", count * width),
            ));
        }
        if let TensorRead::View(view) = input {
            // Axes of extent one move nowhere; their strides do not matter.
            let moving: Vec<isize> = view
                .shape()
                .iter()
                .zip(view.strides())
                .filter(|(extent, _)| **extent > 1)
                .map(|(_, stride)| *stride)
                .collect();
            if count > 0 && moving.contains(&0) {
                return Some((Limit::Broadcasts, "zero strides".to_owned()));
            }
            if count > 0 && moving.iter().any(|stride| *stride < 0) {
                return Some((Limit::NegativeSteps, "negative strides".to_owned()));
            }
            if count > 0
                && moving
                    .windows(2)
                    .any(|pair| pair[0].unsigned_abs() >= pair[1].unsigned_abs())
            {
                return Some((Limit::Permutations, "permuted axes".to_owned()));
            }
        }
        None
    }
}

impl TransferProvider for VendorUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        match self.refusal(request.input()) {
            Some((limit, reason)) if Some(limit) != self.forgets => {
                Err(Error::unsupported("VendorUpload", reason).into())
            }
            _ => self.inner.transfer_blocking(request),
        }
    }
}

fn vendor(
    forgets: Option<Limit>,
) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        let Some(device) = route.destination().downcast::<SimDevice>() else {
            return Err("the vendor upload serves a simulated destination".into());
        };
        Ok(Arc::new(VendorUpload {
            inner: SimUpload::new(device.clone()),
            forgets,
        }))
    }
}

fn declared() -> Capabilities {
    Capabilities::all()
        .dtypes(DTYPES)
        .views([ViewKind::Offset, ViewKind::Gaps])
        .max_rank(MAX_RANK)
        .max_elements(MAX_ELEMENTS)
        .max_bytes(MAX_BYTES)
}

fn suite(forgets: Option<Limit>) -> ProviderSuite {
    ProviderSuite::new("vendor-upload", Level::V1)
        .route("upload", Route::host_to_sim, vendor(forgets))
        .capabilities(declared())
        .seed(19)
}

#[test]
fn an_honest_provider_passes_every_rule_with_a_case_outside_each_limit() {
    let suite = suite(None);
    let report = suite.run();
    for rule in Level::V1.rules() {
        let verdict = suite.check(&report, "upload", *rule);
        assert!(verdict.is_pass(), "{rule}: {verdict:?}");
    }
    let outside: Vec<&str> = report
        .rows()
        .iter()
        .filter_map(|row| {
            row.layout
                .split_once("[outside: ")
                .map(|(_, why)| why.trim_end_matches(']'))
        })
        .collect();
    // No elements case: 4,097 elements of any declared dtype exceed the
    // byte limit too, so none exceeds the element limit alone.
    assert_eq!(
        outside,
        [
            "dtype I64 is not declared",
            "dtype Bool is not declared",
            "dtype C32 is not declared",
            "dtype C64 is not declared",
            "views with negative steps are not declared",
            "views with permuted axes are not declared",
            "broadcast views (a zero step repeats an element) are not declared",
            "rank 5 exceeds the declared maximum of 4",
            "8200 bytes exceed the declared maximum of 8192",
        ]
    );
    // Every case inside was served: the generated and fixed ones stayed
    // inside the declaration (an undeclared view would be refused, failing
    // no-error).
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
}

#[rstest]
#[case::dtype(Limit::DType, "dtype")]
#[case::negative_steps(Limit::NegativeSteps, "views with negative steps are not declared")]
#[case::permutations(Limit::Permutations, "views with permuted axes are not declared")]
#[case::broadcasts(
    Limit::Broadcasts,
    "broadcast views (a zero step repeats an element) are not declared"
)]
#[case::rank(Limit::Rank, "rank 5 exceeds the declared maximum of 4")]
#[case::bytes(Limit::Bytes, "bytes exceed the declared maximum of 8192")]
fn forgetting_one_limit_fails_capability_honesty_and_only_it(
    #[case] limit: Limit,
    #[case] named: &str,
) {
    let suite = suite(Some(limit));
    let report = suite.run();
    for rule in Level::V1.rules() {
        let verdict = suite.check(&report, "upload", *rule);
        match (*rule, verdict) {
            (Rule::CapabilityHonesty, RuleVerdict::Fail(text)) => {
                assert!(text.contains(named), "{limit:?}: {text}");
            }
            (Rule::CapabilityHonesty, other) => panic!("{limit:?} served, and missed: {other:?}"),
            (rule, verdict) => assert!(verdict.is_pass(), "{limit:?} {rule}: {verdict:?}"),
        }
    }
}

#[test]
fn each_route_is_judged_by_its_own_capabilities() {
    // The same refusing provider on two routes: declared honestly on one,
    // and on the other as if it served every view.
    let suite = ProviderSuite::new("vendor-upload", Level::V1)
        .route("honest", Route::host_to_sim, vendor(None))
        .route("overclaimed", Route::host_to_sim, vendor(None))
        .capabilities(declared().views(ViewKinds::ALL))
        .capabilities_for("honest", declared())
        .seed(19);
    assert_eq!(suite.route_capabilities("honest"), Some(&declared()));
    let report = suite.run();
    assert!(suite.check(&report, "honest", Rule::NoError).is_pass());
    assert!(
        suite
            .check(&report, "honest", Rule::CapabilityHonesty)
            .is_pass()
    );
    // Declared to serve negative steps and permutations, it refuses them.
    let RuleVerdict::Fail(text) = suite.check(&report, "overclaimed", Rule::NoError) else {
        panic!("an overclaimed route passed no-error");
    };
    assert!(
        text.contains("negative strides") || text.contains("permuted axes"),
        "{text}"
    );
}

#[test]
fn capabilities_for_an_undeclared_route_fails_every_rule_naming_it() {
    let suite = ProviderSuite::new("vendor-upload", Level::V1)
        .route("upload", Route::host_to_sim, vendor(None))
        .capabilities_for("uplaod", declared());
    let report = suite.run();
    for rule in Level::V1.rules() {
        let RuleVerdict::Fail(text) = suite.check(&report, "upload", *rule) else {
            panic!("{rule} did not fail");
        };
        assert!(
            text.contains("capabilities_for names route `uplaod`"),
            "{text}"
        );
    }
    assert!(report.rows().iter().any(|row| row.verdict == Verdict::Fail));
}

#[test]
fn a_declaration_without_dtypes_is_a_failed_setup_not_a_panic() {
    let suite = ProviderSuite::new("vendor-upload", Level::V1)
        .route("upload", Route::host_to_sim, vendor(None))
        .capabilities(Capabilities::all().dtypes([]));
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("no dtype declared, and values did not fail");
    };
    assert!(text.contains("name no dtype"), "{text}");
}
