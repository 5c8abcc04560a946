//! What `exec-host run` shows on a terminal while a script runs: one status line on standard
//! error (how many calls the script made, the tools it is waiting on now, and the last step
//! each reported), and the
//! script's `console` lines as they are written. The status line is redrawn in place and
//! erased before anything else is printed, so the result on standard output, and every
//! line above it, reads as if there had been no status line at all.
//!
//! Only a terminal gets it: into a file or a pipe, standard error carries only what it
//! always did. Text from the script passes through [`terminal::neutralise`] first.

use std::io::Write;
use std::sync::{Arc, Mutex};

use std::collections::HashMap;

use exec_host::{CallOptions, CallOutcome, CallProgress, ConsoleLevel, NestedCall};

use crate::terminal;

/// Names of running tools shown on the status line; the rest are counted.
const MAX_NAMES_SHOWN: usize = 3;

/// Width assumed when the terminal does not say its own.
const DEFAULT_WIDTH: usize = 80;

/// The live view of one run.
#[derive(Clone)]
pub struct Progress {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The status line as drawn; empty when none is on the screen.
    drawn: String,
    calls: usize,
    /// The calls in flight: their number in the record and their tool.
    running: Vec<(u32, String)>,
    /// The last step each call in flight reported, by its number.
    steps: HashMap<u32, String>,
}

impl Progress {
    /// A live view when standard error is a terminal and the user did not ask for quiet.
    pub fn for_stderr(quiet: bool) -> Option<Progress> {
        let shown = !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
        shown.then(|| Progress { state: Arc::new(Mutex::new(State::default())) })
    }

    /// `options` with this view watching the calls, their steps and the console.
    pub fn watch(&self, options: CallOptions) -> CallOptions {
        let (calls, console, steps) = (self.clone(), self.clone(), self.clone());
        options
            .on_nested_call(move |record| calls.calls(record))
            .on_console(move |level, line| console.console(level, line))
            .on_tool_progress(move |progress| steps.step(progress))
    }

    /// Takes the status line off the screen; call it before printing the result.
    pub fn finish(&self) {
        let mut state = self.lock();
        let mut err = std::io::stderr().lock();
        erase(&mut err, &mut state);
        let _ = err.flush();
    }

    fn calls(&self, record: &[NestedCall]) {
        let mut state = self.lock();
        state.calls = record.len();
        state.running = record
            .iter()
            .zip(0u32..)
            .filter(|(call, _)| call.outcome == CallOutcome::Unfinished)
            .map(|(call, number)| (number, terminal::neutralise(&call.name).into_owned()))
            .collect();
        let State { running, steps, .. } = &mut *state;
        steps.retain(|number, _| running.iter().any(|(running, _)| running == number));
        let mut err = std::io::stderr().lock();
        draw(&mut err, &mut state);
    }

    fn step(&self, progress: &CallProgress) {
        let Some(number) = progress.call else { return };
        let mut state = self.lock();
        if state.running.iter().any(|(running, _)| *running == number) {
            state.steps.insert(number, terminal::neutralise(&progress.step.to_string()).into_owned());
            let mut err = std::io::stderr().lock();
            draw(&mut err, &mut state);
        }
    }

    fn console(&self, level: ConsoleLevel, line: &str) {
        let mut state = self.lock();
        let mut err = std::io::stderr().lock();
        erase(&mut err, &mut state);
        let prefix = match level {
            ConsoleLevel::Log => "",
            ConsoleLevel::Info => "[info] ",
            ConsoleLevel::Warn => "[warn] ",
            ConsoleLevel::Error => "[error] ",
            _ => "[debug] ",
        };
        let _ = writeln!(err, "{prefix}{}", terminal::neutralise(line));
        draw(&mut err, &mut state);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The status line for `state`, cut to the terminal's width; none before the first call.
fn status(state: &State) -> String {
    if state.calls == 0 {
        return String::new();
    }
    let plural = if state.calls == 1 { "" } else { "s" };
    let mut line = format!("{} tool call{plural}", state.calls);
    if !state.running.is_empty() {
        let shown: Vec<String> = state
            .running
            .iter()
            .take(MAX_NAMES_SHOWN)
            .map(|(number, name)| match state.steps.get(number) {
                Some(step) => format!("{name} ({step})"),
                None => name.clone(),
            })
            .collect();
        line += &format!(", waiting on {}", shown.join(", "));
        if state.running.len() > shown.len() {
            line += &format!(" and {} more", state.running.len() - shown.len());
        }
    }
    // One column is left free: a line that fills the last one wraps on some terminals.
    let width = terminal_width().saturating_sub(1).max(10);
    if line.chars().count() > width { line.chars().take(width - 1).chain(['…']).collect() } else { line }
}

fn draw(err: &mut impl Write, state: &mut State) {
    let line = status(state);
    if line != state.drawn {
        // Back to the start of the line, clear it, write the new status without a newline.
        erase(err, state);
        let _ = write!(err, "{line}");
        let _ = err.flush();
        state.drawn = line;
    }
}

fn erase(err: &mut impl Write, state: &mut State) {
    if !state.drawn.is_empty() {
        let _ = write!(err, "\r\x1b[2K");
        state.drawn.clear();
    }
}

/// Columns of the terminal on standard error.
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given, which lives
    // for the call; a failed call leaves it zeroed.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 { usize::from(size.ws_col) } else { DEFAULT_WIDTH }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_counts_calls_and_names_what_runs() {
        let state = |calls, running: &[&str]| State {
            drawn: String::new(),
            calls,
            running: running.iter().zip(0..).map(|(name, number)| (number, name.to_string())).collect(),
            steps: HashMap::from([(7, "2/3: step 2".to_string())]),
        };
        assert_eq!(status(&state(0, &[])), "", "nothing to show before the first call");
        assert_eq!(status(&state(1, &["read_file"])), "1 tool call, waiting on read_file");
        assert_eq!(status(&state(5, &["a", "b", "c", "d", "e"])), "5 tool calls, waiting on a, b, c and 2 more");
        let mut stepping = state(2, &["a", "mcp__fx__steps"]);
        stepping.running[1].0 = 7;
        assert_eq!(status(&stepping), "2 tool calls, waiting on a, mcp__fx__steps (2/3: step 2)", "a call's last step");
        let long = status(&state(1, &[&"x".repeat(500)]));
        assert!(long.ends_with('…') && long.chars().count() < 500, "{long}");
    }
}
