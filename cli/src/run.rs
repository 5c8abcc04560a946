//! `exec-host run`: the script as a model's `Exec` call, and its result printed.

use std::io::Write;
use std::process::ExitCode;

use exec_host::{CallOptions, CancellationToken, Session, ToolCall, ToolResult};
use serde_json::json;

use crate::config::{ExecConfig, RunConfig};
use crate::session::{Start, cancel_on_stop_signals, start_session};
use crate::{UsageError, progress, terminal};

pub(crate) fn run(config: RunConfig) -> Result<ExitCode, UsageError> {
    let code = config.code;
    run_exec(config.exec, "started", async move |session: &Session, options: CallOptions| {
        // The script is a model's Exec call: authorized like one, reaching the same pool.
        let call = ToolCall::new(run_id(), exec_host::exec_tool::NAME, json!({ "code": code }));
        Ok(session.call_with(call, options).await)
    })
}

/// Runs one Exec as `run` and `resume` do: starts the session (its store when Execs may
/// park), shows progress, makes the call `exec` makes, prints the result and exits with its
/// status. `what` says what an interruption before the start prevented.
pub(crate) fn run_exec(
    config: ExecConfig,
    what: &str,
    exec: impl AsyncFnOnce(&Session, CallOptions) -> Result<ToolResult, UsageError>,
) -> Result<ExitCode, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let json = config.json;
    let result = runtime.block_on(async {
        // Listen first, so a signal during set-up ends the run cleanly too.
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let sandbox = config.sandbox.with_max_concurrent_execs(4);
        let store = match &config.store {
            Some(store) => Some((store.open(&config.session.workspace).await?, store.conversation.clone())),
            None => None,
        };
        let running_lease = config.store.as_ref().map_or(exec_host::DEFAULT_RUNNING_LEASE, |store| store.running_lease);
        let start = Start {
            store,
            values: config.values,
            running_lease,
            input: crate::input::for_this_process(config.accept_input_defaults),
            ..Start::for_the_author(crate::park::approver(config.on_ask))
        };
        let Some(session) = start_session(config.session, sandbox, config.limits, start, &abort, true).await? else {
            return Ok::<_, UsageError>(None);
        };
        let progress = progress::Progress::for_stderr(config.quiet);
        let options = CallOptions::new(abort);
        let options = match &progress {
            Some(progress) => progress.watch(options),
            None => options,
        };
        let result = exec(&session, options).await;
        if let Some(progress) = &progress {
            progress.finish();
        }
        // The result is out before the servers are closed: closing them never delays it.
        if let Ok(result) = &result {
            print_outcome(result, json, session.conversation(), progress.is_some());
        }
        session.shutdown().await;
        result.map(|result| Some(exit_status(&result)))
    })?;
    match result {
        None => {
            eprintln!("exec-host: interrupted before the script {what}");
            Ok(ExitCode::from(1))
        }
        Some(code) => Ok(code),
    }
}

/// 0 when the script succeeded, 3 when it parked, 1 otherwise.
pub(crate) fn exit_status(result: &ToolResult) -> ExitCode {
    match (result.ok(), &result.parked) {
        (true, _) => ExitCode::SUCCESS,
        (false, Some(_)) => ExitCode::from(crate::park::PARKED),
        (false, None) => ExitCode::from(1),
    }
}

/// [`print_result`], and for an Exec that parked how to resume it (under its
/// `conversation`). `console_shown`: the script's console lines went to the terminal as
/// they were written.
pub(crate) fn print_outcome(result: &ToolResult, as_json: bool, conversation: Option<&str>, console_shown: bool) {
    let paused = result.parked.as_ref().zip(conversation);
    let shown_handle = paused.map(|(parked, conversation)| crate::park::shown_handle(conversation, parked));
    print_result(result, as_json, shown_handle, console_shown);
    if let (Some((parked, conversation)), false) = (paused, as_json) {
        eprintln!(
            "exec-host: the script is parked; continue it with `exec-host resume {} --approve all` (or --approve ID, --deny ID)",
            terminal::err(&crate::park::shown_handle(conversation, parked))
        );
    }
}

/// The id of a run's `Exec` call: unique enough to name its kept result.
pub(crate) fn run_id() -> String {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("run-{millis}-{}", std::process::id())
}

/// `shown_handle`: a parked Exec's handle as the command line names it.
pub(crate) fn print_result(result: &ToolResult, as_json: bool, shown_handle: Option<String>, console_shown: bool) {
    let client = &result.client;
    let mut stdout = std::io::stdout().lock();
    if as_json {
        let mut object = result.report();
        // The command line names a parked Exec with its conversation (`resume` takes it so).
        if let Some(handle) = shown_handle {
            object["paused"]["handle"] = json!(handle);
        }
        let _ = writeln!(stdout, "{object}");
    } else {
        // A terminal that showed the console lines live is not shown them twice.
        let text = match console_shown && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            true => without_console(result),
            false => result.text().into(),
        };
        let _ = writeln!(stdout, "{}", terminal::out(&text));
        let _ = stdout.flush();
        if !client.images.is_empty() {
            eprintln!("[{} image(s) attached; --json prints them]", client.images.len());
        }
        if let Some(summary) = &client.summary {
            eprintln!("{}", terminal::err(summary));
        }
        for message in &result.messages {
            eprintln!("[{}]", terminal::err(&message.text()));
        }
    }
    if let Some(location) = result.compacted.as_ref().and_then(|compacted| compacted.location.as_ref()) {
        let total = result.compacted.as_ref().map_or(0, |compacted| compacted.total_chars);
        eprintln!(
            "[the whole result ({total} characters) is in {location}; read it part by part with: exec-host view {}]",
            result.call_id
        );
    }
}

/// The result's text without its console section (the lines as the script wrote them), or
/// the whole text when the section is not as written (cut, or the text was shortened).
fn without_console(result: &ToolResult) -> std::borrow::Cow<'_, str> {
    let text = result.text();
    if result.client.logs.is_empty() {
        return text.into();
    }
    let logs = result.client.logs.join("\n");
    if let Some(rest) = text.strip_prefix(&format!("Console output:\n{logs}\n\n")) {
        return rest.strip_prefix("Return value:\n").unwrap_or(rest).into();
    }
    text.strip_suffix(&format!("\n\nConsole output before the failure:\n{logs}")).unwrap_or(text).into()
}
