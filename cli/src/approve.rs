//! How `exec-host` answers a call that must ask: on the terminal when there is one (the
//! tool, a short rendering of its input, why it asks; `y` once, `a` always, `n` no), and
//! otherwise with a refusal that names the flag and the settings rule that would let the
//! call run.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture, Origin};

/// One prompt on the terminal at a time: an approval, or a server's input request.
static TERMINAL_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `prompt` on the terminal when it is this caller's turn (one prompt at a time), on a
/// thread of its own: a read of stdin cannot be cancelled, and an abandoned prompt must not
/// keep the process from exiting. `failed` when the prompt's thread died.
pub async fn on_the_terminal<T: Send + 'static>(prompt: impl FnOnce() -> T + Send + 'static, failed: T) -> T {
    let _turn = TERMINAL_TURN.lock().await;
    let (answer, answered) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = answer.send(prompt());
    });
    answered.await.unwrap_or(failed)
}

/// Whether there is a person at a terminal to ask.
pub fn at_a_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The approver for this process: the terminal's when stdin and stderr are terminals.
pub fn for_this_process() -> Arc<dyn Approver> {
    if at_a_terminal() { Arc::new(Terminal) } else { nobody("there is no terminal to ask on") }
}

/// The terminal's approver, asked whether or not this process has one (`--on-ask prompt`):
/// without a terminal, every call that asks is refused.
pub fn terminal() -> Arc<dyn Approver> {
    if at_a_terminal() { Arc::new(Terminal) } else { nobody("--on-ask prompt was given and there is no terminal to ask on") }
}

/// An approver that refuses every call that asks, saying `why` no one is asked.
pub fn nobody(why: &'static str) -> Arc<dyn Approver> {
    Arc::new(NoOneToAsk { nobody: why })
}

/// Asks on the terminal, one call at a time.
struct Terminal;

impl Approver for Terminal {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let failed = Approval::Deny { reason: "the prompt on the terminal failed".into() };
        Box::pin(on_the_terminal(move || prompt(&request), failed))
    }
}

/// Shows the call and reads the answer.
fn prompt(request: &ApprovalRequest) -> Approval {
    let origin = match &request.origin {
        Origin::Direct { .. } => "called directly".to_string(),
        Origin::Nested { exec_call_id, .. } => {
            format!("called by the script of Exec call {}", crate::terminal::neutralise(exec_call_id))
        }
        _ => "called".to_string(),
    };
    let input = crate::terminal::neutralise(&shown_input(request)).into_owned();
    let always = match request.allow_rule_stops_asking {
        true => format!("saves the rule `{}`", crate::terminal::neutralise(&request.rule)),
        // An allow rule would not stop an ask rule asking: nothing is saved.
        false => "for the rest of this run".to_string(),
    };
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "\n`{}` wants to run, {origin}:\n  {input}\n  It asks because of {}.\nAllow it? [y] once, [a] always ({always}), [n] no: ",
        crate::terminal::neutralise(&request.tool),
        crate::terminal::neutralise(&request.why),
    );
    let _ = stderr.flush();
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    match (read, line.trim()) {
        (Ok(_), "y" | "Y" | "yes") => Approval::AllowOnce,
        (Ok(_), "a" | "A" | "always") => Approval::AllowAlways,
        _ => Approval::Deny { reason: "the user said no at the terminal".into() },
    }
}

/// No one to ask: every call that must ask is refused, saying why and what would let it run.
struct NoOneToAsk {
    nobody: &'static str,
}

impl Approver for NoOneToAsk {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        Box::pin(std::future::ready(refusal(&request, self.nobody)))
    }
}

/// A call's input as an approval shows it: its JSON, cut at
/// [`exec_host::gateway::approval_forms::SHOWN_INPUT_CHARS`].
pub fn shown_input(request: &ApprovalRequest) -> String {
    exec_host::gateway::approval_forms::shown_input(&request.input)
}

/// The refusal of a call that must ask when `nobody` can be asked: why it asks, and what
/// would really let it run (the flag and the settings rule, unless an ask rule or a hook
/// asks, which no allow rule outranks).
pub fn refusal(request: &ApprovalRequest, nobody: &str) -> Approval {
    let remedy = match request.allow_rule_stops_asking {
        true => format!(
            "run with `--allow {}`, or add \"{}\" to permissions.allow in a settings file",
            request.rule, request.rule
        ),
        false => "an ask rule (or a hook) is stronger than any allow rule, so `--allow` does not lift it: remove the rule, or run where a person can answer (a terminal, or --on-ask park)".to_string(),
    };
    let reason = format!("it needs approval ({}) and {nobody}; {remedy}", request.why);
    Approval::Deny { reason }
}
