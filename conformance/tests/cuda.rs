//! The CUDA built-in providers: a real run where a GPU is usable, else a
//! visible skip that names the reason, and a failure where
//! `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1` demands CUDA.

use tenferro_tensor::DType;
use tenferro_transfer_conformance::cuda::{cuda_required, cuda_unavailable_reason};
use tenferro_transfer_conformance::harness::{Rule, announce_skip};
use tenferro_transfer_conformance::{
    CUDA_PROVIDERS, SuiteOptions, Verdict, builtin_provider, run_fixed_suite, selftest,
};

#[test]
fn cuda_suite_passes_or_every_row_is_a_skip_with_its_reason() {
    let report = run_fixed_suite(
        &CUDA_PROVIDERS,
        &SuiteOptions::quick(&[DType::F32, DType::C64]),
    );
    match cuda_unavailable_reason() {
        Some(reason) if cuda_required() => {
            panic!("TRANSFER_CONFORMANCE_REQUIRE_CUDA=1, but {reason}");
        }
        Some(reason) => {
            announce_skip(
                "cuda_suite_passes_or_every_row_is_a_skip_with_its_reason",
                &reason,
            );
            assert_eq!(report.summary().passed, 0);
            assert_eq!(report.summary().failed, 0);
            assert_eq!(report.summary().skipped, report.rows().len());
            assert!(report.rows().iter().all(|row| {
                row.verdict == Verdict::Skip
                    && row
                        .skip_reason
                        .as_deref()
                        .is_some_and(|why| why.contains(&reason))
            }));
        }
        None => {
            assert!(!report.failed(), "{}", report.to_table());
            assert!(report.summary().passed > 0);
            // Only views of CUDA memory (a known limit) are skipped.
            assert!(report.rows().iter().all(|row| {
                row.verdict != Verdict::Skip
                    || (row.route.starts_with("cuda") && row.layout.starts_with("view("))
            }));
        }
    }
}

#[test]
fn cuda_self_test_catches_the_early_return_or_reports_the_skip() {
    let report = selftest::run(&CUDA_PROVIDERS);
    match cuda_unavailable_reason() {
        Some(reason) if cuda_required() => {
            assert!(!report.passed(), "{}", report.to_table());
            panic!("TRANSFER_CONFORMANCE_REQUIRE_CUDA=1, but {reason}");
        }
        Some(reason) => {
            announce_skip(
                "cuda_self_test_catches_the_early_return_or_reports_the_skip",
                &reason,
            );
            assert_eq!(report.skipped.len(), CUDA_PROVIDERS.len());
            assert!(
                report
                    .to_table()
                    .contains("skipped (not run, never a pass): cuda-upload")
            );
            // Nothing ran: no row claims a catch or a clean run, and the
            // self-test does not pass.
            assert!(report.providers.is_empty(), "{}", report.to_table());
            assert!(!report.passed());
        }
        None => {
            assert!(report.passed(), "{}", report.to_table());
            let early = report
                .providers
                .iter()
                .find(|row| row.name == "cuda-early-return")
                .expect("the CUDA early-return broken provider ran");
            assert!(early.cases > 0);
            assert_eq!(early.caught_rules, vec![Rule::Completion]);
        }
    }
}

#[test]
fn cuda_providers_are_listed_even_without_a_gpu() {
    for name in ["cuda-upload", "cuda-download"] {
        let provider = builtin_provider(name).expect("listed");
        if let Err(error) = provider.route() {
            assert!(
                error.is_skip() || cuda_required(),
                "{name}: a missing GPU must be a skip: {error}"
            );
        }
    }
}
