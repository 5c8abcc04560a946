//! A conformance case as data: parsed, checked, and matched against what the guest asks.
//! The format is documented in the repository's `conformance/README.md`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::sandbox::guest::RunOptions;
use crate::sandbox::runtime::Limits;
use crate::state::Values;
use crate::support::text_file::{MAX_CONFIG_FILE_BYTES, MAX_SCRIPT_FILE_BYTES, ReadError, read_text};

/// Why a case cannot be read, or its file not rewritten.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    #[error("{path} {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: ReadError,
    },
    #[error("the folder {dir} cannot be listed")]
    Unlisted {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("case `{name}`: {reason}")]
    Invalid { name: String, reason: String },
    #[error("case `{name}` is built in; bless it from its file")]
    BuiltIn { name: String },
    #[error("{path} cannot be written")]
    Unwritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The run options a case does not set: the suite's own defaults (`conformance/defaults.json`).
const DEFAULTS: &str = include_str!("../../../conformance/defaults.json");

/// One case: its name, its script and its data.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub script: String,
    /// Where the case's data came from; `None` for a case built into the binary.
    pub path: Option<PathBuf>,
    pub(crate) spec: Spec,
}

/// The data of a case, checked.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    /// The whole JSON document, kept so a blessed case is rewritten with nothing lost.
    pub document: Map<String, Value>,
    pub tools: Vec<String>,
    pub options: RunOptions,
    pub answers: Vec<Answer>,
    pub searches: Vec<Answer>,
    /// The host-side limits, when the case needs them.
    pub host: Option<Limits>,
    /// The values the conversation keeps when the script starts (`store`/`load`).
    pub stored: Values,
    pub expect: Option<Value>,
}

/// How the host answers one kind of call.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    /// The tool's name (`None` for a search answer).
    pub tool: Option<String>,
    /// The arguments it answers; `None` answers any.
    pub args: Option<Value>,
    pub once: bool,
    /// `None`: answered at once. `Some`: pending, finished this long after it started.
    pub after: Option<Duration>,
    pub reply: Reply,
}

/// Longest a case's answer may keep a call pending when the case sets no
/// `host.max_nested_wait_ms` to bound the waiting.
pub(crate) const MAX_UNCAPPED_ANSWER_DELAY: Duration = Duration::from_secs(60);

impl Answer {
    /// Whether the answer keeps its call pending forever (`never`) or for longer than
    /// [`MAX_UNCAPPED_ANSWER_DELAY`].
    fn keeps_waiting(&self) -> bool {
        self.reply == Reply::Never || self.after.is_some_and(|after| after > MAX_UNCAPPED_ANSWER_DELAY)
    }
}

/// What a call is answered with.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    Value(Value),
    Text(String),
    Error(String),
    Never,
}

impl Case {
    /// Reads `NAME.js` and `NAME.json` from `dir`.
    pub fn read(dir: &Path, name: &str) -> Result<Case, CaseError> {
        let script_path = dir.join(format!("{name}.js"));
        let data_path = dir.join(format!("{name}.json"));
        let read = |path: &Path, limit| {
            read_text(path, limit).map_err(|source| CaseError::Unreadable { path: path.to_path_buf(), source })
        };
        let script = read(&script_path, MAX_SCRIPT_FILE_BYTES)?;
        let data = read(&data_path, MAX_CONFIG_FILE_BYTES)?;
        let mut case = Case::parse(name, script, &data)?;
        case.path = Some(data_path);
        Ok(case)
    }

    /// A case from its script and the text of its data.
    pub fn parse(name: &str, script: String, data: &str) -> Result<Case, CaseError> {
        let spec = Spec::parse(data).map_err(|reason| CaseError::Invalid { name: name.to_string(), reason })?;
        Ok(Case { name: name.to_string(), script, path: None, spec })
    }

    /// What the case checks, in its own words.
    pub fn about(&self) -> &str {
        self.spec.document.get("about").and_then(Value::as_str).unwrap_or("")
    }

    /// Whether the case needs limits only a host enforces (a host without them passes it over).
    pub fn needs_host_limits(&self) -> bool {
        self.spec.host.is_some()
    }
}

/// Every case in `dir` (each `NAME.js` with its `NAME.json`), in name order.
pub fn cases_in(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CaseError::Unlisted { dir: dir.to_path_buf(), source })?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.strip_suffix(".js")).map(str::to_string))
        .collect();
    names.sort();
    names.iter().map(|name| Case::read(dir, name)).collect()
}

