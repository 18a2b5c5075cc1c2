//! Running a rig: stage a run's inputs on the source, read their backing,
//! run the program through the real runtime, read the backing again, and
//! gather each input's [`Outcome`] from what the run did.

use std::sync::Arc;

use tenferro_tensor::Tensor;

use super::ending::{RunEnd, calls_by_input, lost_call, sole_outcome};
use super::plans::{Engines, Executed, OutputReads};
use super::{Rig, case_words};
use crate::device::stage::with_inputs;
use crate::run::accounting::Sample;
use crate::run::effects::{InputBefore, read_before, reread_backing};
use crate::run::spy::Expected;
use crate::trace;
use crate::values::compared::Reference;
use crate::{
    Case, Compared, CompletionState, HarnessError, Layout, Outcome, ProviderResult, QUEUE_STALL,
    RuntimeOutput, RuntimeVerdict, SpyRecord,
};

/// What the staged part of a run produced.
pub(super) struct Ran {
    pub(super) executed: Executed,
    /// What each input's backing held before the run, and its read after
    /// it compared with that (`None`: nothing to compare with).
    pub(super) input_reads: Vec<(InputBefore, Option<Compared>)>,
    /// Whether the source's accounting showed the staged inputs.
    pub(super) staged: bool,
    /// When the run's outputs were (or will be) read.
    pub(super) reads: OutputReads,
}

impl Rig {
    /// Run one case.
    ///
    /// A provider's `Err` or panic is part of the [`Outcome`], not an error
    /// of this call; the rig stays usable afterwards.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::Prepare`] if the runtime refuses to plan the
    /// route, or a staging error if tenferro rejects the case's input.
    pub fn run(&mut self, case: &Case) -> Result<Outcome, HarnessError> {
        let outcomes = self.run_together(std::slice::from_ref(case))?;
        sole_outcome(&self.route, outcomes)
    }

    /// Move every input of `cases` through the provider in one run, in
    /// order, and return one [`Outcome`] per input, each with its own call.
    ///
    /// The runtime keeps each transferred value until the program ends,
    /// and the program reads each again after the last transfer: an output
    /// that changed meanwhile (a provider handing out an allocation the
    /// runtime still holds) is an `output-stable` finding on the run's last
    /// input. What the run did to the devices' memory is judged once, on
    /// the last input the run reached. An input the run never reached (an
    /// earlier transfer failed) is [`RuntimeVerdict::NotReached`].
    ///
    /// # Errors
    ///
    /// As [`Rig::run`]; [`HarnessError::InvalidCase`] for no case at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rig, Route};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let cases = [
    ///     Case::from_values(vec![2], vec![1.0_f64, -0.0]).unwrap(),
    ///     Case::from_values(vec![2], vec![f64::NAN, 2.5]).unwrap(),
    /// ];
    /// let outcomes = rig.run_together(&cases).unwrap();
    /// for (case, outcome) in cases.iter().zip(&outcomes) {
    ///     assert!(Oracle.judge(case, &route, outcome).passed());
    /// }
    /// // The first output was read again after the second transfer.
    /// assert_eq!(outcomes[1].held.as_ref().unwrap().reread, 1);
    /// ```
    pub fn run_together(&mut self, cases: &[Case]) -> Result<Vec<Outcome>, HarnessError> {
        if cases.is_empty() {
            return Err(HarnessError::InvalidCase {
                reason: "a run moves at least one input".to_owned(),
            });
        }
        self.trace.clear();
        let _traced = trace::install(Arc::clone(&self.trace));
        let counted = self.route.counts_memory();
        let stays = [
            self.route.source().enter(),
            self.route.destination().enter(),
        ];
        let before = [
            Sample::of(self.route.source(), counted),
            Sample::of(self.route.destination(), counted),
        ];
        self.spy.take();
        // Deferred only where the outputs are kept: they are read when
        // held, and an output neither kept nor read would go unchecked.
        let reads = if self.spy.defers_output_reads() && self.keeping {
            OutputReads::Deferred
        } else {
            OutputReads::Now
        };
        let ran = self.stage_and_run(cases, &before[0], counted, reads)?;
        let calls = self.spy.take();
        if calls.is_empty() {
            lost_call(ran.executed.outputs.as_ref().err(), &self.route)?;
        }
        self.check_call_order(cases, &calls)?;
        let reached = calls.len().clamp(1, cases.len());
        let saw_output = calls
            .iter()
            .filter_map(|call| call.destination_saw_output)
            .reduce(|all, seen| all && seen);
        let held = self.held_outputs(cases, &calls, &ran);
        self.hold_kept(
            cases,
            &calls,
            ran.executed.kept,
            &ran.executed.outputs,
            ran.reads,
        );
        // Every tensor of the run (inputs, transfers, outputs) is dropped
        // now, but the outputs held on purpose.
        let leaks = self.memory_after(cases, &before, &stays, ran.staged, saw_output);
        drop(stays);
        let ended = RunEnd {
            cases,
            outputs: &ran.executed.outputs,
            reached,
            leaks,
            held,
            source_saw_input: before[0].accounts().then_some(ran.staged),
        };
        let mut trace = self.trace.take();
        let mut calls = calls_by_input(calls, cases.len());
        let outcomes = ran
            .input_reads
            .into_iter()
            .enumerate()
            .map(|(index, reads)| {
                // Each input's outcome has the run's trace; the last takes
                // it, the others a copy.
                let trace = if index + 1 == cases.len() {
                    std::mem::take(&mut trace)
                } else {
                    trace.clone()
                };
                let call = std::mem::take(&mut calls[index]);
                self.outcome_of(&ended, index, call, reads, trace)
            })
            .collect();
        self.recent.remember(cases);
        Ok(outcomes)
    }

