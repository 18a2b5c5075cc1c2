//! A run that overran its deadline: the worker released (and kept if it
//! comes back in time), and each input's outcome made from what the Spy
//! saw of it: returned, hung in the provider or its storage, or never
//! reached.

use std::time::Duration;

use super::Watchdog;
use super::worker::{Message, Worker};
use crate::hold;
use crate::run::rig::case_words;
use crate::{Case, LeakCheck, Outcome, ProviderResult, RuntimeVerdict, SpyRecord};

/// How often a released worker may park again on an abandoned case
/// before it is given up for lost.
const MAX_RELEASES: usize = 16;

impl Watchdog {
    /// The outcomes of a run that overran `limit`; the worker is released
    /// and kept if it comes back within `grace`.
    pub(super) fn give_up(
        &mut self,
        worker: Worker,
        cases: &[Case],
        limit: Duration,
        grace: Duration,
    ) -> Vec<Outcome> {
        self.give_up_at(worker, cases, limit, grace).1
    }

    /// As [`Self::give_up`], with the index of the input whose call hung
    /// (the first whose call had not returned). Inputs whose calls had
    /// returned are judged on what they returned; those after the hung
    /// one were never reached.
    pub(super) fn give_up_at(
        &mut self,
        worker: Worker,
        cases: &[Case],
        limit: Duration,
        grace: Duration,
    ) -> (usize, Vec<Outcome>) {
        let (request, returned) = worker.spy.in_flight_and_records();
        let stage = worker.spy.stage();
        let trace = worker.trace.events();
        let event_domains = worker.event_domains;
        hold::release(worker.thread);
        let mut releases = 1;
        loop {
            match worker.replies.recv_timeout(grace) {
                // Its outcome belongs to a run already judged as timed out.
                Ok(Message::Done(_) | Message::ThenPanicked(_) | Message::Released(_)) => {
                    self.worker = Some(worker);
                    break;
                }
                // The abandoned run goes on with a repetition (a bounded
                // number of them): wait on.
                Ok(Message::Repeating) => {}
                // Released, it parked again on the same abandoned run.
                Ok(Message::Parked) if releases < MAX_RELEASES => {
                    releases += 1;
                    hold::release(worker.thread);
                }
                Ok(Message::Parked) | Err(_) => {
                    self.lost_workers += 1;
                    break;
                }
            }
        }
        let hung = returned.len();
        let timed_out = |calls: Vec<SpyRecord>| Outcome {
            runtime: RuntimeVerdict::TimedOut { limit },
            calls,
            snapshot_event_domains: event_domains,
            trace: trace.clone(),
            leaks: LeakCheck::Unchecked(
                "the case timed out, so its tensors were never dropped".to_owned(),
            ),
            input: crate::InputReads::not_readable(
                "the case timed out, so the input may still be in use",
            ),
            held: None,
            holds_values_of: None,
            source_saw_input: None,
        };
        let mut returned = returned.into_iter();
        let outcomes = (0..cases.len())
            .map(|index| match index.cmp(&hung) {
                std::cmp::Ordering::Less => timed_out(returned.next().into_iter().collect()),
                std::cmp::Ordering::Equal => timed_out(
                    request
                        .clone()
                        .map(|request| SpyRecord {
                            request,
                            result: match stage {
                                Some(method) => ProviderResult::StorageHung { method, limit },
                                None => ProviderResult::TimedOut { limit },
                            },
                            input_after_return: None,
                            input_in_flight: None,
                            destination_saw_output: None,
                        })
                        .into_iter()
                        .collect(),
                ),
                std::cmp::Ordering::Greater => Outcome {
                    runtime: RuntimeVerdict::NotReached {
                        stopped_at: format!(
                            "input {} ({}), whose call did not return",
                            hung + 1,
                            case_words(&cases[hung])
                        ),
                    },
                    ..timed_out(Vec::new())
                },
            })
            .collect();
        (hung, outcomes)
    }
}
