//! The stdio transport to a server's child process, read as a hostile peer's output.
//!
//! Every message is one line of at most [`MAX_MESSAGE_BYTES`]. A line that cannot be read as
//! JSON-RPC (too long, invalid UTF-8, a lone surrogate, nested too deep, the wrong shape)
//! never leaves a call waiting: when the line is an answer to one of this client's requests
//! (its top-level `id` can be read from the raw bytes and it has no `method`), that request
//! fails at once with the reason; anything else is logged and skipped, as the MCP SDKs do
//! with noise on stdout. A too-long line is never held: its bytes are scanned for the id as
//! they pass and dropped.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Mutex;
use tracing::warn;

/// The longest message read from a server, in bytes. Past it the message is dropped as it
/// arrives; the request it answers fails.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How long a closed server may take to exit by itself before it is sent SIGTERM, and then
/// again before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(800);

/// Marks an error this client made up for an answer it could not read (so it is worded as
/// such, not as the server's own error).
const UNREADABLE_ANSWER: &str = "exec-host/unreadableAnswer";

/// A server's child process as an rmcp transport.
pub(crate) struct ChildTransport {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl ChildTransport {
    /// `child` must have been spawned with piped stdin and stdout.
    pub fn new(mut child: Child) -> std::io::Result<Self> {
        let missing = || std::io::Error::other("the child's stdin and stdout must be piped");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        Ok(ChildTransport { child, stdin: Arc::new(Mutex::new(Some(stdin))), lines: Lines::new(BufReader::new(stdout)) })
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleClient>) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let pipe = stdin.as_mut().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "transport closed"))?;
            pipe.write_all(&line).await?;
            pipe.flush().await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.lines.next_message()
    }

    /// Closes the server's stdin (the MCP way to ask a stdio server to exit), then SIGTERM,
    /// then SIGKILL, each after a grace.
    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.stdin.lock().await.take());
        if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_ok() {
            return Ok(());
        }
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: kill(2) with a pid this process spawned and has not yet reaped (`id()`
            // is None once it was), so the pid cannot name another process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        self.child.kill().await
    }
}

/// Reads every message of `bytes` as they would come from a server's stdout; the number
/// read. For the fuzz target of this reader.
#[cfg(fuzzing)]
pub fn read_messages(bytes: &[u8]) -> usize {
    let mut lines = Lines::new(bytes);
    let mut count = 0;
    while futures::executor::block_on(lines.next_message()).is_some() {
        count += 1;
    }
    count
}

/// The messages of a stream of lines, read within [`MAX_MESSAGE_BYTES`] each.
///
/// Cancellation-safe: `next_message` is polled inside a `select!`; every byte taken from the
/// reader is accounted for (in `line` and `envelope`) before the next await, so a dropped
/// call resumes where it stopped.
struct Lines<R> {
    reader: R,
    /// The current line, while it is within the bound.
    line: Vec<u8>,
    /// The current line passed the bound: its bytes are scanned and dropped.
    too_long: bool,
    /// The request the current line answers already failed (at the moment it grew too long).
    failed: bool,
    envelope: Envelope,
}

enum Read {
    Line,
    /// The line just passed the bound (it goes on).
    TooLong,
    End,
}

impl<R: AsyncBufRead + Unpin + Send> Lines<R> {
    fn new(reader: R) -> Self {
        Lines { reader, line: Vec::new(), too_long: false, failed: false, envelope: Envelope::default() }
    }