    /// The runtime moves a run's inputs in the order the program first
    /// uses them, which is theirs: call `i` is input `i`'s. A call that
    /// moved another dtype or shape than its input is the harness's fault.
    fn check_call_order(&self, cases: &[Case], calls: &[SpyRecord]) -> Result<(), HarnessError> {
        if let Some((index, _)) = calls
            .iter()
            .zip(cases)
            .enumerate()
            .find(|(_, (call, case))| {
                call.request.input_dtype != case.dtype() || call.request.input_shape != case.shape()
            })
        {
            return Err(HarnessError::HarnessFault {
                route: self.route.label(),
                reason: format!(
                    "the runtime's transfer {} of the run moved {:?} {:?}, not input {} ({})",
                    index + 1,
                    calls[index].request.input_dtype,
                    calls[index].request.input_shape,
                    index + 1,
                    case_words(&cases[index])
                ),
            });
        }
        Ok(())
    }

    /// Hold each kept output whose values the run read, beside its case;
    /// where its reads are deferred, each kept output whose provider
    /// returned its case's values (`calls`, the run's, input by input),
    /// taken to hold them (its first read, after the next run, compares
    /// them): an output returned wrong is `values`' finding, not held.
    fn hold_kept(
        &mut self,
        cases: &[Case],
        calls: &[SpyRecord],
        kept: Vec<Tensor>,
        outputs: &Result<Vec<RuntimeOutput>, RuntimeVerdict>,
        reads: OutputReads,
    ) {
        if let Ok(observed) = outputs {
            for (index, (case, (output, seen))) in
                cases.iter().zip(kept.into_iter().zip(observed)).enumerate()
            {
                if case.len() > self.hold_limit {
                    continue;
                }
                if reads == OutputReads::Deferred {
                    if calls.get(index).is_some_and(|call| returned_as(case, call)) {
                        self.held.hold(case, output, case.shared_values(), true);
                    }
                    continue;
                }
                match &seen.bytes {
                    Compared::Same => self.held.hold(case, output, case.shared_values(), false),
                    Compared::Image(bytes) => {
                        self.held.hold(
                            case,
                            output,
                            Reference::Held(bytes.as_slice().into()),
                            false,
                        );
                    }
                    Compared::Failed { .. } | Compared::NotReadable { .. } => {}
                }
            }
        }
    }

