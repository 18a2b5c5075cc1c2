//! The built-in providers, declared as a vendor's crate declares its own
//! (`BuiltinProvider::suite`), keep every rule through the vendor's path:
//! the same runner, records and rule checks as `conformance_tests!`.

use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, Level, RuleVerdict};

#[test]
fn every_builtin_provider_passes_its_provider_suite_or_skips_with_the_reason() {
    for builtin in &BUILTIN_PROVIDERS {
        let suite = builtin.suite().seed(20);
        let route = builtin.name.replace('-', "_");
        let report = suite.run();
        assert_eq!(report.records().len(), report.rows().len());
        let mut passed = 0;
        for rule in Level::V1.rules() {
            match suite.check(&report, &route, *rule) {
                RuleVerdict::Pass { .. } => passed += 1,
                RuleVerdict::Skip(reason) => assert!(!reason.is_empty()),
                RuleVerdict::Fail(text) => panic!("{}: {rule} failed:\n{text}", builtin.name),
                other => panic!("{}: {rule}: {other:?}", builtin.name),
            }
        }
        // A route that ran passes most rules; an absent device (CUDA here)
        // skips every one, never passes one.
        let absent = report
            .records()
            .iter()
            .all(|record| record.outcome.verdict() == tenferro_transfer_conformance::Verdict::Skip);
        if absent {
            assert_eq!(passed, 0, "{}", builtin.name);
        } else {
            assert!(passed >= 9, "{}: only {passed} rules passed", builtin.name);
        }
    }
}
