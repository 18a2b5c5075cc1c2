//! An upload that compresses what it sends, as one over a link or into
//! compressed memory does: runs of one element go as (count, element).
//! Two encoders written as a reviewer misses them: one that compares
//! elements as numbers (`-0.0 == 0.0`, so a zero's sign follows the run it
//! joins) and one that counts a run in a `u16` (a run of 65,537 elements
//! wraps to one). No fixed or generated case holds two adjacent elements
//! alike: the pattern and the seeded values change every element. The
//! `runs` case ([`Case::runs`]) holds runs up to 65,537 elements long, each
//! differing from the one before in bits but maybe not as a number, and
//! both encoders fail on it and only on it: the first `values`, the second
//! `no-error` (it delivers too few elements, and its own count check
//! refuses them). The faithful encoder passes every rule (blind probe 13's
//! M2 and M3, which every seed missed).

use std::sync::Arc;

use tenferro_tensor::Error;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::strategy::Capabilities;
use tenferro_transfer_conformance::harness::{
    Element, PRESET_DTYPES, RUNS_ELEMENTS, element_width,
};
use tenferro_transfer_conformance::{BoxError, Verdict};

use crate::support::blocks::copy_onto;
use crate::support::verdicts::no_rule_fails;

/// How the encoder finds and counts its runs.
#[derive(Clone, Copy, Debug)]
enum Encoder {
    /// Elements alike in every bit; counts as wide as a `usize`.
    Faithful,
    /// Elements equal as numbers (`==` on the float), so a run of `0.0`
    /// takes in the `-0.0` after it.
    EqualAsNumbers,
    /// A run's count kept in a `u16`: 65,536 wraps to 0.
    SixteenBitCounts,
}

/// Run-length encode `values` and decode them again, as the link's two
/// ends would.
fn through_the_link<T: Copy + PartialEq + Element>(values: &[T], encoder: Encoder) -> Vec<T> {
    let alike = |a: &T, b: &T| match encoder {
        Encoder::EqualAsNumbers => a == b,
        _ => bytes_of(a) == bytes_of(b),
    };
    let mut runs: Vec<(usize, T)> = Vec::new();
    for value in values {
        match runs.last_mut() {
            Some((count, first)) if alike(first, value) => *count += 1,
            _ => runs.push((1, *value)),
        }
    }
    runs.into_iter()
        .flat_map(|(count, value)| {
            let sent = match encoder {
                Encoder::SixteenBitCounts => usize::from(count as u16),
                _ => count,
            };
            std::iter::repeat_n(value, sent)
        })
        .collect()
}

fn bytes_of<T: Element>(value: &T) -> Vec<u8> {
    let mut bytes = Vec::new();
    T::extend_bytes(std::slice::from_ref(value), &mut bytes);
    bytes
}

/// Host to `sim0`, through the link.
#[derive(Debug)]
struct CompressingUpload {
    device: SimDevice,
    encoder: Encoder,
}

impl TransferProvider for CompressingUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "CompressingUpload::transfer_blocking";
        let input = request.input();
        with_element!(input.dtype(), T => {
            let values = through_the_link(&read_compact::<T>(input)?, self.encoder);
            if values.len() != input.shape().iter().product::<usize>() {
                return Err(Error::runtime_state(OP, "the link delivered the wrong count").into());
            }
            copy_onto(&self.device, input.shape().to_vec(), values, true, OP)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

fn upload(encoder: Encoder) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        let device = route
            .destination()
            .downcast::<SimDevice>()
            .ok_or("a simulated destination")?;
        Ok(Arc::new(CompressingUpload {
            device: device.clone(),
            encoder,
        }))
    }
}

#[test]
fn run_length_encoders_that_merge_zeros_or_wrap_their_counts_fail_values() {
    let suite = ProviderSuite::new("run-length", Level::V2)
        .route("faithful", Route::host_to_sim, upload(Encoder::Faithful))
        .route(
            "as_numbers",
            Route::host_to_sim,
            upload(Encoder::EqualAsNumbers),
        )
        .route(
            "u16_counts",
            Route::host_to_sim,
            upload(Encoder::SixteenBitCounts),
        )
        .profile(Profile::Quick)
        .seed(1);
    let report = suite.run();
    no_rule_fails(&suite, &report, "faithful", Level::V2.rules());
    for route in ["as_numbers", "u16_counts"] {
        let failing: Vec<_> = report
            .rows()
            .iter()
            .filter(|row| row.route.starts_with(&format!("{route} (")))
            .filter(|row| row.verdict == Verdict::Fail)
            .collect();
        // Only the runs case holds a run: every other case passes.
        assert!(
            !failing.is_empty() && failing.iter().all(|row| row.shape == [RUNS_ELEMENTS]),
            "{route}: {}",
            report.to_table()
        );
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "as_numbers", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("expected -0.0"), "{text}");
    // The u16 counts lose elements: the provider's own check refuses.
    assert!(matches!(
        suite.check(&report, "u16_counts", Rule::NoError),
        RuleVerdict::Fail(_)
    ));
}

/// A declared byte limit below the runs case's size cuts the case to fit,
/// for each dtype by its width: the case is moved, not dropped as a case
/// outside the declaration, and still fails the encoder that merges zeros.
#[test]
fn a_byte_limit_cuts_the_runs_case_to_fit() {
    const MAX_BYTES: usize = 1 << 16;
    let suite = ProviderSuite::new("run-length", Level::V2)
        .route(
            "as_numbers",
            Route::host_to_sim,
            upload(Encoder::EqualAsNumbers),
        )
        .capabilities(Capabilities::all().max_bytes(MAX_BYTES))
        .profile(Profile::Quick)
        .seed(1);
    let report = suite.run();
    for dtype in PRESET_DTYPES {
        let cut = MAX_BYTES / element_width(dtype).unwrap();
        assert!(
            report
                .rows()
                .iter()
                .any(|row| row.dtype == format!("{dtype:?}") && row.shape == [cut]),
            "no runs case of {cut} {dtype:?} elements:\n{}",
            report.to_table()
        );
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "as_numbers", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("expected -0.0"), "{text}");
}
