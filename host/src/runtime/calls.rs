//! Nested calls of one script: started without blocking, awaited together.
//!
//! A call starts when the script starts it: its future is polled once right away, and a
//! tool that answers at once is answered in the same round trip. What is still pending
//! lives in this Exec's store and is polled while the guest waits in
//! `wait-next`, so a `Promise.all` of many calls shares one wait window and no thread hop
//! is paid per call. Dropping the store drops (cancels) whatever is still in flight.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::FuturesUnordered;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::funnel::{CallRequest, Funnel};
use crate::script::CallWatcher;
use crate::search::{self, SEARCH_TOOL_NAME};
use crate::tools::{CallContext, Image, Origin, ToolDefinition, ToolError, ToolOutput};

/// The tools one script may reach, fixed when the Exec starts.
#[derive(Debug, Default)]
pub struct Reachable {
    set: HashSet<String>,
    definitions: Vec<ToolDefinition>,
    /// Made at the script's first search, kept for the others.
    search_index: OnceLock<search::Index>,
}

impl Reachable {
    /// `definitions` of the tools a script may reach, in the order they are listed.
    pub fn new(definitions: Vec<ToolDefinition>) -> Self {
        let set = definitions.iter().map(|d| d.name.clone()).collect();
        Reachable { set, definitions, search_index: OnceLock::new() }
    }

    /// Runs one search over these tools.
    pub fn search(&self, params: &search::SearchParams) -> search::SearchResult {
        self.search_index.get_or_init(|| search::Index::new(&self.definitions)).search(&self.definitions, params)
    }

    /// The names, in the order they are listed.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.definitions.iter().map(|d| d.name.as_str())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }
}

/// Why the host ended a script while it waited.
#[derive(Debug, thiserror::Error)]
#[error("the script waited more than {limit:?} in all for nested tool calls")]
pub struct NestedWaitExceeded {
    pub limit: Duration,
}

/// Finished calls handed to the guest in one `wait-next`.
const MAX_BATCH: usize = 256;

type Finished = (u32, Result<ToolOutput, ToolError>);

/// What starting a call gives back at once.
pub enum Started {
    Pending(u32),
    Done(Result<ToolOutput, ToolError>),
}

type InFlight = BoxFuture<'static, Finished>;

/// Every call one script starts, and the record of them.
pub struct NestedCalls {
    funnel: Arc<Funnel>,
    reachable: Arc<Reachable>,
    in_flight: FuturesUnordered<InFlight>,
    next_id: u32,
    max_calls: u32,
    /// Fires when the Exec ends or is aborted; every call's context carries it.
    cancel: CancellationToken,
    max_nested_wait: Option<Duration>,
    waited: Duration,
    record: CallRecord,
}

impl NestedCalls {
    pub fn new(
        funnel: Arc<Funnel>,
        reachable: Arc<Reachable>,
        max_calls: u32,
        max_nested_wait: Option<Duration>,
        cancel: CancellationToken,
        record: CallRecord,
    ) -> Self {
        NestedCalls {
            funnel,
            reachable,
            in_flight: FuturesUnordered::new(),
            next_id: 0,
            max_calls,
            cancel,
            max_nested_wait,
            waited: Duration::ZERO,
            record,
        }
    }

    /// Every call that reached the host, in order; taken when the Exec is over.
    pub fn into_record(self) -> CallRecord {
        self.record
    }

    /// Counts a call that reached the host; refuses it when it is past the limit.
    fn admit(&mut self, name: &str) -> Result<(), ToolError> {
        let attempted = self.record.push(name);
        if attempted > self.max_calls as usize {
            return Err(ToolError::execution(format!(
                "`{name}` was refused: this script has reached its limit of {} tool calls",
                self.max_calls
            )));
        }
        Ok(())
    }

