//! Where the whole text of a compacted result is kept, and `view_tool_call`, the flat tool
//! that reads it back by call id (spec 000: pre-compaction, persistence and recovery by id).
//!
//! A [`ResultStore`] keeps texts by call id: [`MemoryResultStore`] (the default, bounded)
//! or [`DirectoryResultStore`] (one file per result, bounded in number; the command line
//! uses it), or an embedding's own.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::sources::tools::params::read_params;
use crate::sources::tools::{CallContext, Tool, ToolDefinition, ToolOutput};
use crate::support::dirs::BaseDir;
use crate::support::lock::Unpoisoned;
use crate::support::vocabulary::ToolError;

/// The name of the tool that reads kept results.
pub const VIEW_TOOL_CALL: &str = "view_tool_call";
/// Characters `view_tool_call` returns when the call does not say.
pub const VIEW_DEFAULT_CHARS: usize = 8_000;
/// Characters `view_tool_call` returns at most: under the compaction bound, so a view is
/// never compacted itself.
pub const VIEW_MAX_CHARS: usize = 8_000;
/// Characters of results a [`MemoryResultStore`] keeps by default, all results together.
pub const MEMORY_STORE_CHARS: usize = 16 * 1024 * 1024;
/// Results a [`DirectoryResultStore`] keeps by default; the oldest files go first.
pub const DIRECTORY_STORE_FILES: usize = 256;
/// Bytes a [`DirectoryResultStore`]'s files take at most, all together: a result may be kept
/// whole up to `MAX_KEPT_RESULT_CHARS`, so the count of files alone would not bound the disk
/// a flood of long results takes. The oldest files go first; the newest is always kept.
pub const DIRECTORY_STORE_BYTES: u64 = 256 << 20;

/// Why a result could not be kept or read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultStoreError {
    /// The result alone is larger than the store holds.
    #[error("the result is larger than the store ({max_chars} characters)")]
    TooLarge { max_chars: usize },
    /// The store's folder or one of its files could not be read or written.
    #[error("cannot {doing} {}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file of the store's folder holds no kept result.
    #[error("{} is not a kept result", path.display())]
    NotAResult {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// An embedding's own store failed, for its reason.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl ResultStoreError {
    /// The failure of an embedding's own store.
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ResultStoreError::Other(error.into())
    }
}

/// Keeps the whole text of results by the id of their tool call.
pub trait ResultStore: Send + Sync + 'static {
    /// Keeps `text` under `call_id`, replacing what was kept under it.
    fn keep(&self, call_id: &str, text: &str) -> Result<(), ResultStoreError>;

    /// The text kept under `call_id`, `None` when there is none (or no longer).
    fn get(&self, call_id: &str) -> Result<Option<String>, ResultStoreError>;

    /// Where a person can find what is kept under `call_id` (a file), when there is such a
    /// place.
    fn location(&self, _call_id: &str) -> Option<String> {
        None
    }
}

/// Results in memory, the oldest dropped once they exceed a number of characters.
pub struct MemoryResultStore {
    max_chars: usize,
    kept: Mutex<(VecDeque<(String, String)>, usize)>,
}

impl MemoryResultStore {
    /// A store that keeps at most `max_chars` characters of results in all.
    pub fn new(max_chars: usize) -> Self {
        MemoryResultStore { max_chars, kept: Mutex::new((VecDeque::new(), 0)) }
    }
}

impl Default for MemoryResultStore {
    fn default() -> Self {
        MemoryResultStore::new(MEMORY_STORE_CHARS)
    }
}

impl ResultStore for MemoryResultStore {
    fn keep(&self, call_id: &str, text: &str) -> Result<(), ResultStoreError> {
        let chars = text.chars().count();
        if chars > self.max_chars {
            return Err(ResultStoreError::TooLarge { max_chars: self.max_chars });
        }
        let mut kept = self.kept.locked();
        let (entries, total) = &mut *kept;
        if let Some(at) = entries.iter().position(|(id, _)| id == call_id)
            && let Some((_, old)) = entries.remove(at)
        {
            *total -= old.chars().count();
        }
        while *total + chars > self.max_chars {
            let Some((_, oldest)) = entries.pop_front() else { break };
            *total -= oldest.chars().count();
        }
        entries.push_back((call_id.to_string(), text.to_string()));
        *total += chars;
        Ok(())
    }

    fn get(&self, call_id: &str) -> Result<Option<String>, ResultStoreError> {
        let kept = self.kept.locked();
        Ok(kept.0.iter().find(|(id, _)| id == call_id).map(|(_, text)| text.clone()))
    }
}

