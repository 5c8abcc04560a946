//! `serve --stdio`: one client on standard input and output, one JSON-RPC message per line.
//!
//! The lines are read here rather than by rmcp's own stdio transport so that each is bounded
//! (`--max-body-bytes`) and screened ([`super::jsonrpc::screen`]): a line that is not a message
//! gets JSON-RPC's error and the connection goes on. When stdin and stdout are pipes, as an
//! MCP client starts a server, they are read and written by the runtime's own event loop;
//! otherwise (a terminal, a file) through its blocking pool.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use exec_host::{CancellationToken, Session};
use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, FramedRead};

use super::jsonrpc::{Screened, screen, unreadable};
use super::{Capacity, ClientApprover, Gateway, Parking};

/// Messages waiting in either direction; past it the sender waits.
const WAITING: usize = 64;

/// Serves one client until it closes stdin or `stop` is cancelled; then cancels `stop`.
pub async fn serve(
    session: &Session,
    capacity: Arc<Capacity>,
    max_line_bytes: usize,
    parking: Option<Arc<Parking>>,
    stop: CancellationToken,
) -> Result<(), String> {
    let (input, output) = standard_streams();
    let (lines, outgoing) = mpsc::channel::<String>(WAITING);
    let writer = tokio::spawn(write_lines(output, outgoing));
    let (messages, mut incoming) = mpsc::channel(WAITING);
    let reader = tokio::spawn(read_lines(input, max_line_bytes, messages, lines.clone()));
    let sink = futures::sink::unfold(lines, |lines, message: ServerJsonRpcMessage| async move {
        let line = serde_json::to_string(&message).map_err(std::io::Error::other)?;
        lines.send(line).await.map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok::<_, std::io::Error>(lines)
    });
    let transport = (Box::pin(sink), futures::stream::poll_fn(move |cx| incoming.poll_recv(cx)));
    let gateway = Gateway::new(session, ClientApprover::new(), capacity, stop.clone(), parking.clone(), None);
    let served = match gateway.serve(transport).await {
        Ok(service) => tokio::select! {
            ended = service.waiting() => ended.map(|_| ()).map_err(|e| format!("the MCP connection failed: {e}")),
            _ = stop.cancelled() => Ok(()),
        },
        Err(e) => Err(format!("the MCP client did not initialize: {e}")),
    };
    stop.cancel();
    // Its client has gone: nobody asks about its tasks any more, so those still running end.
    if let Some(parking) = &parking {
        parking.tasks.drain(std::time::Duration::ZERO).await;
    }
    reader.abort();
    // The last answers go out; a client that stopped reading does not hold the stop up.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    served
}

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin and stdout: on the event loop when they are pipes, else through the blocking pool.
fn standard_streams() -> (Input, Output) {
    use tokio::net::unix::pipe;
    let input: Input = match own(std::io::stdin().as_fd()).and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok()) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    };
    let output: Output = match own(std::io::stdout().as_fd()).and_then(|fd| pipe::Sender::from_owned_fd(fd).ok()) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

fn own(fd: std::os::fd::BorrowedFd<'_>) -> Option<OwnedFd> {
    fd.try_clone_to_owned().ok()
}

/// Reads the input line by line: messages go to the server, bad lines are answered directly.
async fn read_lines(
    input: Input,
    max_line_bytes: usize,
    messages: mpsc::Sender<ClientJsonRpcMessage>,
    answers: mpsc::Sender<String>,
) {
    let mut lines = FramedRead::new(input, BoundedLines::new(max_line_bytes));
    while let Some(Ok(line)) = lines.next().await {
        let screened = match line {
            Line::Text(line) if line.trim().is_empty() => continue,
            Line::Text(line) => screen(line.as_bytes()),
            Line::TooLong => {
                unreadable(&format!("the message is longer than {max_line_bytes} bytes, this server's bound (--max-body-bytes)"))
            }
            Line::NotUtf8 => unreadable("the message is not UTF-8"),
        };
        let sent = match screened {
            Screened::Pass(message) => messages.send(*message).await.is_ok(),
            Screened::Answer { response, .. } => answers.send(response.to_string()).await.is_ok(),
            Screened::Ignore => true,
        };
        if !sent {
            return;
        }
    }
}

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    NotUtf8,
    /// Longer than the bound: its bytes were dropped as they came, never kept.
    TooLong,
}