    /// Starts a call. `Done` when it finished (or was refused) at once, else `Pending`
    /// with the id `finished` will hand it back under.
    pub fn start(&mut self, name: String, args_json: String) -> Started {
        let call = self.admit(&name).and_then(|()| self.prepare(name, &args_json));
        let request = match call {
            Ok(request) => request,
            Err(error) => return Started::Done(Err(error)),
        };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let funnel = self.funnel.clone();
        let mut future: InFlight = Box::pin(async move { (id, funnel.call(request).await) });
        // Start it now. A pending future is polled again, with a real waker, by `next`.
        match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready((_, result)) => Started::Done(result),
            Poll::Pending => {
                self.in_flight.push(future);
                Started::Pending(id)
            }
        }
    }

    fn prepare(&self, name: String, args_json: &str) -> Result<CallRequest, ToolError> {
        if !self.reachable.contains(&name) {
            return Err(unreachable_tool(&name));
        }
        let args = parse_arguments(&name, args_json)?;
        let context = CallContext { origin: Origin::Nested, cancel: self.cancel.clone() };
        Ok(CallRequest { name, args, context })
    }

    /// Waits for at least one call to finish, then takes every call that has finished by
    /// then (at most [`MAX_BATCH`]). Empty when none is in flight.
    pub async fn finished(&mut self) -> Result<Vec<Finished>, NestedWaitExceeded> {
        let Some(first) = self.next().await? else { return Ok(Vec::new()) };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH && !self.in_flight.is_empty() {
            match self.in_flight.next().now_or_never() {
                Some(Some(done)) => batch.push(done),
                _ => break,
            }
        }
        Ok(batch)
    }

    /// Waits for the next call to finish. `Ok(None)` when none is in flight.
    async fn next(&mut self) -> Result<Option<Finished>, NestedWaitExceeded> {
        if self.in_flight.is_empty() {
            return Ok(None);
        }
        let started = Instant::now();
        let next = match self.max_nested_wait {
            None => self.in_flight.next().await,
            Some(limit) => {
                let left = limit.saturating_sub(self.waited);
                match tokio::time::timeout(left, self.in_flight.next()).await {
                    Ok(next) => next,
                    Err(_) => return Err(NestedWaitExceeded { limit }),
                }
            }
        };
        self.waited += started.elapsed();
        Ok(next)
    }

    /// Answers `tools.ToolSearch(...)`: counted like any call, answered at once.
    pub fn search(&mut self, args_json: &str) -> Result<String, String> {
        self.admit(SEARCH_TOOL_NAME).map_err(|e| e.message)?;
        let args = parse_arguments(SEARCH_TOOL_NAME, args_json).map_err(|e| e.message)?;
        let params = search::parse_params(args).map_err(|e| e.message)?;
        let result = self.reachable.search(&params);
        serde_json::to_string(&result).map_err(|e| format!("ToolSearch: the result could not be encoded: {e}"))
    }
}

/// The refusal for a name outside this script's reachable set.
pub fn unreachable_tool(name: &str) -> ToolError {
    let why = match crate::mcp::split_tool_name(name) {
        Some((server, tool)) => format!("MCP server `{server}` did not offer `{tool}` when the script started"),
        None => "only this session's catalogue tools are".to_string(),
    };
    ToolError::discovery(format!(
        "`{name}` is not reachable from this script: {why}. \
         Use tools.ToolSearch({{ query: \"...\" }}) to find a tool's exact name and call shape."
    ))
}

/// The argument object a guest sent, or a params error.
fn parse_arguments(name: &str, json: &str) -> Result<Map<String, Value>, ToolError> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolError::params(format!("{name}: the arguments must be one plain object"))),
        Err(e) => Err(ToolError::params(format!("{name}: the arguments are not valid JSON: {e}"))),
    }
}

/// Every call a script attempted that reached the host, in order, without de-duplication:
/// refused calls included. Shared with whoever watches the Exec live.
#[derive(Clone, Default)]
pub struct CallRecord {
    names: Vec<String>,
    watcher: Option<CallWatcher>,
}

impl CallRecord {
    pub fn new(watcher: Option<CallWatcher>) -> Self {
        CallRecord { names: Vec::new(), watcher }
    }

    /// Adds one call; returns how many calls the record now holds.
    fn push(&mut self, name: &str) -> usize {
        self.names.push(name.to_string());
        if let Some(watcher) = &self.watcher {
            watcher(&self.names);
        }
        self.names.len()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// Images returned by nested calls, capped; the model gets them as attachments.
#[derive(Debug, Default)]
pub struct Images {
    pub kept: Vec<Image>,
    pub dropped: usize,
    max: usize,
}

impl Images {
    pub fn new(max: usize) -> Self {
        Images { kept: Vec::new(), dropped: 0, max }
    }

    pub fn add(&mut self, images: Vec<Image>) {
        for image in images {
            if self.kept.len() < self.max {
                self.kept.push(image);
            } else {
                self.dropped += 1;
            }
        }
    }
}
