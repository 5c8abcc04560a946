//! Deterministic fixture tools for the integration tests, the conformance cases and the
//! benchmarks, and a small harness that runs scripts through the real guest and host.
//!
//! The fixture tools are the peers' benchmark tools (`echo`, `add`, `sleep`, `blob`) plus
//! one tool per output shape the spec distinguishes (structured, text only, empty, image)
//! and tools that fail, never return, or count their calls.

pub mod attack;
pub mod host_cases;
pub mod nginx;
pub mod redis;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use exec_host::CancellationToken;
use exec_host::{
    CallContext, CallOptions, Image, Limits, Origin, Sandbox, Session, SessionBuilder, Tool, ToolCall, ToolDefinition, ToolError,
    ToolOutput, ToolResult,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::OnceCell;

/// Largest blob the `blob` fixture makes, as in the peers' harness.
pub const MAX_BLOB: u64 = 64 * 1024 * 1024;

/// A 1x1 transparent PNG, base64-encoded.
pub const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

type Handler = dyn Fn(Map<String, Value>, CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool made of a definition and a function.
pub struct FixtureTool {
    definition: ToolDefinition,
    handler: Box<Handler>,
}

impl FixtureTool {
    /// A shared tool from a name, a description, an input schema and a handler; it asks to
    /// be deferred, so it sits in the pool behind `Exec`.
    pub fn shared(
        name: &str,
        description: &str,
        schema: Value,
        handler: impl Fn(Map<String, Value>, CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync + 'static,
    ) -> Arc<dyn Tool> {
        let definition = ToolDefinition::new(name, description, schema).expect("fixture schemas are objects").deferred(true);
        Self::with_definition(definition, handler)
    }

    /// A shared tool from a whole definition (deferral intent, hints, output schema).
    pub fn with_definition(
        definition: ToolDefinition,
        handler: impl Fn(Map<String, Value>, CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync + 'static,
    ) -> Arc<dyn Tool> {
        Arc::new(FixtureTool { definition, handler: Box::new(handler) })
    }
}

impl Tool for FixtureTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        (self.handler)(args, context)
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn number(args: &Map<String, Value>, key: &str) -> Result<f64, ToolError> {
    args.get(key).and_then(Value::as_f64).ok_or_else(|| ToolError::params(format!("`{key}` must be a number")))
}

/// Counts calls of the `count` fixture, so tests can see which calls took effect.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `hop`: answers once a task spawned on the runtime has run, so the call is pending for one
/// trip through the executor and no longer (a 0 ms `sleep` waits for the timer's next
/// millisecond). Not among [`fixture_tools`]: the benchmarks add it where they need it.
pub fn hop_tool() -> Arc<dyn Tool> {
    FixtureTool::shared("hop", "Answers \"hopped\" after one trip through the executor.", object(json!({}), &[]), |_, _| {
        Box::pin(async move {
            tokio::spawn(async {}).await.map_err(|e| ToolError::execution(format!("the hop did not run: {e}")))?;
            Ok(ToolOutput::text("hopped"))
        })
    })
}

/// How long `rendezvous` waits for the others before it gives up.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(10);

/// The fixture tools. `counter` counts the calls of `count`.
pub fn fixture_tools(counter: &Counter) -> Vec<Arc<dyn Tool>> {
    let counter = counter.clone();
    let arrived = Arc::new(tokio::sync::watch::Sender::new(0u64));
    vec![
        // Completes only once `n` calls of it are in flight at the same time: proof that
        // calls overlap, without measuring time.
        FixtureTool::shared(
            "rendezvous",
            "Waits until `n` calls of it are in flight together, then answers how many arrived.",
            object(json!({"n": {"type": "integer"}}), &["n"]),
            move |args, _| {
                let arrived = arrived.clone();
                Box::pin(async move {
                    let n = args.get("n").and_then(Value::as_u64).ok_or_else(|| ToolError::params("`n` must be an integer"))?;
                    arrived.send_modify(|count| *count += 1);
                    let mut watch = arrived.subscribe();
                    match tokio::time::timeout(RENDEZVOUS_TIMEOUT, watch.wait_for(|count| *count >= n)).await {
                        Ok(Ok(count)) => Ok(ToolOutput::structured(json!(*count))),
                        _ => {
                            Err(ToolError::execution(format!("only {} of {n} calls were in flight together", *arrived.borrow())))
                        }
                    }
                })
            },
        ),
        FixtureTool::shared("echo", "Returns `value` as its structured output.", object(json!({"value": {}}), &[]), |args, _| {
            Box::pin(async move { Ok(ToolOutput::structured(args.get("value").cloned().unwrap_or(Value::Null))) })
        }),
        FixtureTool::shared(
            "add",
            "Adds two numbers.",
            object(json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"]),
            |args, _| {
                Box::pin(async move {
                    let sum = number(&args, "a")? + number(&args, "b")?;
                    Ok(ToolOutput::structured(serde_json::Number::from_f64(sum).map(Value::Number).unwrap_or(Value::Null)))
                })
            },
        ),
        FixtureTool::shared(
            "busy",
            "Works `ms` milliseconds without yielding (a synchronous tool), then answers \"done\".",
            object(json!({"ms": {"type": "number"}}), &["ms"]),
            |args, _| {
                Box::pin(async move {
                    let until = std::time::Instant::now() + Duration::from_millis(number(&args, "ms")?.max(0.0) as u64);
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    Ok(ToolOutput::text("done"))
                })
            },
        ),
        FixtureTool::shared(
            "sleep",
            "Waits `ms` milliseconds, then answers \"slept\".",
            object(json!({"ms": {"type": "number"}}), &["ms"]),
            |args, _| {
                Box::pin(async move {
                    let ms = number(&args, "ms")?;
                    tokio::time::sleep(Duration::from_millis(ms.max(0.0) as u64)).await;
                    Ok(ToolOutput::text("slept"))
                })
            },
        ),
        FixtureTool::shared(
            "blob",
            "Returns a string of `bytes` x characters.",
            object(json!({"bytes": {"type": "integer"}}), &["bytes"]),
            |args, _| {
                Box::pin(async move {
                    match args.get("bytes").and_then(Value::as_u64) {
                        Some(bytes) if bytes <= MAX_BLOB => Ok(ToolOutput::text("x".repeat(bytes as usize))),
                        _ => Err(ToolError::params(format!("bytes must be an integer in [0, {MAX_BLOB}]"))),
                    }
                })
            },
        ),
        FixtureTool::shared(
            "text_only",
            "Answers with text only.",
            object(json!({"text": {"type": "string"}}), &[]),
            |args, _| {
                Box::pin(async move { Ok(ToolOutput::text(args.get("text").and_then(Value::as_str).unwrap_or("plain text"))) })
            },
        ),
        FixtureTool::shared("structured", "Answers with structured content and a text.", object(json!({}), &[]), |args, _| {
            Box::pin(async move {
                Ok(ToolOutput::structured(json!({"received": args, "kind": "structured"})).with_text("ignored text"))
            })
        }),
        FixtureTool::shared("empty", "Answers with nothing at all.", object(json!({}), &[]), |_, _| {
            Box::pin(async move { Ok(ToolOutput::empty()) })
        }),
        FixtureTool::shared("image", "Answers with one image and nothing else.", object(json!({}), &[]), |_, _| {
            Box::pin(async move { Ok(ToolOutput::empty().with_image(Image::new("image/png", PIXEL_PNG))) })
        }),
        FixtureTool::shared(
            "fail",
            "Always fails with `message`.",
            object(json!({"message": {"type": "string"}}), &[]),
            |args, _| {
                Box::pin(async move {
                    Err(ToolError::execution(args.get("message").and_then(Value::as_str).unwrap_or("the fixture failed")))
                })
            },
        ),
        FixtureTool::shared("never", "Never answers (until cancelled).", object(json!({}), &[]), |_, context| {
            Box::pin(async move {
                context.cancel.cancelled().await;
                Err(ToolError::execution("cancelled"))
            })
        }),
        FixtureTool::shared("count", "Counts its calls; answers the count so far.", object(json!({}), &[]), move |_, _| {
            let counter = counter.clone();
            Box::pin(async move { Ok(ToolOutput::structured(json!(counter.0.fetch_add(1, Ordering::SeqCst) + 1))) })
        }),
        FixtureTool::shared(
            "origin",
            "Answers who called it: the model directly, or a script of which Exec.",
            object(json!({}), &[]),
            |_, context| {
                let origin = match &context.origin {
                    Origin::Direct { call_id } => json!({"from": "model", "call": &**call_id}),
                    Origin::Nested { exec_call_id, .. } => json!({"from": "script", "exec": &**exec_call_id}),
                    _ => json!({"from": "unknown"}),
                };
                Box::pin(async move { Ok(ToolOutput::structured(origin)) })
            },
        ),
    ]
}

/// The sandbox shared by every test of a process (compiling it once is the slow part). Its
/// time zone is UTC, whatever the machine's, so dates format the same everywhere.
pub async fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceCell<Sandbox> = OnceCell::const_new();
    SANDBOX
        .get_or_init(|| async {
            let options = exec_host::SandboxOptions::default().with_time_zone("UTC");
            Sandbox::with_options(options).await.expect("the sandbox sets up")
        })
        .await
}

/// A session on a temporary workspace with the builtin tools and the fixtures (all in the
/// pool behind `Exec`), on the shared sandbox. Scripts run as a model's `Exec` calls.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub session: Session,
    pub counter: Counter,
}

/// Ids of the calls the harness makes, unique in the process.
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// A fresh tool call id.
pub fn call_id() -> String {
    format!("call_{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed))
}

impl Harness {
    pub async fn new() -> Self {
        Self::with(|builder| builder).await
    }

    /// A harness whose session declares every tool flat (`enableExec` off), so the model
    /// calls them directly.
    pub async fn flat() -> Self {
        let off = exec_host::settings::Layer::from_value(json!({"enableExec": false})).expect("valid settings");
        Self::with(|builder| builder.managed_settings(off)).await
    }

    pub async fn with_limits(limits: Limits) -> Self {
        Self::with(|builder| builder.limits(limits)).await
    }

    /// A harness whose session `configure` sets up further (limits, settings, servers).
    pub async fn with(configure: impl FnOnce(SessionBuilder) -> SessionBuilder) -> Self {
        let dir = tempfile::tempdir().expect("a temporary workspace");
        let counter = Counter::default();
        let session = configure(Self::builder(dir.path(), &counter).await).build().await.expect("the session starts");
        Harness { dir, session, counter }
    }

    /// A harness around a session set up elsewhere (its workspace, if any, is its own).
    pub fn from_session(session: Session) -> Self {
        Harness { dir: tempfile::tempdir().expect("a temporary folder"), session, counter: Counter::default() }
    }

    /// The builder of a harness's session: the workspace, the fixtures, the shared sandbox,
    /// starting in `bypassPermissions` as `exec-host run` does (rules still apply; the
    /// permission tests choose their own mode).
    pub async fn builder(dir: &std::path::Path, counter: &Counter) -> SessionBuilder {
        Session::builder()
            .workspace(dir)
            .tools(fixture_tools(counter))
            .sandbox(sandbox().await.clone())
            .starting_permission_mode(exec_host::settings::PermissionMode::BypassPermissions)
    }

    /// Runs `code` as an `Exec` call of the model's.
    pub async fn run(&self, code: &str) -> ToolResult {
        self.run_options(code, CallOptions::default()).await
    }

    /// Runs `code` under other limits, in a session on the same workspace and counter.
    pub async fn run_with(&self, code: &str, limits: Limits) -> ToolResult {
        let session =
            Self::builder(self.dir.path(), &self.counter).await.limits(limits).build().await.expect("the session starts");
        session.call(exec_call(code), CancellationToken::new()).await
    }

    /// Runs `code` in a fresh harness and returns what it returned; panics when it failed.
    pub async fn value_of(code: &str) -> Value {
        let outcome = Self::new().await.run(code).await;
        assert!(outcome.ok(), "{}", outcome.text());
        outcome.value().cloned().unwrap_or(Value::Null)
    }

    pub async fn run_options(&self, code: &str, options: CallOptions) -> ToolResult {
        self.session.call_with(exec_call(code), options).await
    }

    /// Runs a script that waits in `rendezvous({n})` and then runs `then`; does `meanwhile`
    /// once the script waits, then releases it with a second Exec's rendezvous call, and
    /// returns the first Exec's result. The fixture counts every arrival of the harness, so each use
    /// takes an `n` two higher than the last.
    pub async fn run_while<F: std::future::Future<Output = ()>>(
        &self,
        n: u32,
        then: &str,
        meanwhile: impl FnOnce() -> F,
    ) -> ToolResult {
        let code = format!("await tools.rendezvous({{ n: {n} }}); {then}");
        let (arrived, mut waiting) = tokio::sync::watch::channel(false);
        let options = CallOptions::default().on_nested_call(move |calls| {
            if calls.len() == 1 {
                let _ = arrived.send(true);
            }
        });
        let exec = self.run_options(&code, options);
        let steer = async {
            within(30, waiting.wait_for(|arrived| *arrived)).await.expect("the script reached its rendezvous");
            meanwhile().await;
            self.run(&format!("return await tools.rendezvous({{ n: {n} }})")).await;
        };
        within(60, async { tokio::join!(exec, steer).0 }).await
    }

    /// Every tool the session may call now, flat or pooled.
    pub fn available(&self) -> Vec<ToolDefinition> {
        self.session.pool().expect("valid settings").available().cloned().collect()
    }

    /// A direct call of the model's of tool `name`.
    /// What the script's `call` (an expression) came to: "ok" when it resolved, else the
    /// rejection's message.
    pub async fn attempt(&self, call: &str) -> String {
        let code = format!("try {{ await {call}; return 'ok'; }} catch (e) {{ return e.message; }}");
        let outcome = within(30, self.run(&code)).await;
        outcome.value().and_then(Value::as_str).unwrap_or_else(|| panic!("{}", outcome.text())).to_string()
    }

    pub async fn call(&self, name: &str, input: Value) -> ToolResult {
        self.session.call(ToolCall::new(call_id(), name, input), CancellationToken::new()).await
    }
}

/// An `Exec` call of `code`.
pub fn exec_call(code: &str) -> ToolCall {
    ToolCall::new(call_id(), "Exec", json!({ "code": code }))
}

/// Hang guard: a test that should finish promptly fails instead of hanging CI.
pub async fn within<T>(seconds: u64, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), future).await.expect("the Exec did not end")
}

/// Call options whose abort fires `ms` milliseconds after the script's call of `tool`
/// reached the host, so it always lands while the script runs (whatever set-up took).
pub fn abort_after_call(abort: CancellationToken, tool: &'static str, ms: u64) -> CallOptions {
    let trigger = abort.clone();
    CallOptions::new(abort).on_nested_call(move |calls| {
        if calls.last().map(|call| call.name.as_str()) == Some(tool) {
            let trigger = trigger.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                trigger.cancel();
            });
        }
    })
}

