//! `conformance_tests!`: one `#[test]` per rule and route, expanded in the
//! provider crate, so that `cargo test <rule>` and nextest filter and report
//! rule by rule, and snapshots or regression files land in that crate.

/// Expands into one `#[test]` per rule of the level and per declared route.
///
/// `suite` names a function (or path) returning the
/// [`ProviderSuite`](crate::ProviderSuite); `routes` lists the names given
/// to [`ProviderSuite::route`](crate::ProviderSuite::route). Each route
/// becomes a module holding one test per rule of the level, e.g.
/// `upload::values` and `upload::capability_honesty`. The suite runs once
/// per test binary, under `cargo test` and under nextest (which runs each
/// test in a process of its own: the first runs the suite, the others read
/// its report; see [`ProviderSuite::shared_run`](crate::ProviderSuite::shared_run));
/// every test reads its own rule's verdict from that run.
///
/// A failing test names the rule, each failing case and how to replay it.
/// A rule that could not be checked on any case of the route prints
/// `<route>::<test> skipped: <reason>` to stderr (past the test harness's
/// capture) and reports ok, because the libtest harness has no runtime
/// skip; `TRANSFER_CONFORMANCE_NO_SKIP=1` turns skips into failures.
///
/// The level is spelled in the invocation (`level = V1`) so that the set of
/// tests is fixed by the caller's source, not by the suite's version.
///
/// # Examples
///
/// In `tests/conformance.rs` of a provider crate:
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_conformance::prelude::*;
///
/// fn suite() -> ProviderSuite {
///     ProviderSuite::new("sim-upload", Level::V1).route("upload", Route::host_to_sim, |route| {
///         let Some(device) = route.destination().downcast::<SimDevice>() else {
///             return Err("upload serves a simulated destination".into());
///         };
///         Ok(Arc::new(SimUpload::new(device.clone())) as Arc<dyn TransferProvider>)
///     })
/// }
///
/// tenferro_transfer_conformance::conformance_tests!(level = V1, suite = suite, routes = [upload]);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! conformance_tests {
    (level = V1, suite = $suite:path, routes = [$($route:ident),+ $(,)?] $(,)?) => {
        $crate::__level_rules!(V1 [$crate::__conformance_tests] { $suite, V1, [$($route),+], });
    };
    (level = V2, suite = $suite:path, routes = [$($route:ident),+ $(,)?] $(,)?) => {
        $crate::__level_rules!(V2 [$crate::__conformance_tests] { $suite, V2, [$($route),+], });
    };
}

/// The expansion of [`conformance_tests!`] for one level's rule list
/// (filtered from the rule catalogue by `__level_rules!`, as
/// [`Level::rules`](crate::Level::rules) is; the level test checks that the
/// two agree); an implementation detail.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($suite:path, $level:ident, [$($route:ident),+], $rules:tt) => {
        /// The suite and its one run, shared by every generated test.
        fn __transfer_conformance_run() -> &'static (
            $crate::ProviderSuite,
            $crate::Report,
        ) {
            static RUN: ::std::sync::OnceLock<($crate::ProviderSuite, $crate::Report)> =
                ::std::sync::OnceLock::new();
            RUN.get_or_init(|| {
                let suite: $crate::ProviderSuite =
                    $suite()
                        .invoked_from(env!("CARGO_PKG_NAME"), module_path!())
                        .default_regressions_dir(concat!(
                            env!("CARGO_MANIFEST_DIR"),
                            "/proptest-regressions"
                        ));
                // Once per binary under nextest too (one process per test).
                let report = suite.shared_run();
                (suite, report)
            })
        }

        #[test]
        fn transfer_conformance_level() {
            let (suite, _) = __transfer_conformance_run();
            assert_eq!(
                suite.level(),
                $crate::Level::$level,
                "the suite is pinned to level {} but its tests were generated for level {}",
                suite.level(),
                $crate::Level::$level
            );
            assert_eq!(
                $crate::__conformance_rule_list!($rules),
                $crate::Level::$level.rules(),
                "the macro's tests and level {} name different rules",
                $crate::Level::$level
            );
        }

        /// The routes listed in the macro are exactly the routes the suite
        /// declares: a declared route left out would run and never be
        /// asserted, a listed one that is not declared would fail every
        /// rule test with "not run".
        #[test]
        fn transfer_conformance_routes() {
            let (suite, _) = __transfer_conformance_run();
            let listed: &[&str] = &[$(stringify!($route)),+];
            let declared = suite.route_names();
            let unlisted: ::std::vec::Vec<&&str> =
                declared.iter().filter(|name| !listed.contains(name)).collect();
            let undeclared: ::std::vec::Vec<&&str> =
                listed.iter().filter(|name| !declared.contains(name)).collect();
            assert!(
                unlisted.is_empty() && undeclared.is_empty(),
                "conformance_tests!(routes = [...]) and the suite's routes differ: declared but not listed (never asserted): {unlisted:?}; listed but not declared: {undeclared:?}"
            );
        }

        $(
            #[allow(non_snake_case)]
            mod $route {
                $crate::__conformance_rule_tests!(
                    super::__transfer_conformance_run,
                    $route,
                    $rules
                );
            }
        )+
    };
}

/// The rules of a `name => Rule` list, as a slice; an implementation detail
/// of [`conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_rule_list {
    ([$($test:ident => $rule:ident),+ $(,)?]) => {
        &[$($crate::harness::Rule::$rule),+][..]
    };
}

/// One `#[test]` per `name => Rule` pair; an implementation detail of
/// [`conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_rule_tests {
    ($run:path, $route:ident, [$($test:ident => $rule:ident),+ $(,)?]) => {
        $(
            #[test]
            fn $test() {
                let (suite, report) = $run();
                suite.assert_rule(
                    report,
                    stringify!($route),
                    $crate::harness::Rule::$rule,
                );
            }
        )+
    };
}