/// Splits the input at `\n` (a `\r` before it is dropped), keeping at most `max` bytes of a
/// line. Every line is an item, the bad ones included, and never a decoding error: a framing
/// stops decoding after an error until more input arrives, which would leave the messages
/// read together with a bad line unanswered.
struct BoundedLines {
    max: usize,
    /// Inside a line found too long: drop bytes up to its end.
    dropping: bool,
    /// Where to look for the next `\n` (the bytes before it have none).
    searched: usize,
}

impl BoundedLines {
    fn new(max: usize) -> Self {
        BoundedLines { max, dropping: false, searched: 0 }
    }

    fn line(bytes: &[u8]) -> Line {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) => Line::Text(text.to_string()),
            Err(_) => Line::NotUtf8,
        }
    }
}

impl Decoder for BoundedLines {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, buffer: &mut tokio_util::bytes::BytesMut) -> Result<Option<Line>, std::io::Error> {
        loop {
            let newline = buffer[self.searched..].iter().position(|&b| b == b'\n').map(|at| at + self.searched);
            self.searched = 0;
            match newline {
                Some(end) if self.dropping => {
                    let _ = buffer.split_to(end + 1);
                    self.dropping = false;
                }
                Some(end) if end > self.max => {
                    let _ = buffer.split_to(end + 1);
                    return Ok(Some(Line::TooLong));
                }
                Some(end) => return Ok(Some(Self::line(&buffer.split_to(end + 1)))),
                None if self.dropping => {
                    buffer.clear();
                    return Ok(None);
                }
                None if buffer.len() > self.max => {
                    buffer.clear();
                    self.dropping = true;
                    return Ok(Some(Line::TooLong));
                }
                None => {
                    self.searched = buffer.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buffer: &mut tokio_util::bytes::BytesMut) -> Result<Option<Line>, std::io::Error> {
        if let Some(line) = self.decode(buffer)? {
            return Ok(Some(line));
        }
        self.searched = 0;
        if buffer.is_empty() || std::mem::take(&mut self.dropping) {
            buffer.clear();
            return Ok(None);
        }
        Ok(Some(Self::line(&buffer.split_to(buffer.len()))))
    }
}

/// Writes each message as one line, flushing when no other is waiting, until every sender
/// is gone.
async fn write_lines(output: Output, mut outgoing: mpsc::Receiver<String>) {
    let mut output = tokio::io::BufWriter::new(output);
    while let Some(line) = outgoing.recv().await {
        let mut next = Some(line);
        while let Some(line) = next {
            if output.write_all(line.as_bytes()).await.is_err() || output.write_all(b"\n").await.is_err() {
                return;
            }
            next = outgoing.try_recv().ok();
        }
        if output.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::bytes::BytesMut;

    use super::*;

    /// Every line the decoder finds in `reads`, fed one read at a time, then the end.
    fn lines(max: usize, reads: &[&[u8]]) -> Vec<Line> {
        let mut decoder = BoundedLines::new(max);
        let mut buffer = BytesMut::new();
        let mut found = Vec::new();
        for read in reads {
            buffer.extend_from_slice(read);
            while let Some(line) = decoder.decode(&mut buffer).unwrap() {
                found.push(line);
            }
        }
        while let Some(line) = decoder.decode_eof(&mut buffer).unwrap() {
            found.push(line);
        }
        found
    }

    fn text(line: &str) -> Line {
        Line::Text(line.to_string())
    }

    #[test]
    fn a_bad_line_does_not_hold_back_what_was_read_with_it() {
        assert_eq!(lines(64, &[b"\xff\xfe\n{\"a\":1}\n"]), [Line::NotUtf8, text("{\"a\":1}")]);
        assert_eq!(lines(8, &[b"0123456789\n{}\r\n"]), [Line::TooLong, text("{}")]);
        // A long line dropped as it comes, over several reads, then the next one whole.
        assert_eq!(lines(4, &[b"0123456", b"789", b"ab\nxy", b"z\n"]), [Line::TooLong, text("xyz")]);
        assert_eq!(lines(64, &[b"{}\n\xc3", b"\xa9\n", b"tail"]), [text("{}"), text("é"), text("tail")]);
        assert_eq!(lines(4, &[b"\n\n0123456789"]), [text(""), text(""), Line::TooLong]);
        assert_eq!(lines(4, &[b"abcd\n"]), [text("abcd")], "a line of exactly the bound is kept");
    }
}