    /// Stage `cases` on the source, read their backing, run them, and read
    /// their backing again; where only the run's memory is looked at
    /// (`reads` is [`OutputReads::MemoryOnly`]: a repetition that tells
    /// kept memory from a leak), read only what the provider returned, as
    /// its call ends (a storage of the provider's that allocates as it is
    /// read is still read on every repetition), neither the inputs nor the
    /// runtime's outputs.
    pub(super) fn stage_and_run(
        &mut self,
        cases: &[Case],
        source_before: &Sample,
        counted: bool,
        reads: OutputReads,
    ) -> Result<Ran, HarnessError> {
        let memory_only = reads == OutputReads::MemoryOnly;
        let Self {
            route,
            runtime,
            spy,
            source,
            destination,
            plans,
            keeping,
            ..
        } = self;
        // Inputs handed over unread are staged behind a stall of the
        // source's queues, where it can stall: writes still queued into
        // them when the provider is called are met, not raced past.
        if spy.hands_inputs_unread() && !memory_only {
            route.source().stall_queues(QUEUE_STALL);
        }
        with_inputs(
            route.source(),
            cases,
            |inputs| -> Result<Ran, HarnessError> {
                // An owned input handed over unread is taken to hold the
                // case's values: the read after the call compares with them.
                let unread = spy.hands_inputs_unread();
                let before: Vec<InputBefore> = inputs
                    .iter()
                    .zip(cases)
                    .map(|(input, case)| match case.layout() {
                        _ if memory_only => InputBefore::NotReadable {
                            reason: "not read: the run was repeated for its memory only".to_owned(),
                        },
                        Layout::Owned if unread => InputBefore::CaseValues,
                        // A view's backing holds more than the case's
                        // values, as the adapter staged it: nothing to
                        // compare the reads after the call with.
                        Layout::View(_) if unread => InputBefore::NotReadable {
                            reason: "the view input was handed to the provider unread, as the source staged it (its writes maybe still queued), and the adapter may fill its backing's gaps as it likes: input-intact is judged on its run read first".to_owned(),
                        },
                        _ => read_before(route.source(), input, case),
                    })
                    .collect();
                spy.expect(
                    before
                        .iter()
                        .zip(cases)
                        .map(|(before, case)| Expected {
                            input: before.shared_reference(case),
                            output: Some(case.shared_values()),
                            stall_destination: reads == OutputReads::Deferred,
                            stall_destination_first: unread && !memory_only,
                        })
                        .collect(),
                );
                let staged = source_before.shown_more_on(route.source(), counted);
                let engines = Engines {
                    runtime,
                    source: source.as_mut(),
                    destination: destination.as_mut(),
                    spy,
                    route,
                };
                let executed = plans.run(engines, cases, inputs, (*keeping, reads));
                spy.expect(Vec::new());
                let executed = executed?;
                // The transfers' outputs were read and dropped (unless held).
                let input_reads = before
                    .into_iter()
                    .zip(inputs.iter().zip(cases))
                    .map(|(before, (input, case))| {
                        let after = before
                            .reference_view(case)
                            .map(|reference| reread_backing(route.source(), input, reference));
                        (before, after)
                    })
                    .collect();
                Ok(Ran {
                    executed,
                    input_reads,
                    staged,
                    reads,
                })
            },
        )?
    }
}

/// Whether `call` returned a complete output of `case`'s dtype and length
/// that held `case`'s values as the Spy read it at return.
fn returned_as(case: &Case, call: &SpyRecord) -> bool {
    let ProviderResult::Returned(returned) = &call.result else {
        return false;
    };
    matches!(
        returned.completion,
        CompletionState::Complete | CompletionState::Unknown { .. }
    ) && returned.dtype == case.dtype()
        && returned.buffer_len == Some(case.len())
        && returned.buffer_len_changed_to.is_none()
        && returned.bytes == Compared::Same
}
