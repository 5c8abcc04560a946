//! `exec-host tools` and `exec-host search`: what the session's pool holds, as a model and
//! a script would see it.

use std::process::ExitCode;

use exec_host::{Pool, Session, exec_tool};
use serde_json::json;

use crate::config::SessionConfig;
use crate::session::with_session;
use crate::{UsageError, terminal};

/// `exec-host tools`; `dts` is `Some` for `--dts`, with the script of `--script`.
pub(crate) fn tools(
    config: SessionConfig,
    as_json: bool,
    dts: Option<Option<String>>,
    stats: bool,
) -> Result<ExitCode, UsageError> {
    let text = with_session(config, async |session| {
        let pool = session.pool().map_err(UsageError::from)?;
        Ok(if let Some(script) = dts {
            let declarations = session.declaration_file().map_err(UsageError::from)?;
            match script {
                Some(script) => exec_host::typings::checkable_script(&script, &declarations),
                None => declarations,
            }
        } else if stats {
            let prepared = session.prepare(&[]).map_err(UsageError::from)?;
            declaration_stats(&pool, prepared.append.first())
        } else if as_json {
            let prepared = session.prepare(&[]).map_err(UsageError::from)?;
            let announcement = prepared.append.first().map(|message| message.text());
            let object = json!({
                "exec": pool.exec_status(),
                "declarations": &*prepared.declarations,
                "pool": pool.names().collect::<Vec<_>>(),
                "announcement": announcement,
                "guidance": &*prepared.guidance,
                "settings": settings_in_force(session),
            });
            format!("{object}\n")
        } else {
            describe_pool(session, &pool)?
        })
    })?;
    terminal::print(&text);
    Ok(ExitCode::SUCCESS)
}

/// `exec-host tools` for people: what is declared, what is pooled, Exec's description.
pub(crate) fn describe_pool(session: &Session, pool: &Pool) -> Result<String, UsageError> {
    let mut out = String::new();
    let prepared = session.prepare(&[]).map_err(UsageError::from)?;
    let status = pool.exec_status();
    if pool.exec_declared() {
        out += &format!("{status}; {} tools are in the pool behind it.\n", pool.pooled().len());
    } else {
        out += &format!("{status}; every tool is declared flat.\n");
    }
    out += &format!("\nDeclared to the model ({}):\n", prepared.declarations.len());
    for declaration in prepared.declarations.iter() {
        out += &format!("  {}\n", declaration.name);
    }
    if pool.exec_declared() {
        out += &format!("\nPool ({}), reachable from Exec scripts and found with tools.ToolSearch:\n", pool.pooled().len());
        for name in pool.names() {
            out += &format!("  {name}\n");
        }
        out += "\nExec's description (the same for every pool):\n";
        out += &indented(exec_tool::description());
    }
    if let Some(announcement) = prepared.append.first() {
        out += "\nAnnouncement appended to the first request of a conversation:\n";
        out += &indented(&announcement.text());
    }
    if !prepared.guidance.is_empty() {
        out += "\nGuidance for the system prompt:\n";
        out += &indented(&prepared.guidance);
    }
    let files = settings_in_force(session);
    out += &if files.is_empty() {
        "\nSettings: none found, defaults apply.\n".to_string()
    } else {
        format!("\nSettings: {}\n", files.join(", "))
    };
    Ok(out)
}

pub(crate) fn indented(text: &str) -> String {
    text.lines().map(|line| format!("{}\n", format!("  | {line}").trim_end())).collect()
}

/// The settings files that exist, highest layer first.
pub(crate) fn settings_in_force(session: &Session) -> Vec<String> {
    session.settings_files().iter().filter(|file| file.is_file()).map(|file| file.display().to_string()).collect()
}

