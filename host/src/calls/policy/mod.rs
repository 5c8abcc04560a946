//! Policy: what a call may do. Permission rules in Claude Code's syntax and precedence
//! (`deny` over `ask` over `allow` over the mode's default), approvals by an embedding's
//! [`Approver`], and the `PreToolUse` and `PostToolUse` hooks of the settings. Only the
//! funnel calls this module, for every call, direct or nested, builtin or MCP, and for
//! `Exec` itself; rules and hooks see the leaf tool's name, never `Exec` for a nested call.
//!
//! ```text
//! PreToolUse hooks (may block, change the input, or decide allow / ask / deny)
//!   -> deny rules      -> refused, naming the rule and its file
//!   -> the hook's word  (deny: refused; allow: runs; ask: asks)
//!   -> ask rules       -> asks
//!   -> allow rules     -> runs
//!   -> the mode        (default: read-only tools run, others ask; acceptEdits: workspace
//!                       edits run too; dontAsk: what would ask is refused;
//!                       bypassPermissions: runs)
//! asking: the approver answers allow once / allow always (a rule saved) / deny with a reason;
//!         with none, the call is refused with the rule that would let it run
//! ```

pub(crate) mod hooks;

use crate::sources::tools::input::InputHandler;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

pub use hooks::HOOK_OUTPUT_BYTES;
pub(crate) use hooks::Notes;
use hooks::PreOutcome;

use crate::calls::settings::{PermissionMode, Rule, Settings, SettingsFiles, Sourced, Touched};
use crate::sources::mcp::RESOURCE_TOOLS;
use crate::sources::tools::Effect;
use crate::sources::tools::builtin::{PATH_TOOLS, Workspace};
use crate::sources::tools::names::{BASH, WEB_FETCH};
use crate::sources::web_fetch::requested_host;
use crate::support::lock::Unpoisoned;
use crate::support::vocabulary::Unfinished;
use crate::support::vocabulary::{AskedBefore, Origin, ParkRequest, ToolError};

/// Answers the calls that must ask: a person at a terminal, a UI, a policy service.
pub trait Approver: Send + Sync + 'static {
    /// Decides one call. While it waits, the call is pending and nothing else stops: the
    /// rest of a script keeps running, and the wait is not charged to its budget.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval>;
}

/// A call that asks.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The leaf tool (`write_file`, `mcp__srv__tool`), never `Exec` for a nested call.
    pub tool: String,
    pub input: Value,
    /// The model's call, or a script's call inside which `Exec`.
    pub origin: Origin,
    /// Why it asks: the rule and its file, or the mode.
    pub why: String,
    /// The rule "allow always" saves to the project settings.
    pub rule: String,
    /// Whether that rule, in `permissions.allow`, stops the call from asking. False when an
    /// `ask` rule or a hook asks: they are stronger than any allow rule (Claude Code's
    /// precedence), so "allow always" then lasts for the session and saves nothing.
    pub allow_rule_stops_asking: bool,
}

pub use crate::support::vocabulary::Approval;

/// Where the mode comes from: the embedding or the command line (explicit), else the
/// settings' `defaultMode`, else the session's starting mode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModeChoice {
    pub explicit: Option<PermissionMode>,
    pub start: PermissionMode,
}

/// The policy of one session.
pub(crate) struct Policy {
    workspace: Option<Arc<Workspace>>,
    /// Where hooks run.
    cwd: Option<PathBuf>,
    mode: ModeChoice,
    approver: Option<Arc<dyn Approver>>,
    /// Where "allow always" saves its rule.
    rules_file: Option<PathBuf>,
    settings: Arc<SettingsFiles>,
    /// Tools allowed always during this session. The rule is saved to the project settings
    /// too, but a session need not read that file, and an unwritable file must not make the
    /// same question come back.
    allowed_always: std::sync::Mutex<Vec<String>>,
    session_id: String,
    /// The conversation's transcript, which hooks are told of, when the embedder keeps one.
    transcript_path: Option<PathBuf>,
    /// Who answers a tool's source that asks for input during this client's calls, when not
    /// the session's own handler.
    input: Option<Arc<dyn InputHandler>>,
}

