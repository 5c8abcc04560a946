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
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::jsonrpc::{Screened, screen, unreadable};
use super::{Capacity, ClientApprover, Gateway};

/// Messages waiting in either direction; past it the sender waits.
const WAITING: usize = 64;

/// Serves one client until it closes stdin or `stop` is cancelled; then cancels `stop`.
pub async fn serve(
    session: &Session,
    capacity: Arc<Capacity>,
    max_line_bytes: usize,
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
    let gateway = Gateway::new(session, ClientApprover::new(), capacity, stop.clone());
    let served = match gateway.serve(transport).await {
        Ok(service) => tokio::select! {
            ended = service.waiting() => ended.map(|_| ()).map_err(|e| format!("the MCP connection failed: {e}")),
            _ = stop.cancelled() => Ok(()),
        },
        Err(e) => Err(format!("the MCP client did not initialize: {e}")),
    };
    stop.cancel();
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
    let mut lines = FramedRead::new(input, LinesCodec::new_with_max_length(max_line_bytes));
    // After a bad line the framing yields one `None` before it reads on; only a `None` that
    // follows no error is the end of input.
    let mut after_error = false;
    loop {
        let Some(line) = lines.next().await else {
            if std::mem::take(&mut after_error) {
                continue;
            }
            return;
        };
        after_error = line.is_err();
        let screened = match line {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => screen(line.as_bytes()),
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                unreadable(&format!("the message is longer than {max_line_bytes} bytes, this server's bound (--max-body-bytes)"))
            }
            Err(LinesCodecError::Io(error)) if error.kind() == std::io::ErrorKind::InvalidData => {
                unreadable("the message is not UTF-8")
            }
            Err(LinesCodecError::Io(_)) => return,
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
