//! Conformance cases of the `exec-host:sandbox` world, run against a guest through this
//! host's runtime.
//!
//! A case is data (`conformance/README.md` in the repository): a script, the tool names it
//! may reach, the guest's run options, scripted answers for its calls and searches, and what
//! must come out at the WIT boundary: every `tools.call`, `tool-search.search` and
//! `console.write` the guest made, in order, and what `run` returned. The host's own
//! renderings (the text a model reads, summaries, caps) are not part of it: they are the
//! session's, tested with the session.
//!
//! This is the one place that drives [`Sandbox`] without a session: a case checks the
//! contract between a host and a guest, so its tools are the case's answers, not a pool
//! behind the funnel.

mod case;
mod scripted;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use self::case::{Case, CaseError, cases_in};
use self::scripted::ScriptedTools;
use crate::sandbox::runtime::{
    BoundaryEvent, ConsoleLevel, ExecOutcome, ExecRequest, Failure, Parking, Position, Sandbox, Uncaught,
};

/// The cases of this repository's `conformance/cases`, built into the binary.
pub fn builtin_cases() -> Vec<Case> {
    include!(concat!(env!("OUT_DIR"), "/conformance_cases.rs"))
        .iter()
        .map(|(name, script, data)| {
            // The build checks nothing of the data; a case that does not parse is a bug of
            // this build, and its test fails with the reason.
            Case::parse(name, script.to_string(), data).unwrap_or_else(|why| panic!("built-in {why}"))
        })
        .collect()
}

/// How a case went.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Everything the case expects came out.
    Pass,
    /// What differed, one line per difference.
    Fail(Vec<String>),
    /// The case has no `expect` yet (see `bless`).
    Unblessed,
}

/// A case's run: what came out at the boundary, and the verdict.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// `{"events": [...], "result": {...}}`, in the case format.
    pub observed: Value,
    pub verdict: Verdict,
}

/// Runs `case` on `sandbox` and compares what came out with what it expects.
pub async fn run_case(sandbox: &Sandbox, case: &Case) -> CaseRun {
    let spec = &case.spec;
    let request = ExecRequest {
        code: case.script.clone(),
        limits: spec.host.clone().unwrap_or_default(),
        abort: CancellationToken::new(),
        watcher: None,
        console: None,
        trace: true,
        run_options: Some(spec.options.clone()),
        parking: Parking::Never,
        checkpoints: None,
    };
    let abort = request.abort.clone();
    let exec = sandbox.exec(request, ScriptedTools::new(spec));
    tokio::pin!(exec);
    // Whatever the script waits for (a timer of a day, say), the case ends: aborted at the
    // deadline, and failed for it.
    let (outcome, overran) = tokio::select! {
        outcome = &mut exec => (outcome, false),
        () = tokio::time::sleep(CASE_DEADLINE) => {
            abort.cancel();
            (exec.await, true)
        }
    };
    let observed = observed(&outcome);
    let verdict = match &spec.expect {
        _ if overran => Verdict::Fail(vec![format!("the case did not finish within {CASE_DEADLINE:?} and was aborted")]),
        None => Verdict::Unblessed,
        Some(expect) => match differences(expect, &observed) {
            differences if differences.is_empty() => Verdict::Pass,
            differences => Verdict::Fail(differences),
        },
    };
    CaseRun { observed, verdict }
}

/// Longest one case may run, waiting included.
pub const CASE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Writes `observed` into the case's file as its `expect`, keeping every other field.
pub fn bless(case: &Case, observed: &Value) -> Result<(), CaseError> {
    let Some(path) = &case.path else { return Err(CaseError::BuiltIn { name: case.name.clone() }) };
    let mut document = case.spec.document.clone();
    document.insert("expect".into(), observed.clone());
    // A map of JSON values always writes as JSON.
    let text = serde_json::to_string_pretty(&Value::Object(document)).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(|source| CaseError::Unwritable { path: path.clone(), source })
}

/// What came out of a run, in the case format.
fn observed(outcome: &ExecOutcome) -> Value {
    let mut events: Vec<Value> = outcome.trace.iter().flat_map(|trace| trace.events.iter().map(event)).collect();
    if let Some(trace) = outcome.trace.as_ref().filter(|trace| trace.dropped > 0) {
        events.push(json!({ "dropped": trace.dropped }));
    }
    json!({ "events": events, "result": result(&outcome.result) })
}