/// A call the policy let through.
pub(crate) struct Authorized {
    /// The input to run with (a `PreToolUse` hook may have changed it).
    pub input: Value,
    /// The same input, kept for [`Policy::after`] when a `PostToolUse` hook will run.
    pub post_hook_input: Option<Value>,
}

/// What rules and mode say of one call.
enum Verdict {
    Allow,
    /// `lifted`: whether an allow rule would stop it asking.
    Ask {
        why: String,
        lifted: bool,
    },
    Deny(String),
}

/// The verdict on a call that parked before, taken up with `asked_before`: a person's answer
/// stands in for this session's (a refusal here still wins, as it is stricter), and a call
/// nobody answered asks again even where this session's rules would let it run. A new call's
/// verdict is this session's. Also the answer, for the ask that follows.
fn bound_by_the_answer(verdict: Verdict, asked_before: Option<AskedBefore>) -> (Verdict, Option<Approval>) {
    let Some(AskedBefore { why, answer }) = asked_before else { return (verdict, None) };
    match (verdict, answer) {
        (Verdict::Deny(message), _) => (Verdict::Deny(message), None),
        (Verdict::Ask { why, lifted }, answer) => (Verdict::Ask { why, lifted }, answer),
        (Verdict::Allow, answer) => (Verdict::Ask { why, lifted: false }, answer),
    }
}

impl Policy {
    pub fn new(
        workspace: Option<Arc<Workspace>>,
        cwd: Option<PathBuf>,
        mode: ModeChoice,
        approver: Option<Arc<dyn Approver>>,
        rules_file: Option<PathBuf>,
        settings: Arc<SettingsFiles>,
    ) -> Self {
        Policy {
            workspace,
            cwd,
            mode,
            approver,
            rules_file,
            settings,
            allowed_always: Default::default(),
            session_id: session_id(),
            transcript_path: None,
            input: None,
        }
    }

    /// The same policy, telling hooks of the conversation's transcript at `path`.
    pub fn with_transcript_path(mut self, path: Option<PathBuf>) -> Self {
        self.transcript_path = path;
        self
    }

    /// The same policy for another client: its calls that must ask go to `approver`, the
    /// input its calls' sources ask for to `input`, and it starts with nothing allowed
    /// always and a `session_id` of its own.
    pub fn for_client(&self, approver: Arc<dyn Approver>, input: Option<Arc<dyn InputHandler>>) -> Self {
        let mut policy = Policy::new(
            self.workspace.clone(),
            self.cwd.clone(),
            self.mode,
            Some(approver),
            self.rules_file.clone(),
            self.settings.clone(),
        )
        .with_transcript_path(self.transcript_path.clone());
        policy.input = input;
        policy
    }