/// An approver for tests: records every request, waits `delay`, then answers with `answer`.
pub struct TestApprover {
    pub asked: std::sync::Mutex<Vec<exec_host::ApprovalRequest>>,
    answer: Box<dyn Fn(&exec_host::ApprovalRequest) -> exec_host::Approval + Send + Sync>,
    delay: Duration,
}

impl TestApprover {
    pub fn new(answer: impl Fn(&exec_host::ApprovalRequest) -> exec_host::Approval + Send + Sync + 'static) -> Arc<Self> {
        Self::slow(Duration::ZERO, answer)
    }

    pub fn slow(
        delay: Duration,
        answer: impl Fn(&exec_host::ApprovalRequest) -> exec_host::Approval + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(TestApprover { asked: Default::default(), answer: Box::new(answer), delay })
    }

    /// The tools asked about, in order.
    pub fn tools(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|request| request.tool.clone()).collect()
    }
}

/// A shared test approver, as a session takes it.
pub struct SharedApprover(pub Arc<TestApprover>);

impl exec_host::Approver for SharedApprover {
    fn approve(&self, request: exec_host::ApprovalRequest) -> BoxFuture<'static, exec_host::Approval> {
        let approver = self.0.clone();
        Box::pin(async move {
            tokio::time::sleep(approver.delay).await;
            let answer = (approver.answer)(&request);
            approver.asked.lock().unwrap().push(request);
            answer
        })
    }
}
