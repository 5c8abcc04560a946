//! How an Exec failed ([`Failure`]), and a script's failure as data: a syntax error's
//! position and an uncaught error's frames travel as numbers from the guest boundary on,
//! and become text only where a failure is rendered.

use std::fmt;
use std::time::Duration;

use crate::support::vocabulary::Stage;

/// The name a script's positions are given under in rendered frames.
const SCRIPT_NAME: &str = "script.js";

/// A place in a script's text: line and column from 1, as the engine counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

/// One frame of the script's own code in an uncaught error's stack.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Frame {
    /// The function's name as the engine gives it (`<anonymous>` for one without).
    pub function: String,
    pub position: Position,
}

/// Why a script does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyntaxError {
    /// `Name: message`, with no position in it.
    pub message: String,
    /// Where the parser stopped, when it says.
    pub position: Option<Position>,
    /// The parser reached the end of the script with something still open; `position` is
    /// then the script's end.
    pub unclosed: bool,
}

/// An error that reached the top of a script: its text and the script's own frames,
/// innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Uncaught {
    /// `Name: message` for an `Error`; `Uncaught <value>` for anything else thrown.
    pub error: String,
    pub frames: Vec<Frame>,
}

impl SyntaxError {
    pub fn new(message: impl Into<String>, position: Option<Position>) -> Self {
        SyntaxError { message: message.into(), position, unclosed: false }
    }
}

impl Uncaught {
    /// An error with no frames.
    pub fn new(error: impl Into<String>) -> Self {
        Uncaught { error: error.into(), frames: Vec::new() }
    }
}

impl Frame {
    pub fn new(function: impl Into<String>, position: Position) -> Self {
        Frame { function: function.into(), position }
    }
}

/// `SyntaxError: <message> (line L, column C)`.
impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match self.position {
            Some(Position { line, .. }) if self.unclosed => {
                write!(f, " (at the end of the script, line {line}: something is not closed)")
            }
            Some(Position { line, column }) => write!(f, " (line {line}, column {column})"),
            None => Ok(()),
        }
    }
}

/// `    at <function> (script.js:L:C)`, as the engine writes a frame.
impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Position { line, column } = self.position;
        write!(f, "    at {} ({SCRIPT_NAME}:{line}:{column})", self.function)
    }
}

/// The error's text, then one line per frame.
impl fmt::Display for Uncaught {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error)?;
        self.frames.iter().try_for_each(|frame| write!(f, "\n{frame}"))
    }
}

/// How an Exec failed. Every way a script can go wrong ends here; none is a panic or a
/// transport error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The request was refused before any sandbox started (empty code, impossible limits).
    InvalidRequest(String),
    /// The code does not parse.
    Syntax(SyntaxError),
    /// The script threw, or its promise rejected.
    Thrown(Uncaught),
    /// The script returned a value JSON cannot carry.
    Unserializable(Uncaught),
    /// The script awaits a promise that nothing can settle (no call in flight, no timer
    /// pending).
    NeverSettles,
    /// The script ran for its whole budget of its own time.
    BudgetExceeded { budget: Duration },
    /// The script waited longer than the caller's `max_nested_wait` for nested calls and
    /// timers.
    NestedWaitExceeded { limit: Duration },
    /// The caller aborted the Exec.
    Aborted,
    /// The sandbox itself stopped: out of memory, stack exhausted, an engine fault.
    Crashed(String),
    /// No sandbox could be started for the script (every instance slot is in use).
    Unavailable(String),
    /// Not a failure: every call still open waits for a person's answer, and the Exec
    /// parked (it resumes when the answers come).
    Parked { approvals: usize },
    /// A parked Exec could not be taken up exactly (another guest, other tools, or it did
    /// not replay the same way); nothing was called again.
    NotResumed(String),
}

const COMPLETED_CALLS_NOTE: &str = "Tool calls that had already completed took effect.";

impl Failure {
    /// What the model reads about this failure.
    pub fn message(&self) -> String {
        match self {
            Failure::InvalidRequest(why) => format!("Exec was not run: {why}."),
            Failure::Syntax(error) => format!("The script does not parse: {error}"),
            Failure::Thrown(error) => format!("The script failed with an uncaught error:\n{error}"),
            Failure::Unserializable(error) => format!("The script's return value cannot be turned into JSON: {error}"),
            Failure::NeverSettles => format!(
                "The script was ended: it awaits a promise that can never settle (no tool call is in flight), so it could never finish. {COMPLETED_CALLS_NOTE}"
            ),
            Failure::BudgetExceeded { budget } => format!(
                "The script exceeded its execution budget of {} ms of its own running time and was terminated (time spent waiting for tool calls does not count). {COMPLETED_CALLS_NOTE}",
                budget.as_millis()
            ),
            Failure::NestedWaitExceeded { limit } => format!(
                "The script was ended: it waited more than {} ms in all for tool calls and timers to finish. {COMPLETED_CALLS_NOTE}",
                limit.as_millis()
            ),
            Failure::Aborted => format!("The script was aborted before it finished. {COMPLETED_CALLS_NOTE}"),
            Failure::Crashed(why) => format!("The script's sandbox stopped: {why}. {COMPLETED_CALLS_NOTE}"),
            Failure::Parked { approvals } => format!(
                "The script is waiting for {approvals} approval{}; it was parked and resumes when {} answered.",
                if *approvals == 1 { "" } else { "s" },
                if *approvals == 1 { "it is" } else { "they are" }
            ),
            Failure::NotResumed(why) => format!(
                "The parked script could not be resumed exactly: {why}. No tool call was made again; the calls it made before it parked took effect."
            ),
            Failure::Unavailable(why) => {
                format!(
                    "Exec was not run: no sandbox could be started ({why}). Too many Execs may be running at once; try again."
                )
            }
        }
    }

    /// Where in the life of the `Exec` call it failed (spec 000): a request refused before
    /// any sandbox started is a params failure, a value that cannot be turned into JSON a
    /// projection failure, everything else happened while the script ran.
    pub fn stage(&self) -> Stage {
        match self {
            Failure::InvalidRequest(_) => Stage::Params,
            Failure::Unserializable(_) => Stage::Projection,
            Failure::Parked { .. } => Stage::Authorization,
            _ => Stage::Execution,
        }
    }
}