/// Results as files in a directory, one per call (named by a hash of the id, so any id is
/// a safe file name); the oldest files are removed past a number of files.
pub struct DirectoryResultStore {
    dir: PathBuf,
    max_files: usize,
    max_bytes: u64,
}

#[derive(Serialize, Deserialize)]
struct StoredResult {
    id: String,
    text: String,
}

impl DirectoryResultStore {
    /// A store in `dir` (created when needed) that keeps at most `max_files` results.
    /// The files take at most [`DIRECTORY_STORE_BYTES`] in all unless
    /// [`with_max_bytes`](Self::with_max_bytes) says otherwise.
    pub fn new(dir: impl Into<PathBuf>, max_files: usize) -> Self {
        DirectoryResultStore { dir: dir.into(), max_files: max_files.max(1), max_bytes: DIRECTORY_STORE_BYTES }
    }

    /// The bytes the files take at most, all together (the newest is kept whatever its size).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The file a result of `call_id` is kept in.
    pub fn path_of(&self, call_id: &str) -> PathBuf {
        let digest = crate::support::hex::hex(&Sha256::digest(call_id.as_bytes())[..16]);
        self.dir.join(format!("{digest}.json"))
    }

    /// Removes the oldest result files past the bounds: `max_files`, and `max_bytes` in all.
    fn prune(&self) -> std::io::Result<()> {
        let mut files: Vec<(std::time::SystemTime, PathBuf, u64)> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
            .filter_map(|entry| {
                let metadata = entry.metadata().ok()?;
                Some((metadata.modified().ok()?, entry.path(), metadata.len()))
            })
            .collect();
        // Newest first: keep files while both bounds hold (the newest always), drop the rest.
        files.sort_by_key(|file| std::cmp::Reverse(file.0));
        let mut bytes = 0u64;
        for (kept, (_, path, size)) in files.iter().enumerate() {
            bytes = bytes.saturating_add(*size);
            if kept > 0 && (kept >= self.max_files || bytes > self.max_bytes) {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    }
}

impl ResultStore for DirectoryResultStore {
    fn keep(&self, call_id: &str, text: &str) -> Result<(), ResultStoreError> {
        let fail = |source| ResultStoreError::Io { doing: "write to", path: self.dir.clone(), source };
        std::fs::create_dir_all(&self.dir).map_err(fail)?;
        let path = self.path_of(call_id);
        let body = serde_json::to_vec(&StoredResult { id: call_id.to_string(), text: text.to_string() })
            .map_err(|e| fail(std::io::Error::other(e)))?;
        write_atomically(&path, &body).map_err(fail)?;
        self.prune().map_err(fail)
    }

    fn get(&self, call_id: &str) -> Result<Option<String>, ResultStoreError> {
        let path = self.path_of(call_id);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ResultStoreError::Io { doing: "read", path, source }),
        };
        let stored: StoredResult =
            serde_json::from_slice(&bytes).map_err(|source| ResultStoreError::NotAResult { path: path.clone(), source })?;
        Ok((stored.id == call_id).then_some(stored.text))
    }

    fn location(&self, call_id: &str) -> Option<String> {
        Some(self.path_of(call_id).display().to_string())
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

/// The arguments of `view_tool_call`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ViewParams {
    /// The id of the tool call whose result was shortened.
    id: String,
    /// The first character to return (0 is the start of the result).
    #[serde(default)]
    offset: usize,
    /// How many characters to return: 8000 unless given, at most 8000.
    #[serde(default)]
    limit: Option<usize>,
}

/// `view_tool_call`: returns any part of a kept result.
pub(crate) struct ViewToolCall {
    definition: ToolDefinition,
    store: Arc<dyn ResultStore>,
}

impl ViewToolCall {
    pub fn new(store: Arc<dyn ResultStore>) -> Self {
        let input = crate::sources::tools::schema_value(schemars::schema_for!(ViewParams));
        let definition = ToolDefinition::new(
            VIEW_TOOL_CALL,
            "Returns part of a tool result that was shortened: the whole result is kept under its tool call id. Give the id \
             and the character offset to start at (the shortened result says where its hidden part begins).",
            input,
        )
        .expect("the parameters are a Rust struct, whose schema is an object")
        // Behind Exec, it costs no request anything until a compacted result names it.
        .deferred(true)
        .with_effect(crate::sources::tools::Effect::ReadOnly);
        ViewToolCall { definition, store }
    }
}

impl Tool for ViewToolCall {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, _: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let params: ViewParams = read_params(VIEW_TOOL_CALL, args)?;
            let id = serde_json::to_string(&params.id).unwrap_or_default();
            let text = self
                .store
                .get(&params.id)
                .map_err(|e| ToolError::execution(format!("{VIEW_TOOL_CALL}: {}", crate::support::report::error_sentence(&e))))?
                .ok_or_else(|| {
                    ToolError::params(format!(
                        "{VIEW_TOOL_CALL}: no result is kept for call {id}; only shortened results are kept"
                    ))
                })?;
            Ok(ToolOutput::text(view(&text, &id, params.offset, params.limit)))
        })
    }
}