    async fn next_message(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.read().await {
                Read::End => return None,
                Read::TooLong => {
                    if let Some(id) = self.envelope.answer_id() {
                        self.failed = true;
                        return Some(unreadable(id, too_long()));
                    }
                }
                Read::Line => {
                    let message = self.message();
                    self.line.clear();
                    self.too_long = false;
                    self.failed = false;
                    self.envelope = Envelope::default();
                    if message.is_some() {
                        return message;
                    }
                }
            }
        }
    }

    async fn read(&mut self) -> Read {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => {
                    warn!("reading from an MCP server failed: {error}");
                    return Read::End;
                }
            };
            if available.is_empty() {
                return Read::End;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let taken = &available[..newline.map_or(available.len(), |at| at + 1)];
            let count = taken.len();
            self.envelope.scan(taken);
            let mut grew_too_long = false;
            if !self.too_long {
                if self.line.len() + count > MAX_MESSAGE_BYTES + 2 {
                    self.too_long = true;
                    self.line = Vec::new();
                    grew_too_long = true;
                } else {
                    self.line.extend_from_slice(taken);
                }
            }
            self.reader.consume(count);
            if newline.is_some() {
                return Read::Line;
            }
            if grew_too_long {
                return Read::TooLong;
            }
        }
    }

    /// The message of the complete line, or what its request gets instead; `None` for a
    /// line nobody waits on.
    fn message(&self) -> Option<ServerJsonRpcMessage> {
        if self.too_long {
            return if self.failed { None } else { self.envelope.answer_id().map(|id| unreadable(id, too_long())) };
        }
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
            Ok(message) => Some(message),
            Err(error) => match self.envelope.answer_id() {
                Some(id) => Some(unreadable(id, format!("it is not a valid JSON-RPC answer ({error})"))),
                None => {
                    warn!("an MCP server wrote a line that is not a JSON-RPC message ({error}); skipped");
                    None
                }
            },
        }
    }
}

fn too_long() -> String {
    format!("it is longer than {} MiB, the most this host reads in one message", MAX_MESSAGE_BYTES >> 20)
}

/// The error answer standing in for one the client could not read.
fn unreadable(id: RequestId, reason: String) -> ServerJsonRpcMessage {
    let data = json!({ UNREADABLE_ANSWER: true });
    ServerJsonRpcMessage::error(ErrorData::new(ErrorCode::PARSE_ERROR, reason, Some(data)), Some(id))
}

/// Whether `error` stands in for an answer this client could not read.
pub(crate) fn is_unreadable(error: &ErrorData) -> bool {
    error.code == ErrorCode::PARSE_ERROR && error.data.as_ref().and_then(|d| d.get(UNREADABLE_ANSWER)).is_some()
}

/// What can be known of a line's JSON-RPC envelope from its raw bytes, whatever the rest
/// holds (invalid UTF-8, bad escapes, any depth, any length): its top-level `id` and whether
/// it has a top-level `method`. Fed byte by byte, in constant memory.
#[derive(Default)]
struct Envelope {
    /// The first non-blank byte was seen; `object` says whether it opened an object.
    started: bool,
    object: bool,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// Reading a key: its first bytes (enough to tell `id` and `method` apart).
    key: Option<Vec<u8>>,
    last_key: Key,
    /// Reading the value of `id`: its raw bytes.
    id: Option<Vec<u8>>,
    id_raw: Vec<u8>,
    has_method: bool,
}

#[derive(Default, PartialEq, Eq, Clone, Copy)]
enum Key {
    #[default]
    Other,
    Id,
    Method,
}

/// Longest `id` value kept, in bytes; a longer one is not an id this client sent.
const MAX_ID_BYTES: usize = 64;

