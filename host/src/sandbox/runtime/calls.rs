//! Nested calls of one script: started without blocking, awaited together (with the
//! script's timers), recorded.
//!
//! A call starts when the script starts it: its future is polled once right away, and a
//! tool that answers at once is answered in the same round trip. What is still pending
//! lives in this Exec's store and is polled while the guest waits in `wait-next`, so a
//! `Promise.all` of many calls shares one wait window and no thread hop is paid per call.
//! Dropping the store drops (cancels) whatever is still in flight.
//!
//! Where a call goes is not the runtime's business: the layer above hands it a
//! [`ScriptTools`] (the session's pool and funnel), and the runtime only counts, starts,
//! waits and records.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::FuturesUnordered;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::call_record::{CallRecord, NestedCall};
use super::failure::Position;
use super::limits::{IN_FLIGHT_ARGUMENTS, Limits};
use super::suspended::UnfinishedCall;
use super::timers::Timers;
use crate::sources::tools::names::TOOL_SEARCH;
use crate::sources::tools::{MAX_TOOL_NAME_LEN, ToolOutput};
use crate::state::ConversationValues;
use crate::support::text::cut_chars as cut;
use crate::support::vocabulary::Unfinished;
use crate::support::vocabulary::{Approval, AskedBefore, ParkRequest, ToolError};

/// What a script's `tools` object reaches, as the layer above the runtime decides it.
pub(crate) trait ScriptTools: Send + Sync + 'static {
    /// The names a script may call as `tools.<name>`, in order.
    fn names(&self) -> &[String];

    /// Starts call `id` of the script. A name the script may not reach is refused by the
    /// returned future at its first poll. `cancel` fires when the Exec ends or is aborted.
    /// `asked_before`: the call parked before, and is taken up again (with a person's answer,
    /// or none).
    fn call(
        &self,
        id: u32,
        name: String,
        args: Map<String, Value>,
        cancel: CancellationToken,
        asked_before: Option<AskedBefore>,
    ) -> ToolFuture;

    /// Answers `tools.ToolSearch(args)` with the JSON text of its result.
    fn search(&self, args: Map<String, Value>) -> Result<String, ToolError>;

    /// The values the script's `store` and `load` reach: its conversation's.
    fn values(&self) -> Arc<ConversationValues>;

    /// The message of the engine's bare `not a function` thrown at `position` of `code` (the
    /// script the guest runs), naming what was called; `None` when it cannot say.
    fn explain_not_a_function(&self, code: &str, position: Position) -> Option<String>;

    /// Whether a call of `name` is answered by another process: a script waiting for one
    /// does not spin (see `hot_wait`).
    fn answered_elsewhere(&self, _name: &str) -> bool {
        false
    }
}

/// A call on its way.
pub(crate) type ToolFuture = BoxFuture<'static, Result<ToolOutput, Unfinished>>;

/// Why the host ended a script while it waited.
#[derive(Debug, thiserror::Error)]
#[error("the script waited more than {limit:?} in all for nested tool calls and timers")]
pub struct NestedWaitExceeded {
    pub limit: Duration,
}

/// Finished calls (and, apart, due timers) handed to the guest in one `wait-next`.
const MAX_BATCH: usize = 256;

/// A call that waits for a person's answer: what it asked, and the request shown to whoever
/// answers.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct ParkedCall {
    pub id: u32,
    pub name: String,
    /// The arguments as the script gave them: the call is asked again with them.
    pub args_json: String,
    pub request: ParkRequest,
}

/// A call that finished, under the id the guest knows it by.
pub(crate) type Finished = (u32, Result<ToolOutput, ToolError>);

/// A call in flight that ended: its output, its failure, or a park not yet set aside.
type Ended = (u32, Result<ToolOutput, Unfinished>);

/// What one `wait-next` hands the guest: the calls that finished, then the timers that
/// are due, in the order they fell due.
pub(crate) struct Woken {
    pub calls: Vec<Finished>,
    pub timers: Vec<u32>,
}

