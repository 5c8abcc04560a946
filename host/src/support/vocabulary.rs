//! The words every layer says about a call: who makes it (`Origin`), what a person answers
//! (`Approval`) and what a call that waits for that answer asked (`ParkRequest`,
//! `AskedBefore`), where a failure happened (`Stage`, `ToolError`), and how a call that gave
//! no output ended (`Unfinished`: failed, or parked, which is not a failure). They live below
//! every layer that names them, so the policy's words are not kept by the tools' layer for
//! the lower layers' sake.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// Who is calling: the model directly, or a script inside Exec.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A tool call of the model's, with its call id.
    Direct { call_id: Arc<str> },
    /// A call from a script, inside the `Exec` call with this id; `call` numbers it among
    /// the script's calls (the id its approval carries).
    Nested { exec_call_id: Arc<str>, call: u32 },
}

impl Origin {
    /// The call's id as hooks read it (`tool_use_id`): the model's call id, or for a
    /// script's call its Exec's id and its number (`toolu_1#3`); the same for the call's
    /// `PreToolUse` and `PostToolUse`.
    pub fn tool_use_id(&self) -> String {
        match self {
            Origin::Direct { call_id } => call_id.to_string(),
            Origin::Nested { exec_call_id, call } => format!("{exec_call_id}#{call}"),
        }
    }
}

/// An approver's answer to a call that asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Approval {
    AllowOnce,
    /// Allow, and save the request's rule to `permissions.allow` of the project settings so
    /// it does not ask again.
    AllowAlways,
    Deny {
        reason: String,
    },
    /// No answer now: the call waits for one, and an Exec that waits only on such calls
    /// parks (it is stored, and resumes when the answers come). A call that cannot wait (a
    /// direct call, an Exec that cannot park) is refused instead.
    Park,
}

/// A call of a parked Exec taken up again: why it asked when it parked, and the answer a
/// person gave it, if any. The answer binds whatever the resuming session's rules say (only
/// a refusal there is stricter); a call nobody answered asks again.
#[derive(Clone, Debug)]
pub(crate) struct AskedBefore {
    pub why: String,
    pub answer: Option<Approval>,
}

/// What a call that waits for an approval asked: kept with a parked Exec, shown to whoever
/// answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ParkRequest {
    /// The leaf tool.
    pub tool: String,
    /// The input the policy saw (after any `PreToolUse` hook changed it).
    pub input: Value,
    /// Why it asks: the rule and its file, or the mode.
    pub why: String,
    /// The rule "allow always" saves.
    pub rule: String,
}

/// Where in a call's life it failed (spec 000): retry and recovery depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Stage {
    /// The tool is not known or not reachable from here.
    Discovery,
    /// The arguments do not fit the tool.
    Params,
    /// Policy refused the call.
    Authorization,
    /// The tool ran and failed, timed out or was cancelled; side effects may have happened.
    Execution,
    /// The tool succeeded but its result could not be turned into what the caller gets.
    Projection,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Discovery => "discovery",
            Stage::Params => "params",
            Stage::Authorization => "authorization",
            Stage::Execution => "execution",
            Stage::Projection => "projection",
        })
    }
}

/// A failed call: the stage and a message meant for the caller (a script sees the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ToolError {
    pub stage: Stage,
    pub message: String,
}

impl ToolError {
    pub fn new(stage: Stage, message: impl Into<String>) -> Self {
        ToolError { stage, message: message.into() }
    }

    pub fn discovery(message: impl Into<String>) -> Self {
        Self::new(Stage::Discovery, message)
    }
    pub fn params(message: impl Into<String>) -> Self {
        Self::new(Stage::Params, message)
    }
    pub fn authorization(message: impl Into<String>) -> Self {
        Self::new(Stage::Authorization, message)
    }
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(Stage::Execution, message)
    }
    pub fn projection(message: impl Into<String>) -> Self {
        Self::new(Stage::Projection, message)
    }

    /// The same error, its message starting with the tool it came from (`read_file: ...`)
    /// unless it names the tool already: a script that awaits many calls learns which one
    /// failed.
    pub fn naming(mut self, tool: &str) -> Self {
        if !names_tool(&self.message, tool) {
            self.message = format!("{tool}: {}", self.message);
        }
        self
    }
}

/// Whether `text` has `tool` as a whole word: not inside a longer name (`ls` in `tools`).
fn names_tool(text: &str, tool: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-');
    text.match_indices(tool).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + tool.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

/// A call that gave no output: it failed, or it waits for a person's approval (parked), which
/// is not a failure. A caller that can wait keeps the request (an Exec that parks); one that
/// cannot refuses the call, saying what would let it run ([`Unfinished::or_refused`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unfinished {
    Failed(ToolError),
    Parked(Box<ParkRequest>),
}

impl From<ToolError> for Unfinished {
    fn from(error: ToolError) -> Self {
        Unfinished::Failed(error)
    }
}

impl Unfinished {
    /// The failure of a call that cannot wait: a park becomes the refusal saying so.
    pub fn or_refused(self) -> ToolError {
        match self {
            Unfinished::Failed(error) => error,
            Unfinished::Parked(request) => request.cannot_wait(),
        }
    }

    /// The same, a failure's message naming the tool it came from ([`ToolError::naming`]).
    pub fn naming(self, tool: &str) -> Self {
        match self {
            Unfinished::Failed(error) => Unfinished::Failed(error.naming(tool)),
            parked => parked,
        }
    }
}

impl ParkRequest {
    /// The refusal of a call that waits for an approval where nothing can wait (a direct
    /// call, an Exec that cannot park): an authorization failure naming the rule that lets it run.
    pub fn cannot_wait(&self) -> ToolError {
        ToolError::authorization(format!(
            "`{}` needs approval ({}), and it cannot wait for one here; a permissions.allow rule `{}` lets it run",
            self.tool, self.why, self.rule
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ParkRequest {
        ParkRequest {
            tool: "write_file".into(),
            input: serde_json::json!({}),
            why: "the mode asks".into(),
            rule: "write_file".into(),
        }
    }

    #[test]
    fn a_park_is_refused_only_where_nothing_can_wait_and_keeps_no_tool_prefix() {
        let parked = Unfinished::Parked(Box::new(request()));
        assert_eq!(parked.clone().naming("write_file"), parked, "a park is not a failure a script reads");
        let refused = parked.or_refused();
        assert_eq!(refused.stage, Stage::Authorization);
        assert!(refused.message.contains("cannot wait for one here"), "{}", refused.message);
        assert!(refused.message.contains("permissions.allow rule `write_file`"), "{}", refused.message);
        let failed = Unfinished::from(ToolError::execution("disk full")).naming("write_file");
        assert_eq!(failed.or_refused(), ToolError::execution("write_file: disk full"));
    }
}