impl Envelope {
    fn scan(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if let Some(id) = &mut self.id {
            id.push(byte);
            if id.len() > MAX_ID_BYTES {
                // No id this client sent is that long.
                self.id = None;
                self.id_raw.clear();
            }
        }
        if self.in_string {
            if let Some(key) = &mut self.key
                && key.len() <= 8
            {
                key.push(byte);
            }
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.last_key = match key.as_slice() {
                        b"id\"" => Key::Id,
                        b"method\"" => Key::Method,
                        _ => Key::Other,
                    };
                }
            }
            return;
        }
        if byte.is_ascii_whitespace() {
            return;
        }
        if !self.started {
            self.started = true;
            self.object = byte == b'{';
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                self.depth = self.depth.saturating_add(1);
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => match self.last_key {
                Key::Id => self.id = Some(Vec::new()),
                Key::Method => self.has_method = true,
                Key::Other => {}
            },
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            _ => {}
        }
    }

    /// A top-level value ended: if it was the `id`, keep its bytes (without the delimiter).
    fn end_value(&mut self) {
        if let Some(mut id) = self.id.take() {
            id.pop();
            self.id_raw = id;
        }
    }

    /// The id of the request this line answers: a top-level object with an `id` that is a
    /// number or a string, and no `method` (requests and notifications are the server's own).
    fn answer_id(&self) -> Option<RequestId> {
        if !self.object || self.has_method || self.id_raw.is_empty() {
            return None;
        }
        serde_json::from_slice(&self.id_raw).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(line: &[u8]) -> Option<RequestId> {
        let mut envelope = Envelope::default();
        envelope.scan(line);
        envelope.answer_id()
    }

    #[test]
    fn the_envelope_gives_the_id_of_answers_only() {
        assert_eq!(id_of(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Some(RequestId::Number(7)));
        assert_eq!(id_of(br#"{"result":{"id":1,"x":[1,{"id":2}]}, "id" : "a\"b" }"#), Some(RequestId::String("a\"b".into())));
        assert_eq!(id_of(b"{\"id\":3,\"result\":\"\xff\xfe\\ud800\"}"), Some(RequestId::Number(3)));
        let deep = [b"{\"id\":4,\"result\":".as_slice(), &[b'['; 100_000]].concat();
        assert_eq!(id_of(&deep), Some(RequestId::Number(4)));
        // Requests and notifications of the server, and lines that are no object, have none.
        assert_eq!(id_of(br#"{"id":5,"method":"ping"}"#), None);
        assert_eq!(id_of(br#"{"method":"x","params":{},"id":5}"#), None);
        assert_eq!(id_of(br#"[{"id":6}]"#), None);
        assert_eq!(id_of(b"not json"), None);
        assert_eq!(id_of(br#"{"id":{"nested":1},"result":{}}"#), None);
        assert_eq!(id_of(format!(r#"{{"id":"{}"}}"#, "x".repeat(100)).as_bytes()), None);
        // A key that merely starts like `id` is another key.
        assert_eq!(id_of(br#"{"idx":8,"result":{}}"#), None);
    }

    async fn messages(input: Vec<u8>) -> Vec<ServerJsonRpcMessage> {
        let mut lines = Lines::new(BufReader::with_capacity(4096, std::io::Cursor::new(input)));
        let mut out = Vec::new();
        while let Some(message) = lines.next_message().await {
            out.push(message);
        }
        out
    }

    fn error_of(message: &ServerJsonRpcMessage) -> (RequestId, String) {
        match message {
            rmcp::model::JsonRpcMessage::Error(error) => (error.id.clone().unwrap(), error.error.message.to_string()),
            _ => panic!("not an error: {message:?}"),
        }
    }

    #[tokio::test]
    async fn unreadable_answers_fail_their_request_and_noise_is_skipped() {
        let mut input = Vec::new();
        input.extend_from_slice(b"some log line on stdout\n\n");
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"\xff\"}}\n");
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"x\":\"\\udc00\"}}\r\n");
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":");
        input.extend_from_slice(&[b'['; 100_000]);
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n");
        let out = messages(input).await;
        assert_eq!(out.len(), 4, "{out:?}");
        for (message, id) in out.iter().take(3).zip(1..) {
            let (got, reason) = error_of(message);
            assert_eq!(got, RequestId::Number(id));
            assert!(reason.contains("not a valid JSON-RPC answer"), "{reason}");
        }
        assert!(matches!(&out[3], rmcp::model::JsonRpcMessage::Response(r) if r.id == RequestId::Number(4)));
    }

    #[tokio::test]
    async fn a_too_long_answer_fails_at_once_and_is_never_held() {
        // The id comes first: the request fails when the bound is passed, before the line ends.
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"text\":\"".to_vec();
        input.resize(input.len() + MAX_MESSAGE_BYTES + 10, b'x');
        input.extend_from_slice(b"\"}}\n");
        // The id comes last: the request fails when the line ends.
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":{\"text\":\"");
        input.resize(input.len() + MAX_MESSAGE_BYTES + 10, b'y');
        input.extend_from_slice(b"\"},\"id\":10}\n{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":{}}\n");
        let mut lines = Lines::new(BufReader::with_capacity(64 * 1024, std::io::Cursor::new(input)));
        let first = lines.next_message().await.unwrap();
        assert_eq!(error_of(&first).0, RequestId::Number(9));
        assert!(error_of(&first).1.contains("longer than 16 MiB"));
        assert!(lines.line.capacity() <= MAX_MESSAGE_BYTES + 64 * 1024, "the line is not held");
        assert_eq!(error_of(&lines.next_message().await.unwrap()).0, RequestId::Number(10));
        assert!(matches!(lines.next_message().await.unwrap(), rmcp::model::JsonRpcMessage::Response(_)));
        assert!(lines.next_message().await.is_none());
    }
}
