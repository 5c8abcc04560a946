//! What operators of replicas watch: Prometheus metrics (OpenMetrics text) at `/metrics` of
//! `serve --http`, counted by the gateway as each call ends. One owner, [`Metrics`], for
//! every figure; the gateway tells it what happened, never the other way round.
//!
//! | metric | labels |
//! | --- | --- |
//! | `exec_host_calls_total` | `tool` (`exec`, `flat`), `outcome` (`ok`, `error`, `parked`, `busy`, `task`) |
//! | `exec_host_call_duration_seconds` (histogram) | `tool` |
//! | `exec_host_nested_calls_total` | `outcome` (`succeeded`, a failure's stage, `unfinished`) |
//! | `exec_host_approvals_total` | `event` (`parked`, `retried`, `refused`) |
//! | `exec_host_tasks_total` | `event` (`created`, `input_required`, `completed`, `failed`, `cancelled`, `taken_up`) |
//! | `exec_host_store_errors_total` | |

use std::time::Duration;

use exec_host::gateway::events::{ApprovalEvent, GatewayObserver, QuestionEvent, TaskEvent};
use exec_host::{CallOutcome, Stage, ToolResult};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum ToolKind {
    exec,
    flat,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum CallEnd {
    ok,
    error,
    parked,
    busy,
    /// The Exec ran on as a task.
    task,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: ToolKind,
    outcome: CallEnd,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: ToolKind,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum NestedEnd {
    succeeded,
    discovery,
    params,
    authorization,
    execution,
    projection,
    unfinished,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NestedLabels {
    outcome: NestedEnd,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApprovalLabels {
    event: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuestionLabels {
    event: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    event: &'static str,
}

/// The server's figures.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    durations: Family<ToolLabels, Histogram, fn() -> Histogram>,
    nested: Family<NestedLabels, Counter>,
    approvals: Family<ApprovalLabels, Counter>,
    questions: Family<QuestionLabels, Counter>,
    tasks: Family<TaskLabels, Counter>,
    store_errors: Counter,
}

/// Seconds, from 1 ms to about a minute.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("exec_host");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register("calls", "Tool calls of MCP clients, by tool and how they ended", calls.clone());
        let durations = Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(duration_histogram);
        registry.register("call_duration_seconds", "Time from a tool call's arrival to its answer", durations.clone());
        let nested = Family::<NestedLabels, Counter>::default();
        registry.register("nested_calls", "Tool calls made by Exec scripts, by how they ended", nested.clone());
        let approvals = Family::<ApprovalLabels, Counter>::default();
        registry.register("approvals", "Approvals of clients of MCP 2026-07-28: parked, retried, refused", approvals.clone());
        let questions = Family::<QuestionLabels, Counter>::default();
        registry.register(
            "questions",
            "Downstream servers' questions passed on to clients of MCP 2026-07-28: asked, answered",
            questions.clone(),
        );
        let tasks = Family::<TaskLabels, Counter>::default();
        registry.register("tasks", "Tasks of clients of MCP 2026-07-28, by what happened to them", tasks.clone());
        let store_errors = Counter::default();
        registry.register(
            "store_errors",
            "Parked Execs and tasks the state store could not keep or give back",
            store_errors.clone(),
        );
        Metrics { registry, calls, durations, nested, approvals, questions, tasks, store_errors }
    }

    /// A call of `tool` ended with `result` (`parked`: its client was sent forms).
    pub fn call_ended(&self, tool: &str, result: &ToolResult, parked: bool) {
        let kind = if tool == "Exec" { ToolKind::exec } else { ToolKind::flat };
        let outcome = match (parked, result.is_error()) {
            (true, _) => CallEnd::parked,
            (false, false) => CallEnd::ok,
            (false, true) => CallEnd::error,
        };
        self.calls.get_or_create(&CallLabels { tool: kind.clone(), outcome }).inc();
        self.durations.get_or_create(&ToolLabels { tool: kind }).observe(result.client.duration.as_secs_f64());
        for call in &result.client.calls {
            let outcome = match &call.outcome {
                CallOutcome::Succeeded => NestedEnd::succeeded,
                CallOutcome::Failed { stage: Stage::Discovery, .. } => NestedEnd::discovery,
                CallOutcome::Failed { stage: Stage::Params, .. } => NestedEnd::params,
                CallOutcome::Failed { stage: Stage::Authorization, .. } => NestedEnd::authorization,
                CallOutcome::Failed { stage: Stage::Projection, .. } => NestedEnd::projection,
                CallOutcome::Failed { .. } => NestedEnd::execution,
                _ => NestedEnd::unfinished,
            };
            self.nested.get_or_create(&NestedLabels { outcome }).inc();
        }
    }

    /// An Exec that answered its call as a task after `waited`.
    pub fn became_task(&self, waited: Duration) {
        self.calls.get_or_create(&CallLabels { tool: ToolKind::exec, outcome: CallEnd::task }).inc();
        self.durations.get_or_create(&ToolLabels { tool: ToolKind::exec }).observe(waited.as_secs_f64());
    }

    /// A call refused as `busy:` before it ran.
    pub fn busy(&self, tool: &str, waited: Duration) {
        let kind = if tool == "Exec" { ToolKind::exec } else { ToolKind::flat };
        self.calls.get_or_create(&CallLabels { tool: kind.clone(), outcome: CallEnd::busy }).inc();
        self.durations.get_or_create(&ToolLabels { tool: kind }).observe(waited.as_secs_f64());
    }

    /// The figures in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The gateway's events, each counted under its name.
impl GatewayObserver for Metrics {
    fn approval(&self, event: ApprovalEvent) {
        self.approvals.get_or_create(&ApprovalLabels { event: event.name() }).inc();
    }

    fn question(&self, event: QuestionEvent) {
        self.questions.get_or_create(&QuestionLabels { event: event.name() }).inc();
    }

    fn task(&self, event: TaskEvent) {
        self.tasks.get_or_create(&TaskLabels { event: event.name() }).inc();
    }

    fn store_error(&self) {
        self.store_errors.inc();
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