impl Spec {
    fn parse(data: &str) -> Result<Spec, String> {
        let document: Map<String, Value> =
            serde_json::from_str(data).map_err(|e| format!("its data is not a JSON object: {e}"))?;
        const KNOWN: &[&str] = &["about", "tools", "options", "answers", "searches", "host", "stored", "expect"];
        if let Some(unknown) = document.keys().find(|key| !KNOWN.contains(&key.as_str())) {
            return Err(format!("unknown field `{unknown}` (known: {})", KNOWN.join(", ")));
        }
        let tools = match document.get("tools") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_string).ok_or("`tools` lists names (strings)"))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`tools` is a list of names".into()),
        };
        let options = run_options(document.get("options"))?;
        let calls = answers(document.get("answers"), true)?;
        let searches = answers(document.get("searches"), false)?;
        let host = document.get("host").map(host_limits).transpose()?;
        let capped = host.as_ref().is_some_and(|limits| limits.max_nested_wait.is_some());
        if !capped && let Some(pending) = calls.iter().find(|answer| answer.keeps_waiting()) {
            return Err(format!(
                "the answer for `{}` keeps its call pending {}: such a case sets `host.max_nested_wait_ms`, or it could wait forever",
                pending.tool.as_deref().unwrap_or("?"),
                match pending.after {
                    Some(after) => format!("for {} ms", after.as_millis()),
                    None => "forever".to_string(),
                }
            ));
        }
        let stored = match document.get("stored") {
            None => Values::default(),
            Some(Value::Object(values)) => values.iter().map(|(key, value)| (key.clone(), value.to_string())).collect(),
            Some(_) => return Err("`stored` is an object of the values kept when the script starts".into()),
        };
        let expect = document.get("expect").cloned();
        Ok(Spec { document, tools, options, answers: calls, searches, host, stored, expect })
    }
}

/// The suite's defaults overlaid with the case's `options`, by their WIT names.
fn run_options(options: Option<&Value>) -> Result<RunOptions, String> {
    let mut merged: Map<String, Value> = serde_json::from_str(DEFAULTS).map_err(|e| format!("defaults.json: {e}"))?;
    match options {
        None => {}
        Some(Value::Object(set)) => {
            for (key, value) in set {
                if !merged.contains_key(key) {
                    return Err(format!("unknown run option `{key}`"));
                }
                merged.insert(key.clone(), value.clone());
            }
        }
        Some(_) => return Err("`options` is an object of run options".into()),
    }
    let number =
        |key: &str| merged.get(key).and_then(Value::as_u64).ok_or_else(|| format!("run option `{key}` is not a whole number"));
    let small = |key: &str| number(key).and_then(|n| u32::try_from(n).map_err(|_| format!("run option `{key}` is too large")));
    let text = |key: &str| {
        merged.get(key).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("run option `{key}` is not a string"))
    };
    Ok(RunOptions {
        heap_bytes: number("heap-bytes")?,
        stack_bytes: small("stack-bytes")?,
        argument_bytes: number("argument-bytes")?,
        argument_depth: small("argument-depth")?,
        log_line_chars: small("log-line-chars")?,
        random_seed: number("random-seed")?,
        time_zone: text("time-zone")?,
    })
}

fn answers(list: Option<&Value>, of_tools: bool) -> Result<Vec<Answer>, String> {
    let field = if of_tools { "answers" } else { "searches" };
    let items = match list {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("`{field}` is a list")),
    };
    items.iter().enumerate().map(|(i, item)| answer(item, of_tools).map_err(|e| format!("`{field}[{i}]`: {e}"))).collect()
}

fn answer(item: &Value, of_tool: bool) -> Result<Answer, String> {
    let Some(fields) = item.as_object() else { return Err("an answer is an object".into()) };
    let known: &[&str] = if of_tool {
        &["tool", "args", "once", "after_ms", "value", "text", "error", "never"]
    } else {
        &["args", "once", "ok", "error"]
    };
    if let Some(unknown) = fields.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!("unknown field `{unknown}` (known: {})", known.join(", ")));
    }
    let tool = match fields.get("tool") {
        Some(Value::String(name)) => Some(name.clone()),
        Some(_) => return Err("`tool` is a name".into()),
        None if of_tool => return Err("`tool` is missing".into()),
        None => None,
    };
    let mut replies = Vec::new();
    if let Some(value) = fields.get(if of_tool { "value" } else { "ok" }) {
        replies.push(Reply::Value(value.clone()));
    }
    if let Some(text) = fields.get("text") {
        replies.push(Reply::Text(text.as_str().ok_or("`text` is a string")?.to_string()));
    }
    if let Some(message) = fields.get("error") {
        replies.push(Reply::Error(message.as_str().ok_or("`error` is a string")?.to_string()));
    }
    if fields.get("never") == Some(&Value::Bool(true)) {
        replies.push(Reply::Never);
    }
    let reply = match replies.len() {
        1 => replies.remove(0),
        _ if of_tool => return Err("an answer has exactly one of `value`, `text`, `error`, `never: true`".into()),
        _ => return Err("a search answer has exactly one of `ok`, `error`".into()),
    };
    let after = match fields.get("after_ms") {
        None => None,
        Some(ms) => Some(Duration::from_millis(ms.as_u64().ok_or("`after_ms` is a whole number of milliseconds")?)),
    };
    let once = match fields.get("once") {
        None => false,
        Some(Value::Bool(once)) => *once,
        Some(_) => return Err("`once` is true or false".into()),
    };
    Ok(Answer { tool, args: fields.get("args").cloned(), once, after, reply })
}