/// Characters `offset..offset + limit` of `text`, under a line that says which part it is.
fn view(text: &str, id: &str, offset: usize, limit: Option<usize>) -> String {
    let total = text.chars().count();
    let start = offset.min(total);
    let end = start + limit.unwrap_or(VIEW_DEFAULT_CHARS).clamp(1, VIEW_MAX_CHARS).min(total - start);
    let part: String = text.chars().skip(start).take(end - start).collect();
    let next = if end < total { format!("; the next part starts at offset {end}") } else { "; this is the end".to_string() };
    format!("[characters {start} to {end} of {total} of the result of call {id}{next}]\n{part}")
}

/// Where the command line keeps compacted results: `$XDG_STATE_HOME/exec-host/results`,
/// else `~/.local/state/exec-host/results`.
pub fn default_dir() -> Option<PathBuf> {
    Some(BaseDir::State.exec_host()?.join("results"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_say_which_part_they_are() {
        assert_eq!(
            view("abcdef", "\"c\"", 0, Some(4)),
            "[characters 0 to 4 of 6 of the result of call \"c\"; the next part starts at offset 4]\nabcd"
        );
        assert_eq!(view("abcdef", "\"c\"", 4, None), "[characters 4 to 6 of 6 of the result of call \"c\"; this is the end]\nef");
        assert_eq!(view("abc", "\"c\"", 10, None), "[characters 3 to 3 of 3 of the result of call \"c\"; this is the end]\n");
        assert!(view(&"x".repeat(20_000), "\"c\"", 0, Some(100_000)).ends_with(&"x".repeat(VIEW_MAX_CHARS)));
    }

    #[test]
    fn the_memory_store_drops_the_oldest_past_its_bound() {
        let store = MemoryResultStore::new(10);
        store.keep("a", "12345").unwrap();
        store.keep("b", "123").unwrap();
        store.keep("c", "1234").unwrap();
        assert_eq!(store.get("a").unwrap(), None);
        assert_eq!(store.get("b").unwrap().as_deref(), Some("123"));
        store.keep("b", "9").unwrap();
        assert_eq!(store.get("b").unwrap().as_deref(), Some("9"));
        assert!(store.keep("d", "x".repeat(11).as_str()).is_err());
    }

    #[test]
    fn the_directory_store_keeps_any_id_and_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryResultStore::new(dir.path().join("results"), 2);
        store.keep("../../etc/passwd", "one").unwrap();
        assert_eq!(store.get("../../etc/passwd").unwrap().as_deref(), Some("one"));
        assert!(store.path_of("../../etc/passwd").starts_with(dir.path().join("results")));
        for id in ["b", "c", "d"] {
            std::thread::sleep(std::time::Duration::from_millis(20));
            store.keep(id, id).unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path().join("results")).unwrap().count(), 2);
        assert_eq!(store.get("d").unwrap().as_deref(), Some("d"));
        assert_eq!(store.get("nothing").unwrap(), None);
    }

    #[test]
    fn the_directory_store_drops_the_oldest_past_its_bytes_and_keeps_the_newest_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryResultStore::new(dir.path().join("results"), 100).with_max_bytes(2_500);
        for id in ["a", "b", "c"] {
            std::thread::sleep(std::time::Duration::from_millis(20));
            store.keep(id, &"x".repeat(1_000)).unwrap();
        }
        assert_eq!(store.get("a").unwrap(), None, "three files of a kilobyte pass 2,500 bytes");
        assert!(store.get("b").unwrap().is_some() && store.get("c").unwrap().is_some());
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.keep("big", &"y".repeat(10_000)).unwrap();
        assert_eq!(store.get("big").unwrap().map(|text| text.len()), Some(10_000), "the newest is kept");
        assert_eq!(std::fs::read_dir(dir.path().join("results")).unwrap().count(), 1);
    }
}
