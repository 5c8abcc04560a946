//! `grep {pattern, path?, glob?, case_insensitive?, context?, all?}`: lines of text files
//! that match a regular expression, with the lines around them if asked.

use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::FileTool;
use super::glob::{matcher, strip_base};
use super::workspace::{Access, Workspace, display_path, looks_binary, walk};
use crate::sources::tools::Effect;
use crate::support::vocabulary::ToolError;

/// Matching lines returned at most.
pub const MAX_MATCHES: usize = 200;
/// Characters kept of a matching line.
pub const MAX_LINE_CHARS: usize = 500;
/// Files larger than this are skipped (and counted in `skipped`).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Size of the compiled regular expression.
const MAX_REGEX_BYTES: usize = 1024 * 1024;
/// Lines of context asked for at most, before and after each match.
pub const MAX_CONTEXT_LINES: usize = 10;

pub struct Grep;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Regular expression searched for in each line, in the syntax of Rust's `regex` crate
    /// (Perl-like classes, `(?i)` flags, Unicode; no look-around or backreferences).
    pub pattern: String,
    /// File or directory to search, relative to the workspace. Defaults to the workspace itself.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose paths (relative to `path`) match this glob, for example "**/*.rs".
    #[serde(default)]
    pub glob: Option<String>,
    /// Match letters whatever their case.
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// Lines to return before and after each match (at most 10).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub context: Option<usize>,
    /// Also search hidden files and folders (names starting with ".") and what .gitignore
    /// files exclude; left out by default.
    #[serde(default)]
    pub all: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub matches: Vec<Match>,
    /// True when more lines matched than were returned, or the walk stopped early.
    pub truncated: bool,
    /// Files not searched because they are binary or larger than 10 MiB.
    pub skipped: usize,
}

#[derive(Serialize, JsonSchema)]
pub struct Match {
    /// Relative to the workspace.
    pub path: String,
    /// Line number, from 1.
    pub line: usize,
    /// The line, cut at 500 characters.
    pub text: String,
    /// With `context`: the lines before the match, nearest last (fewer at the start of a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<String>>,
    /// With `context`: the lines after the match (fewer at the end of a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<String>>,
}

impl FileTool for Grep {
    const NAME: &'static str = "grep";
    const EFFECT: Effect = Effect::ReadOnly;
    const DESCRIPTION: &'static str = "Search text files in the workspace for lines matching a regular expression (Rust regex syntax); returns path, line number and line text of each match, and with `context` the lines around it. Hidden files and what .gitignore files exclude are left out unless `all` is true.";
    const GUIDANCE: Option<&'static str> =
        Some("Find files with glob and search their contents with grep instead of reading files one by one.");
    type Params = Params;
    type Output = Output;

    fn run(workspace: &Workspace, params: Params, cancelled: &dyn Fn() -> bool) -> Result<Output, ToolError> {
        let regex = regex::RegexBuilder::new(&params.pattern)
            .case_insensitive(params.case_insensitive.unwrap_or(false))
            .size_limit(MAX_REGEX_BYTES)
            .build()
            .map_err(|e| ToolError::params(format!("grep: the pattern is not a valid regular expression: {e}")))?;
        let filter = params.glob.as_deref().map(|glob| matcher(Self::NAME, glob)).transpose()?;
        let base = workspace.relative(params.path.as_deref())?;
        let shown = display_path(&base);
        let metadata = workspace.dir().metadata(&base).map_err(|e| workspace.io_error(&shown, e))?;

        let context = params.context.unwrap_or(0);
        if context > MAX_CONTEXT_LINES {
            return Err(ToolError::params(format!(
                "grep: `context`: {context} is greater than the maximum of {MAX_CONTEXT_LINES}"
            )));
        }
        let mut search = Search { workspace, regex: &regex, context, matches: Vec::new(), more: false, skipped: 0 };
        if metadata.is_file() {
            search.file(&shown);
            return Ok(search.finish(false));
        }
        let stopped = walk(workspace, &base, params.all.unwrap_or(false), cancelled, &mut |entry| {
            if !entry.is_file {
                return true;
            }
            if let Some(filter) = &filter
                && !filter.is_match(strip_base(&entry.path, &shown))
            {
                return true;
            }
            search.file(&entry.path)
        })?;
        Ok(search.finish(stopped))
    }
}

struct Search<'a> {
    workspace: &'a Workspace,
    regex: &'a regex::Regex,
    /// Lines of context around each match.
    context: usize,
    matches: Vec<Match>,
    more: bool,
    skipped: usize,
}

impl Search<'_> {
    /// Searches one file; returns false once the match limit is reached.
    fn file(&mut self, path: &str) -> bool {
        let Ok(file) = self.workspace.open_file(std::path::Path::new(path), Access::Read) else { return true };
        if file.metadata().map(|m| m.len() > MAX_FILE_BYTES).unwrap_or(true) {
            self.skipped += 1;
            return true;
        }
        let mut reader = BufReader::new(file.take(MAX_FILE_BYTES));
        match reader.fill_buf() {
            Ok(start) if looks_binary(&start[..start.len().min(8 * 1024)]) => {
                self.skipped += 1;
                return true;
            }
            Ok(_) => {}
            Err(_) => return true,
        }
        let mut line = Vec::new();
        let mut number = 0;
        // The last `context` lines, and the matches of this file still taking lines after.
        let mut recent: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let first_of_file = self.matches.len();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
            number += 1;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if self.context > 0 {
                for earlier in &mut self.matches[first_of_file..] {
                    if let Some(after) = earlier.after.as_mut().filter(|after| after.len() < self.context) {
                        after.push(cut_line(text));
                    }
                }
            }
            if self.regex.is_match(text) {
                if self.matches.len() == MAX_MATCHES {
                    self.more = true;
                    return false;
                }
                let (before, after) = match self.context {
                    0 => (None, None),
                    _ => (Some(recent.iter().cloned().collect()), Some(Vec::new())),
                };
                self.matches.push(Match { path: path.to_string(), line: number, text: cut_line(text), before, after });
            }
            if self.context > 0 {
                if recent.len() == self.context {
                    recent.pop_front();
                }
                recent.push_back(cut_line(text));
            }
        }
    }

    fn finish(self, stopped: bool) -> Output {
        Output { matches: self.matches, truncated: self.more || stopped, skipped: self.skipped }
    }
}

/// A line as a match or its context shows it: cut at [`MAX_LINE_CHARS`] characters.
fn cut_line(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