/// The host-side limits of a case: the host's defaults, with what the case sets.
fn host_limits(host: &Value) -> Result<Limits, String> {
    let Some(fields) = host.as_object() else { return Err("`host` is an object of host limits".into()) };
    let mut limits = Limits::default();
    for (key, value) in fields {
        let n = value.as_u64().ok_or_else(|| format!("host limit `{key}` is not a whole number"))?;
        limits = match key.as_str() {
            "budget_ms" => limits.with_budget(Duration::from_millis(n)),
            "max_calls" => limits.with_max_calls(u32::try_from(n).map_err(|_| "`max_calls` is too large")?),
            "max_nested_wait_ms" => limits.with_max_nested_wait(Some(Duration::from_millis(n))),
            "max_memory_mib" => limits.with_max_memory_bytes(n.saturating_mul(1 << 20)),
            _ => {
                return Err(format!(
                    "unknown host limit `{key}` (known: budget_ms, max_calls, max_nested_wait_ms, max_memory_mib)"
                ));
            }
        };
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(data: &str) -> Result<Case, String> {
        Case::parse("c", "return 1".into(), data).map_err(|e| e.to_string())
    }

    #[test]
    fn a_case_takes_the_suite_defaults_and_its_own_options() {
        let case = parse(r#"{"about": "x", "options": {"argument-depth": 4}}"#).unwrap();
        assert_eq!(case.spec.options.argument_depth, 4);
        assert_eq!(case.spec.options.heap_bytes, 64 << 20);
        assert!(!case.needs_host_limits());
        assert!(parse(r#"{"host": {}}"#).unwrap().needs_host_limits());
    }

    #[test]
    fn answers_are_read_with_their_timing() {
        let case = parse(
            r#"{"answers": [
                {"tool": "a", "value": null},
                {"tool": "b", "args": {"x": 1}, "text": "t", "after_ms": 50, "once": true},
                {"tool": "c", "never": true}
            ], "host": {"max_nested_wait_ms": 100}, "searches": [{"ok": {"matches": [], "total": 0}}]}"#,
        )
        .unwrap();
        let answers = &case.spec.answers;
        assert_eq!(answers[0].reply, Reply::Value(Value::Null));
        assert_eq!(
            (answers[1].reply.clone(), answers[1].after, answers[1].once),
            (Reply::Text("t".into()), Some(Duration::from_millis(50)), true)
        );
        assert_eq!(answers[2].reply, Reply::Never);
        assert_eq!(case.spec.searches.len(), 1);
    }

    #[test]
    fn a_case_that_could_wait_forever_is_refused_unless_its_waiting_is_capped() {
        let never = r#"{"tools": ["t"], "answers": [{"tool": "t", "never": true}]}"#;
        assert!(parse(never).unwrap_err().contains("sets `host.max_nested_wait_ms`"), "{:?}", parse(never));
        let late = r#"{"tools": ["t"], "answers": [{"tool": "t", "after_ms": 86400000, "value": 1}]}"#;
        assert!(parse(late).unwrap_err().contains("for 86400000 ms"));
        let capped = r#"{"tools": ["t"], "host": {"max_nested_wait_ms": 100}, "answers": [{"tool": "t", "never": true}]}"#;
        assert!(parse(capped).is_ok());
        let budget_only = r#"{"tools": ["t"], "host": {"budget_ms": 100}, "answers": [{"tool": "t", "never": true}]}"#;
        assert!(parse(budget_only).is_err(), "the budget does not count waiting");
    }

    #[test]
    fn a_malformed_case_says_what_is_wrong() {
        let wrong = [
            (r#"{"expected": {}}"#, "unknown field `expected`"),
            (r#"{"options": {"heap": 1}}"#, "unknown run option `heap`"),
            (r#"{"answers": [{"tool": "a", "value": 1, "error": "e"}]}"#, "`answers[0]`: an answer has exactly one of"),
            (r#"{"answers": [{"value": 1}]}"#, "`answers[0]`: `tool` is missing"),
            (r#"{"answers": [{"tool": "a", "text": 1}]}"#, "`text` is a string"),
            (r#"{"host": {"budget": 1}}"#, "unknown host limit `budget`"),
            (r#"{"tools": "echo"}"#, "`tools` is a list of names"),
            ("[]", "its data is not a JSON object"),
        ];
        for (data, needle) in wrong {
            let error = parse(data).unwrap_err();
            assert!(error.starts_with("case `c`: ") && error.contains(needle), "{data}: {error}");
        }
    }
}