fn event(event: &BoundaryEvent) -> Value {
    let arguments = |args_json: &str| match serde_json::from_str::<Value>(args_json) {
        Ok(args) => json!(args),
        Err(_) => json!({ "args_json": args_json }),
    };
    match event {
        BoundaryEvent::Call { name, args_json } => json!({ "call": name, "args": arguments(args_json) }),
        BoundaryEvent::Search { args_json } => json!({ "search": arguments(args_json) }),
        BoundaryEvent::Console { level, message, cut_units } => {
            let mut line = Map::new();
            line.insert("console".into(), json!(level_name(*level)));
            line.insert("message".into(), json!(message));
            if *cut_units != 0 {
                line.insert("cut_units".into(), json!(cut_units));
            }
            Value::Object(line)
        }
        BoundaryEvent::Load { key } => json!({ "load": key }),
        BoundaryEvent::Store { key, value_json: None } => json!({ "store": key }),
        BoundaryEvent::Store { key, value_json: Some(value) } => json!({ "store": key, "value": arguments(value) }),
    }
}

fn level_name(level: ConsoleLevel) -> &'static str {
    match level {
        ConsoleLevel::Log => "log",
        ConsoleLevel::Info => "info",
        ConsoleLevel::Warn => "warn",
        ConsoleLevel::Error => "error",
        ConsoleLevel::Debug => "debug",
    }
}

/// An uncaught error as a case names it: its text and its frames, flat.
fn uncaught(kind: &str, error: &Uncaught) -> Value {
    let frames: Vec<Value> = error
        .frames
        .iter()
        .map(|frame| json!({ "function": frame.function, "line": frame.position.line, "column": frame.position.column }))
        .collect();
    json!({ "kind": kind, "error": error.error, "frames": frames })
}

/// `run`'s result by kind; the host's own endings (budget, nested wait, a trap) as theirs.
fn result(result: &Result<Option<Value>, Failure>) -> Value {
    match result {
        Ok(Some(value)) => json!({ "kind": "value", "value": value }),
        Ok(None) => json!({ "kind": "undefined" }),
        Err(Failure::Syntax(error)) => {
            let mut syntax = json!({ "kind": "syntax", "message": error.message });
            if let Some(Position { line, column }) = error.position {
                syntax["line"] = json!(line);
                syntax["column"] = json!(column);
            }
            if error.unclosed {
                syntax["unclosed"] = json!(true);
            }
            syntax
        }
        Err(Failure::Thrown(error)) => uncaught("thrown", error),
        Err(Failure::Unserializable(error)) => uncaught("unserializable", error),
        Err(Failure::NeverSettles) => json!({ "kind": "never-settles" }),
        Err(Failure::BudgetExceeded { .. }) => json!({ "kind": "budget-exceeded" }),
        Err(Failure::NestedWaitExceeded { .. }) => json!({ "kind": "nested-wait-exceeded" }),
        Err(Failure::Crashed(_)) => json!({ "kind": "trap" }),
        Err(other) => json!({ "kind": "host-error", "message": other.message() }),
    }
}

/// Every way `observed` differs from `expect`, one line each.
fn differences(expect: &Value, observed: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    let empty = Vec::new();
    let wanted = expect.get("events").and_then(Value::as_array).unwrap_or(&empty);
    let got = observed.get("events").and_then(Value::as_array).unwrap_or(&empty);
    for index in 0..wanted.len().max(got.len()) {
        match (wanted.get(index), got.get(index)) {
            (Some(w), Some(g)) if w == g => {}
            (Some(w), Some(g)) => differences.push(format!("event {index}: expected {w}, got {g}")),
            (Some(w), None) => differences.push(format!("event {index}: expected {w}, got no more events")),
            (None, Some(g)) => differences.push(format!("event {index}: expected no more events, got {g}")),
            (None, None) => {}
        }
    }
    if expect.get("result") != observed.get("result") {
        differences.push(format!(
            "result: expected {}, got {}",
            expect.get("result").unwrap_or(&Value::Null),
            observed.get("result").unwrap_or(&Value::Null)
        ));
    }
    differences
}