/// `exec-host tools --stats`: the declarations' size with Exec and with every tool flat,
/// and the announcement that Exec mode adds once per conversation, in bytes and in tokens
/// of a real tokenizer.
pub(crate) fn declaration_stats(exec_pool: &Pool, announcement: Option<&exec_host::Message>) -> String {
    let tokenizer = tiktoken_rs::o200k_base_singleton();
    let tokens = |text: &str| tokenizer.encode_with_special_tokens(text).len();
    let size = |declarations: &[exec_host::Declaration]| {
        let text = serde_json::to_string(declarations).unwrap_or_default();
        (declarations.len(), text.len(), tokens(&text))
    };
    let declared = exec_pool.declarations();
    let exec_alone: Vec<_> =
        declared.iter().filter(|declaration| declaration.name == exec_host::exec_tool::NAME).cloned().collect();
    let (exec_count, exec_bytes, exec_tokens) = size(&declared);
    let (flat_count, flat_bytes, flat_tokens) = size(&exec_pool.declarations_without_exec());
    let row =
        |label: &str, (count, bytes, tokens): (usize, usize, usize)| format!("{label:<14}{count:>8}{bytes:>10}{tokens:>10}\n");
    let mut out = format!("{:<14}{:>8}{:>10}{:>10}\n", "", "count", "bytes", "tokens");
    if !exec_alone.is_empty() {
        out += &row("Exec alone", size(&exec_alone));
    }
    out += &row("Exec mode", (exec_count, exec_bytes, exec_tokens));
    out += &row("flat mode", (flat_count, flat_bytes, flat_tokens));
    if let Some(announcement) = announcement {
        out += &row("announcement", (exec_pool.pooled().len(), announcement.text().len(), tokens(&announcement.text())));
    }
    if !exec_pool.exec_declared() {
        out += &format!("{}: both modes declare the same tools.\n", exec_pool.exec_status());
    } else if exec_bytes <= flat_bytes {
        out += &format!(
            "Exec mode declares {:.1}x fewer tokens: {} tokens ({} bytes) less in every request; {} tools sit in the pool.\n",
            flat_tokens as f64 / exec_tokens.max(1) as f64,
            flat_tokens.saturating_sub(exec_tokens),
            flat_bytes - exec_bytes,
            exec_pool.pooled().len(),
        );
    } else {
        out += &format!(
            "Exec mode declares {} bytes more: the {} pooled tools' declarations are smaller than Exec's own.\n",
            exec_bytes - flat_bytes,
            exec_pool.pooled().len(),
        );
    }
    out += "Counts are declarations, and for the announcement the pool's names it lists; it is sent once per \
conversation (again when the pool changes), not in every request.\n";
    out += "Bytes are UTF-8 bytes of the declarations as compact JSON and of the announcement's text; tokens are \
counted in the same text by OpenAI's o200k_base tokenizer (tiktoken-rs). Other models' tokenizers count differently, \
and a provider adds its own framing around each declaration.\n";
    out
}

pub(crate) fn search(
    config: SessionConfig,
    query: String,
    max_results: Option<usize>,
    as_json: bool,
) -> Result<ExitCode, UsageError> {
    let result = with_session(config, async |session| session.search(query.clone(), max_results).map_err(UsageError::from))?;
    if as_json {
        terminal::println(&serde_json::to_string(&result)?);
    } else {
        for found in &result.matches {
            if !found.description.trim().is_empty() {
                terminal::println(&exec_host::typings::doc_comment(&found.description, 0));
            }
            terminal::println(&format!("{}\n", found.signature));
        }
        let shown = result.matches.len();
        match result.total {
            0 => {
                eprintln!("no tool matches {}", terminal::err(&format!("{query:?}")));
                if let Some(note) = &result.note {
                    // It names the servers and repeats the query: made safe like any text.
                    eprintln!("({})", terminal::err(note));
                }
            }
            total if total > shown => {
                eprintln!("{shown} of {total} matching tools shown; narrow the query or raise --max-results")
            }
            total => eprintln!("{total} matching tool{}", if total == 1 { "" } else { "s" }),
        }
    }
    Ok(if result.total == 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `view`: part of a kept result, read through the session's `view_tool_call` as a model
/// reads it (the same store, the same funnel).
pub(crate) fn view(config: SessionConfig, id: String, offset: usize, limit: Option<usize>) -> Result<ExitCode, UsageError> {
    let mut input = serde_json::json!({ "id": id, "offset": offset });
    if let Some(limit) = limit {
        input["limit"] = limit.into();
    }
    let result = with_session(config, async |session| {
        // Where a model reaches it: behind Exec, from a script; declared flat with Exec off.
        let pooled = session.pool()?.names().any(|name| name == exec_host::results::VIEW_TOOL_CALL);
        let call = match pooled {
            true => {
                let code = format!("return await tools.{}({input})", exec_host::results::VIEW_TOOL_CALL);
                exec_host::ToolCall::new(crate::run::run_id(), exec_host::exec_tool::NAME, serde_json::json!({ "code": code }))
            }
            false => exec_host::ToolCall::new(crate::run::run_id(), exec_host::results::VIEW_TOOL_CALL, input),
        };
        Ok(session.call(call, exec_host::CancellationToken::new()).await)
    })?;
    if result.is_error() {
        return Err(UsageError(result.client.text.clone()));
    }
    // The whole part: a part is never shortened for a person who asked for it.
    terminal::println(&result.client.text);
    Ok(ExitCode::SUCCESS)
}