/// What starting a call gives back at once.
pub(crate) enum Started {
    Pending(u32),
    Done(Result<ToolOutput, ToolError>),
}

/// A call in flight, tagged with its id and the size of its arguments (one allocation per
/// call: the tool's own future), and, in an Exec that can park, what it asked (to ask it
/// again once a person has answered).
struct InFlight {
    id: u32,
    argument_bytes: usize,
    future: ToolFuture,
    asked: Option<Box<(String, String)>>,
    /// Fires when the script stops this call (`cancel-call`) or the Exec ends.
    cancel: CancellationToken,
    /// Answered by another process ([`ScriptTools::answered_elsewhere`]).
    elsewhere: bool,
}

impl Future for InFlight {
    type Output = (Ended, usize, Option<Box<(String, String)>>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (id, bytes) = (self.id, self.argument_bytes);
        match self.future.as_mut().poll(cx) {
            Poll::Ready(result) => Poll::Ready(((id, result), bytes, self.asked.take())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Why a wait for calls and timers ended without anything to hand the guest.
#[derive(Debug)]
pub(crate) enum WaitEnd {
    /// The script waited longer than it may in all.
    Exceeded(NestedWaitExceeded),
    /// Every call still open waits for a person's answer, and nothing else runs: the Exec
    /// parks.
    Park,
}

/// Every call one script starts, and the record of them.
pub(crate) struct NestedCalls {
    tools: Arc<dyn ScriptTools>,
    in_flight: FuturesUnordered<InFlight>,
    max_calls: u32,
    /// Fires when the Exec ends or is aborted; every call carries it.
    cancel: CancellationToken,
    max_nested_wait: Option<Duration>,
    waited: Duration,
    max_argument_bytes: usize,
    /// Bytes of arguments the calls in flight hold.
    argument_bytes_in_flight: usize,
    record: CallRecord,
    /// Whether a call that waits for an approval may wait (the Exec can park); if not, it is
    /// refused.
    parkable: bool,
    /// Calls that wait for a person's answer.
    parked: Vec<ParkedCall>,
}

impl NestedCalls {
    pub fn new(tools: Arc<dyn ScriptTools>, limits: &Limits, cancel: CancellationToken, record: CallRecord) -> Self {
        NestedCalls {
            tools,
            in_flight: FuturesUnordered::new(),
            max_calls: limits.max_calls,
            cancel,
            max_nested_wait: limits.max_nested_wait,
            waited: Duration::ZERO,
            max_argument_bytes: limits.max_argument_bytes,
            argument_bytes_in_flight: 0,
            record,
            parkable: false,
            parked: Vec::new(),
        }
    }

    /// Lets calls wait for approvals: the Exec parks when nothing else is left to wait for.
    pub fn parkable(mut self) -> Self {
        self.parkable = true;
        self
    }

    /// The calls that wait for a person's answer.
    pub fn parked(&self) -> &[ParkedCall] {
        &self.parked
    }

    /// Time waited so far, charged to `max_nested_wait`.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The record so far (calls in flight unfinished, with their time so far).
    pub fn record_so_far(&self) -> (Vec<NestedCall>, usize) {
        self.record.so_far()
    }

    /// Takes up a parked Exec where it stopped: its record and time waited, and its parked
    /// calls asked again, each with the answer a person gave it (`None`: it asks again).
    pub fn resume(
        &mut self,
        calls: Vec<NestedCall>,
        omitted: usize,
        waited: Duration,
        parked: Vec<ParkedCall>,
        unfinished: Vec<UnfinishedCall>,
        answers: &std::collections::HashMap<u32, Approval>,
    ) {
        self.record.resume(calls, omitted);
        self.waited = waited;
        for call in parked {
            let argument_bytes = call.args_json.len();
            let args = match parse_arguments(&call.name, &call.args_json) {
                Ok(args) => args,
                Err(error) => {
                    let _ = self.record.finish(call.id, Err(error));
                    continue;
                }
            };
            let asked_before = AskedBefore { why: call.request.why.clone(), answer: answers.get(&call.id).cloned() };
            let cancel = self.cancel.child_token();
            let elsewhere = self.tools.answered_elsewhere(&call.name);
            let future = self.tools.call(call.id, call.name.clone(), args, cancel.clone(), Some(asked_before));
            let asked = Some(Box::new((call.name, call.args_json)));
            self.argument_bytes_in_flight += argument_bytes;
            self.in_flight.push(InFlight { id: call.id, argument_bytes, future, asked, cancel, elsewhere });
        }
        // The calls that were running when the Exec was checkpointed: how they ended died
        // with the host that ran them.
        for call in unfinished {
            let error = ToolError::execution(format!(
                "`{}` was running when the host that ran this script stopped, and its answer was lost: \
                 it may have taken effect, as may anything this script did after it answered. \
                 Check before calling it again",
                cut(&call.name, MAX_TOOL_NAME_LEN)
            ));
            self.push_finished(call.id, error);
        }
    }

    /// The calls running now (not those waiting for an approval), for a checkpoint.
    pub fn running(&self) -> Vec<UnfinishedCall> {
        self.in_flight
            .iter()
            .map(|call| UnfinishedCall {
                id: call.id,
                name: call.asked.as_ref().map(|asked| asked.0.clone()).unwrap_or_default(),
            })
            .collect()
    }

    /// Refuses arguments past the limit of one call, or past what the calls in flight may
    /// hold together, before the host parses them.
    fn check_argument_size(&self, name: &str, args_json: &str) -> Result<(), ToolError> {
        let bytes = args_json.len();
        if bytes > self.max_argument_bytes {
            return Err(ToolError::params(format!(
                "`{}` was refused: its arguments take {bytes} bytes as JSON, more than the {} a call may pass",
                cut(name, MAX_TOOL_NAME_LEN),
                self.max_argument_bytes
            )));
        }
        let total = self.max_argument_bytes.saturating_mul(IN_FLIGHT_ARGUMENTS);
        if self.argument_bytes_in_flight + bytes > total {
            return Err(ToolError::params(format!(
                "`{}` was refused: the calls in flight already hold {} bytes of arguments, and together they may hold {total}; await some first",
                cut(name, MAX_TOOL_NAME_LEN),
                self.argument_bytes_in_flight
            )));
        }
        Ok(())
    }

    /// Fires when the Exec ends or is aborted (the token every call is given).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn tools(&self) -> &Arc<dyn ScriptTools> {
        &self.tools
    }

    /// Every call that reached the host, in order; taken when the Exec is over. Calls still
    /// in flight are recorded as unfinished.
    pub fn into_record(self) -> (Vec<NestedCall>, usize) {
        self.record.into_calls()
    }

    /// Records a call that reached the host and returns its id; refuses it when it is past
    /// the limit. Past the limit the record keeps only the last two refused calls (their
    /// names, for the summary) and counts the others, so a script that loops on refused
    /// calls cannot grow the host's memory.
    fn admit(&mut self, name: &str, args_json: &str) -> (u32, Result<(), ToolError>) {
        let limit = self.max_calls as usize;
        if self.record.attempted() < limit {
            return (self.record.push(name, args_json), Ok(()));
        }
        let refusal = ToolError::execution(format!(
            "`{}` was refused: this script has reached its limit of {} tool calls",
            cut(name, MAX_TOOL_NAME_LEN),
            self.max_calls
        ));
        (self.record.push_refused(name, limit), Err(refusal))
    }

    /// Starts a call. `Done` when it finished (or was refused) at once, else `Pending`
    /// with the id `finished` will hand it back under.
    pub fn start(&mut self, name: String, args_json: String) -> Started {
        let (id, admitted) = self.admit(&name, &args_json);
        let argument_bytes = args_json.len();
        let checked = admitted.and_then(|()| self.check_argument_size(&name, &args_json));
        let args = match checked.and_then(|()| parse_arguments(&name, &args_json)) {
            Ok(args) => args,
            Err(error) => return Started::Done(self.record.finish(id, Err(error))),
        };
        let asked = self.parkable.then(|| Box::new((name.clone(), args_json)));
        let cancel = self.cancel.child_token();
        let elsewhere = self.tools.answered_elsewhere(&name);
        let future = self.tools.call(id, name, args, cancel.clone(), None);
        let mut call = InFlight { id, argument_bytes, future, asked, cancel, elsewhere };
        // Start it now. A pending future is polled again, with a real waker, by `next`.
        match Pin::new(&mut call).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(((id, result), _, asked)) => match self.set_aside(id, result, asked) {
                // It waits for an answer: to the script, it is pending.
                None => Started::Pending(id),
                Some(result) => Started::Done(self.record.finish(id, result)),
            },
            Poll::Pending => {
                self.argument_bytes_in_flight += argument_bytes;
                self.in_flight.push(call);
                Started::Pending(id)
            }
        }
    }

    /// Stops call `id` for the script (`cancel-call`): a call in flight is cancelled and ends
    /// as its tool ends on cancellation; a call waiting for a person's answer ends at once,
    /// cancelled. Either way `finished` still hands it back. Anything else is ignored.
    pub fn cancel(&mut self, id: u32) {
        if let Some(call) = self.in_flight.iter().find(|call| call.id == id) {
            call.cancel.cancel();
            return;
        }
        if let Some(at) = self.parked.iter().position(|call| call.id == id) {
            let call = self.parked.remove(at);
            let error = ToolError::execution(format!("`{}` was cancelled by the script", cut(&call.name, MAX_TOOL_NAME_LEN)));
            self.push_finished(id, error);
        }
    }

    /// Hands call `id` back to the script at the next wait, failed with `error`.
    fn push_finished(&mut self, id: u32, error: ToolError) {
        let future = Box::pin(std::future::ready(Err(error.into())));
        let cancel = CancellationToken::new();
        self.in_flight.push(InFlight { id, argument_bytes: 0, future, asked: None, cancel, elsewhere: false });
    }

    /// Whether a call in flight is answered by another process.
    pub fn waiting_elsewhere(&self) -> bool {
        self.in_flight.iter().any(|call| call.elsewhere)
    }

    /// A call that parked is set aside (`None`) when the Exec can park; any other result is
    /// handed on, a park refused where the Exec cannot wait.
    fn set_aside(
        &mut self,
        id: u32,
        result: Result<ToolOutput, Unfinished>,
        asked: Option<Box<(String, String)>>,
    ) -> Option<Result<ToolOutput, ToolError>> {
        match (result, asked) {
            (Err(Unfinished::Parked(request)), Some(asked)) => {
                let (name, args_json) = *asked;
                // In the order the script started them, whatever order their answers came in.
                let at = self.parked.partition_point(|call| call.id < id);
                self.parked.insert(at, ParkedCall { id, name, args_json, request: *request });
                None
            }
            (result, _) => Some(result.map_err(Unfinished::or_refused)),
        }
    }

    /// Waits for at least one call to finish or one of `timers` to fall due, then takes
    /// every call that has finished and every timer that is due by then (at most
    /// [`MAX_BATCH`] of each). Empty when no call is in flight and no timer is pending.
    /// [`WaitEnd::Park`] when every call still open waits for a person's answer.
    pub async fn finished(&mut self, timers: &mut Timers) -> Result<Woken, WaitEnd> {
        loop {
            if self.in_flight.is_empty() && !self.parked.is_empty() {
                return Err(WaitEnd::Park);
            }
            let first = self.next(timers.next_deadline()).await.map_err(WaitEnd::Exceeded)?;
            let waited_for_nothing = first.is_none();
            let mut batch: Vec<_> = first.into_iter().flatten().collect();
            while batch.len() < MAX_BATCH && !self.in_flight.is_empty() {
                match self.in_flight.next().now_or_never() {
                    Some(Some(done)) => batch.push(done),
                    _ => break,
                }
            }
            let mut calls = Vec::with_capacity(batch.len());
            for ((id, result), bytes, asked) in batch {
                self.argument_bytes_in_flight -= bytes;
                if let Some(result) = self.set_aside(id, result, asked) {
                    calls.push((id, self.record.finish(id, result)));
                }
            }
            let due = timers.take_due(Instant::now(), MAX_BATCH);
            if !calls.is_empty() || !due.is_empty() || waited_for_nothing {
                return Ok(Woken { calls, timers: due });
            }
        }
    }

    /// Refuses the parked calls (an Exec that cannot park after all): each finishes with
    /// its refusal, for the guest.
    pub fn refuse_parked(&mut self, why: &str) -> Vec<Finished> {
        let parked = std::mem::take(&mut self.parked);
        parked
            .into_iter()
            .map(|call| {
                let request = call.request;
                let refusal = ToolError::authorization(format!(
                    "`{}` needs approval ({}), and this Exec cannot wait for one: {why}; a permissions.allow rule `{}` lets it run",
                    request.tool, request.why, request.rule
                ))
                .naming(&call.name);
                (call.id, self.record.finish(call.id, Err(refusal)))
            })
            .collect()
    }

    /// Waits for the next call to finish (`Some(Some(call))`) or for `deadline` to pass
    /// (`Some(None)`). `None` when no call is in flight and there is no deadline. The time
    /// spent counts toward `max_nested_wait`, whatever was waited for.
    #[allow(clippy::type_complexity)]
    async fn next(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<Option<Option<(Ended, usize, Option<Box<(String, String)>>)>>, NestedWaitExceeded> {
        if self.in_flight.is_empty() && deadline.is_none() {
            return Ok(None);
        }
        let started = Instant::now();
        // A timer already due is not slept for: the runtime's timers would round the wait up
        // to their next tick, a millisecond for each `setTimeout(0)`.
        if deadline.is_some_and(|at| at <= started) {
            return Ok(Some(self.in_flight.next().now_or_never().flatten()));
        }
        let in_flight = &mut self.in_flight;
        let wait = async move {
            let timer = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            if in_flight.is_empty() {
                timer.await;
                return None;
            }
            tokio::select! {
                biased;
                done = in_flight.next() => done,
                () = timer => None,
            }
        };
        let next = match self.max_nested_wait {
            None => wait.await,
            Some(limit) => {
                let left = limit.saturating_sub(self.waited);
                match tokio::time::timeout(left, wait).await {
                    Ok(next) => next,
                    Err(_) => return Err(NestedWaitExceeded { limit }),
                }
            }
        };
        self.waited += started.elapsed();
        // Many short waits add up: a wait that ended within its own time still counts, and
        // the time waited in all is checked after each (a timeout of what is left cannot
        // fire once that is less than the runtime's timer tick).
        if let Some(limit) = self.max_nested_wait
            && self.waited > limit
        {
            return Err(NestedWaitExceeded { limit });
        }
        Ok(Some(next))
    }

    /// The message of the engine's `not a function` at `position` of `code`.
    pub fn explain_not_a_function(&self, code: &str, position: Position) -> Option<String> {
        self.tools.explain_not_a_function(code, position)
    }

    /// Answers `tools.ToolSearch(...)`: counted and recorded like any call, answered at once.
    pub fn search(&mut self, args_json: &str) -> Result<String, ToolError> {
        let (id, admitted) = self.admit(TOOL_SEARCH, args_json);
        let answer = admitted
            .and_then(|()| self.check_argument_size(TOOL_SEARCH, args_json))
            .and_then(|()| parse_arguments(TOOL_SEARCH, args_json))
            .and_then(|args| self.tools.search(args));
        let outcome = match &answer {
            Ok(_) => Ok(ToolOutput::empty()),
            Err(error) => Err(error.clone()),
        };
        let _ = self.record.finish(id, outcome);
        answer
    }
}

/// The argument object a guest sent, or a params error.
fn parse_arguments(name: &str, json: &str) -> Result<Map<String, Value>, ToolError> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolError::params(format!("{name}: the arguments must be one plain object"))),
        Err(e) => Err(ToolError::params(format!("{name}: the arguments are not valid JSON: {e}"))),
    }
}