    /// Who answers input requests during this client's calls, when not the session's handler.
    pub fn input(&self) -> Option<Arc<dyn InputHandler>> {
        self.input.clone()
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The mode in force under `settings`. `bypassPermissions` becomes `default` when a
    /// managed layer disables it.
    pub fn mode(&self, settings: &Settings) -> PermissionMode {
        let chosen = self.mode.explicit.or(settings.default_mode.as_ref().map(|mode| mode.value)).unwrap_or(self.mode.start);
        if chosen == PermissionMode::BypassPermissions && settings.bypass_disabled {
            return PermissionMode::Default;
        }
        chosen
    }

    /// Authorizes one call of `tool` with `input` under `settings`: runs the `PreToolUse`
    /// hooks, applies the rules and the mode, and asks when it must. Gives the input to run
    /// with (a hook may have changed it), or the refusal.
    pub async fn authorize(
        &self,
        tool: &str,
        effect: Effect,
        input: Value,
        origin: &Origin,
        settings: &Settings,
        asked_before: Option<AskedBefore>,
    ) -> Result<Authorized, Unfinished> {
        let input = self.decide(tool, effect, input, origin, settings, asked_before).await?;
        let post_hook_input = self.has_post_hooks(tool, settings).then(|| input.clone());
        Ok(Authorized { input, post_hook_input })
    }

    /// The decision of [`Policy::authorize`].
    async fn decide(
        &self,
        tool: &str,
        effect: Effect,
        input: Value,
        origin: &Origin,
        settings: &Settings,
        asked_before: Option<AskedBefore>,
    ) -> Result<Value, Unfinished> {
        // A person's "deny" is final: the call is refused with their reason, whatever this
        // session's rules would say of it.
        if let Some(AskedBefore { answer: Some(Approval::Deny { reason }), .. }) = &asked_before {
            return Err(ToolError::authorization(format!("`{tool}` was denied: {reason}")).into());
        }
        let mode = self.mode(settings);
        let (input, hook) = match hooks::pre_tool_use(self.hook_context(settings, origin), tool, input, mode).await {
            PreOutcome::Block(message) => return Err(ToolError::authorization(message).into()),
            PreOutcome::Continue { input, decision } => (input, decision),
        };
        let touched = self.touched_by(tool, &input);
        if let Some(rule) = first_applying(&settings.deny, tool, &touched) {
            return Err(ToolError::authorization(format!(
                "`{tool}` is denied by the permissions.deny rule `{}` in {}",
                rule.value, rule.source
            ))
            .into());
        }
        let verdict = match hook {
            Some(hooks::Decision::Deny(reason)) => Verdict::Deny(format!("`{tool}` was denied by a PreToolUse hook: {reason}")),
            Some(hooks::Decision::Ask(reason)) => {
                Verdict::Ask { why: format!("a PreToolUse hook asks: {reason}"), lifted: false }
            }
            Some(hooks::Decision::Allow) => Verdict::Allow,
            None => self.verdict(tool, effect, &touched, settings, mode),
        };
        let (verdict, answered) = bound_by_the_answer(verdict, asked_before);
        match verdict {
            Verdict::Allow => Ok(input),
            Verdict::Deny(message) => Err(ToolError::authorization(message).into()),
            Verdict::Ask { why, lifted } if mode == PermissionMode::DontAsk && answered.is_none() => {
                Err(ToolError::authorization(format!(
                    "`{tool}` was not run: it needs approval ({why}), and the permission mode is dontAsk; {}",
                    what_lets_it_run(&self.rule_to_allow(tool, &input), lifted)
                ))
                .into())
            }
            Verdict::Ask { why, lifted } => self.ask(tool, input, origin, why, lifted, answered).await,
        }
    }

    /// Runs the `PostToolUse` hooks of a call that succeeded with `response` (made only when
    /// a hook will read it); what they report goes to `notes`, to be appended to the
    /// conversation.
    pub async fn after(
        &self,
        tool: &str,
        origin: &Origin,
        authorized: Option<Value>,
        response: impl FnOnce() -> Value,
        settings: &Settings,
        notes: &Notes,
    ) {
        let Some(input) = authorized else { return };
        let mode = self.mode(settings);
        hooks::post_tool_use(self.hook_context(settings, origin), tool, &input, &response(), mode, notes).await;
    }

    /// Whether any `PostToolUse` hook would run for `tool` (so the input and the response
    /// are kept only then).
    fn has_post_hooks(&self, tool: &str, settings: &Settings) -> bool {
        settings.post_tool_use.iter().any(|entry| entry.value.matches(tool) && !entry.value.hooks.is_empty())
    }

    fn hook_context<'a>(&'a self, settings: &'a Settings, origin: &'a Origin) -> hooks::Context<'a> {
        hooks::Context {
            settings,
            cwd: self.cwd.as_deref(),
            session_id: &self.session_id,
            transcript_path: self.transcript_path.as_deref(),
            origin,
        }
    }

    /// What a call touches, for rules with a specifier: the workspace places of a file
    /// tool's call, the server of a resource tool's.
    fn touched_by(&self, tool: &str, input: &Value) -> Touched {
        match &self.workspace {
            Some(workspace) if PATH_TOOLS.contains(&tool) => {
                Touched::paths(workspace.rule_paths(input.get("path").and_then(Value::as_str)))
            }
            _ if tool == BASH => Touched::command(input.get("command").and_then(Value::as_str).unwrap_or_default()),
            _ if tool == WEB_FETCH => Touched::host(requested_host(input)),
            _ if RESOURCE_TOOLS.contains(&tool) => match input.get("server").and_then(Value::as_str) {
                Some(server) => Touched::server(server),
                None => Touched::default(),
            },
            _ => Touched::default(),
        }
    }

    /// What a person allowed always in this session, then `ask` rules, then `allow` rules,
    /// then the mode.
    fn verdict(&self, tool: &str, effect: Effect, touched: &Touched, settings: &Settings, mode: PermissionMode) -> Verdict {
        if self.allowed_always().iter().any(|t| t == tool) {
            return Verdict::Allow;
        }
        if let Some(rule) = first_applying(&settings.ask, tool, touched) {
            let why = format!("the permissions.ask rule `{}` in {}", rule.value, rule.source);
            return Verdict::Ask { why, lifted: false };
        }
        if self.allows(&settings.allow, tool, touched) {
            return Verdict::Allow;
        }
        let runs = match mode {
            // Nothing is reachable on the network by default, whatever the mode.
            _ if effect == Effect::Network => false,
            PermissionMode::BypassPermissions => true,
            PermissionMode::AcceptEdits => matches!(effect, Effect::ReadOnly | Effect::WorkspaceEdit),
            _ => effect == Effect::ReadOnly,
        };
        if runs {
            return Verdict::Allow;
        }
        let what = match effect {
            Effect::WorkspaceEdit => "before workspace edits",
            Effect::Network => {
                return Verdict::Ask {
                    why: "no permissions.allow rule names the host this request reaches".into(),
                    lifted: true,
                };
            }
            _ => "before tools that are not read-only",
        };
        Verdict::Ask { why: format!("the permission mode {mode} asks {what}"), lifted: true }
    }

    /// Whether allow rules let a call of `tool` touching `touched` run. A command runs when
    /// every part of it is allowed, by a rule or by an answer "allow always" of this
    /// session (`Bash(git status:*)` does not allow `git status && rm -rf x`).
    fn allows(&self, rules: &[Sourced<Rule>], tool: &str, touched: &Touched) -> bool {
        let remembered = || -> Vec<Rule> { self.allowed_always().iter().filter_map(|rule| Rule::parse(rule).ok()).collect() };
        if tool == WEB_FETCH {
            // A host a person allowed always: `WebFetch(domain:HOST)`.
            return first_applying(rules, tool, touched).is_some() || remembered().iter().any(|rule| rule.applies(tool, touched));
        }
        if tool != BASH {
            return first_applying(rules, tool, touched).is_some();
        }
        let remembered = remembered();
        !touched.commands.is_empty()
            && touched.commands.iter().all(|part| {
                rules.iter().any(|rule| rule.value.allows_part(tool, part))
                    || remembered.iter().any(|rule| rule.allows_part(tool, part))
            })
    }

    /// The rules "allow always" adds for a call of `tool` with `input`: the tool's name, or
    /// for a command, the exact command of each of its parts (`Bash(npm test)`).
    fn allow_always_rules(&self, tool: &str, input: &Value) -> Vec<String> {
        if tool == WEB_FETCH {
            return vec![self.rule_to_allow(tool, input)];
        }
        if tool != BASH {
            return vec![tool.to_string()];
        }
        let touched = self.touched_by(tool, input);
        touched.commands.iter().filter(|part| !part.opaque).map(|part| format!("{BASH}({})", part.text)).collect()
    }

    /// The allow rule to name in a refusal of a call of `tool` with `input`: the tool, or for
    /// a web request, its host (`WebFetch(domain:HOST)`).
    fn rule_to_allow(&self, tool: &str, input: &Value) -> String {
        match requested_host(input) {
            Some(host) if tool == WEB_FETCH => format!("{WEB_FETCH}(domain:{host})"),
            _ => tool.to_string(),
        }
    }

    /// The answer to a call that asks: `answered` when the caller has it already (a parked
    /// call resumed with a person's answer), else the approver's; without an approver, a
    /// refusal naming the rule that would let the call run.
    async fn ask(
        &self,
        tool: &str,
        input: Value,
        origin: &Origin,
        why: String,
        lifted: bool,
        answered: Option<Approval>,
    ) -> Result<Value, Unfinished> {
        let rules = self.allow_always_rules(tool, &input);
        let rule = rules.join(", ");
        let answer = match (answered, &self.approver) {
            (Some(answer), _) => answer,
            (None, Some(approver)) => {
                let request = ApprovalRequest {
                    tool: tool.to_string(),
                    input: input.clone(),
                    origin: origin.clone(),
                    why: why.clone(),
                    rule: rule.clone(),
                    allow_rule_stops_asking: lifted,
                };
                approver.approve(request).await
            }
            (None, None) => {
                return Err(ToolError::authorization(format!(
                    "`{tool}` needs approval ({why}), and this session has no way to ask: {}",
                    what_lets_it_run(&self.rule_to_allow(tool, &input), lifted)
                ))
                .into());
            }
        };
        match answer {
            Approval::AllowOnce => Ok(input),
            Approval::AllowAlways => {
                for rule in &rules {
                    self.remember(rule, lifted);
                }
                Ok(input)
            }
            Approval::Deny { reason } => Err(ToolError::authorization(format!("`{tool}` was denied: {reason}")).into()),
            Approval::Park => Err(Unfinished::Parked(Box::new(ParkRequest { tool: tool.to_string(), input, why, rule }))),
        }
    }

    /// Saves an "allow always" rule to the project settings; a call is never refused
    /// because the rule could not be saved. The tool stays allowed for the rest of the
    /// session either way.
    fn remember(&self, tool: &str, save: bool) {
        let mut allowed = self.allowed_always();
        if !allowed.iter().any(|t| t == tool) {
            allowed.push(tool.to_string());
        }
        drop(allowed);
        // An ask rule would still ask past a saved allow rule: the answer lasts the session.
        if !save {
            return;
        }
        let Some(rule) = Rule::exactly(tool) else {
            tracing::warn!(
                "`{tool}` was allowed always for this session only: written as a rule, its name would mean more than this one tool"
            );
            return;
        };
        let Some(file) = &self.rules_file else {
            tracing::warn!("`{rule}` was allowed always, but this session has no settings file to keep the rule in");
            return;
        };
        // Inside the workspace, the file is written relative to the workspace's handle,
        // never through a link (see `SettingsFiles::add_allow_rule`).
        let inside = self.workspace.as_ref().and_then(|workspace| {
            let relative = self.cwd.as_deref().and_then(|cwd| file.strip_prefix(cwd).ok());
            let relative = relative.or_else(|| workspace.root().and_then(|root| file.strip_prefix(root).ok()))?;
            Some((workspace.dir(), relative.to_path_buf()))
        });
        let saved = match &inside {
            Some((dir, relative)) => self.settings.add_allow_rule(Some(dir), relative, &rule),
            None => self.settings.add_allow_rule(None, file, &rule),
        };
        if let Err(error) = saved {
            tracing::warn!("`{rule}` was allowed always, but the rule could not be saved: {error}");
        }
    }
}

impl Policy {
    fn allowed_always(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.allowed_always.locked()
    }
}

/// What would let a call of `tool` that asks run without asking: an allow rule, unless an
/// ask rule or a hook asks (`lifted` false), which no allow rule outranks.
pub(crate) fn what_lets_it_run(rule: &str, lifted: bool) -> String {
    match lifted {
        true => format!("a permissions.allow rule `{rule}` lets it run"),
        false => "an ask rule (or a hook) is stronger than any allow rule, so only removing it, or an answer from a person, lets it run".into(),
    }
}

/// The first rule of `rules` that applies to a call of `tool` touching `touched`.
fn first_applying<'a>(rules: &'a [Sourced<Rule>], tool: &str, touched: &Touched) -> Option<&'a Sourced<Rule>> {
    rules.iter().find(|rule| rule.value.applies(tool, touched))
}

/// An id for the session's hooks (`session_id`): random, 32 hex digits.
fn session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let random = |salt: u64| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(salt);
        hasher.finish()
    };
    format!("{:016x}{:016x}", random(1), random(2))
}
