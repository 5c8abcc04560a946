//! `exec-host run`: the script as a model's `Exec` call, and its result printed.

use std::io::Write;
use std::process::ExitCode;

use exec_host::{CallOptions, CancellationToken, ToolCall, ToolResult};
use serde_json::{Value, json};

use crate::config::RunConfig;
use crate::session::{Start, cancel_on_stop_signals, start_session};
use crate::{UsageError, progress, terminal};

pub(crate) fn run(config: RunConfig) -> Result<ExitCode, UsageError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let json = config.json;
    let result = runtime.block_on(async {
        // Listen first, so a signal during set-up ends the run cleanly too.
        let abort = CancellationToken::new();
        cancel_on_stop_signals(abort.clone())?;
        let sandbox = config.sandbox.with_max_concurrent_execs(4);
        let Some(session) = start_session(config.session, sandbox, config.limits, Start::for_the_author(), &abort).await? else {
            return Ok::<_, UsageError>(None);
        };
        // The script is a model's Exec call: authorized like one, reaching the same pool.
        let call = ToolCall::new(run_id(), exec_host::exec_tool::NAME, json!({ "code": config.code }));
        let progress = progress::Progress::for_stderr(config.quiet);
        let options = CallOptions::new(abort);
        let options = match &progress {
            Some(progress) => progress.watch(options),
            None => options,
        };
        let result = session.call_with(call, options).await;
        if let Some(progress) = &progress {
            progress.finish();
        }
        // The result is out before the servers are closed: closing them never delays it.
        print_result(&result, json);
        session.shutdown().await;
        Ok(Some(result.ok()))
    })?;
    match result {
        None => {
            eprintln!("exec-host: interrupted before the script started");
            Ok(ExitCode::from(1))
        }
        Some(true) => Ok(ExitCode::SUCCESS),
        Some(false) => Ok(ExitCode::from(1)),
    }
}

/// The id of a run's `Exec` call: unique enough to name its kept result.
pub(crate) fn run_id() -> String {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("run-{millis}-{}", std::process::id())
}

pub(crate) fn print_result(result: &ToolResult, as_json: bool) {
    let client = &result.client;
    let mut stdout = std::io::stdout().lock();
    if as_json {
        let details: Vec<Value> = client
            .calls
            .iter()
            .map(|call| {
                json!({
                    "name": call.name,
                    "ok": call.ok(),
                    "stage": call.stage(),
                    "ms": (call.duration.as_secs_f64() * 1e6).round() / 1e3,
                })
            })
            .collect();
        let object = json!({
            "ok": result.ok(),
            "text": result.text(),
            "value": result.value().cloned().unwrap_or(Value::Null),
            "logs": client.logs,
            "images": client.images,
            "calls": result.call_names(),
            "call_details": details,
            "messages": result.messages.iter().map(exec_host::Message::text).collect::<Vec<_>>(),
            "summary": result.summary(),
            "error": client.failure.as_ref().map(|failure| &failure.message),
        });
        let _ = writeln!(stdout, "{object}");
    } else {
        let _ = writeln!(stdout, "{}", terminal::out(result.text()));
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
        eprintln!("[the whole result ({total} characters) is in {location}]");
    }
}
