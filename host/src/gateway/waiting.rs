//! Questions of downstream servers for clients of MCP 2026-07-28. A server asks for input in
//! the middle of a nested call (elicitation, or its own `InputRequiredResult`), and the client
//! whose call it is can only be asked in that call's answer. Such a call cannot park: the
//! downstream call waits for its answer on a live connection. So its Exec keeps running in
//! this process while the `tools/call` answers `InputRequiredResult`: one elicitation form per
//! question, keyed `input-ID`, as the server sent it (`crate::gateway::elicitation::passed_on`),
//! and a `requestState` (`crate::gateway::request_state`) that names the waiting call and this
//! process. The retry's answers
//! go to the questions, and the same call is followed on, to its result or its next round.
//!
//! A call waits at most [`ANSWER_WAIT`] for its retry, then it is ended; a server that
//! stops ends every call still waiting. A retry that reaches another replica is refused
//! saying where the call waits: replicas that serve such calls need requests of one client
//! routed to one replica. Bounds: [`MAX_WAITING_CALLS`] calls waiting at once (past it a
//! question is declined), [`MAX_QUESTIONS`] questions of one call at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::gateway::elicitation::passed_on;
use crate::sources::tools::input::{InputAnswer, InputHandler, InputRequest};

/// Calls that may wait for their client's answers at once, in one process.
pub const MAX_WAITING_CALLS: usize = 256;

/// Questions one call may have waiting at once; past it, a question is declined.
pub const MAX_QUESTIONS: usize = 16;

/// How long a call waits for the retry that answers its questions before it is ended.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10 * 60);

/// The prefix of a question's key in `inputRequests` and `inputResponses`.
const INPUT_KEY: &str = "input-";

/// One question of a running call, and where its answer goes.
struct Question {
    request: InputRequest,
    answer: oneshot::Sender<InputAnswer>,
}

/// The input handler of one call: its questions go to whoever follows the call.
struct Asker {
    questions: mpsc::Sender<Question>,
}

impl InputHandler for Asker {
    fn answer(&self, request: InputRequest) -> BoxFuture<'static, InputAnswer> {
        let server = request.server.clone();
        let (answer, answered) = oneshot::channel();
        if self.questions.try_send(Question { request, answer }).is_err() {
            tracing::warn!(%server, "its input request is declined: the call already waits on {MAX_QUESTIONS} questions");
            return Box::pin(std::future::ready(InputAnswer::Decline));
        }
        // No answer comes when the call ended or waited too long: the server is declined.
        Box::pin(async move { answered.await.unwrap_or(InputAnswer::Decline) })
    }
}

/// A call that runs on its own task, so that it outlives the request that started it, and
/// may stop to ask.
pub struct Call<T> {
    result: oneshot::Receiver<T>,
    questions: mpsc::Receiver<Question>,
    abort: CancellationToken,
    /// The questions sent to the client and not answered yet, by id.
    asked: Vec<(u32, Question)>,
    next_id: u32,
}

/// How far following a call got.
pub enum Followed<T> {
    /// Its result (none when its task ended without one: it panicked, never expected).
    Done(Option<T>),
    /// It asks: the forms to send.
    Asks(Call<T>, InputRequests),
}

/// The handler to give a call's options (`CallOptions::on_input`), and the receiver its
/// questions arrive at.
pub fn asker() -> (Arc<dyn InputHandler>, CallQuestions) {
    let (questions, arrived) = mpsc::channel(MAX_QUESTIONS);
    (Arc::new(Asker { questions }), CallQuestions(arrived))
}

impl<T: Send + 'static> Call<T> {
    /// Runs `run` on a task of its own; `abort` is the call's.
    pub fn start(run: impl Future<Output = T> + Send + 'static, questions: CallQuestions, abort: CancellationToken) -> Self {
        let (finished, result) = oneshot::channel();
        tokio::spawn(tracing::Instrument::in_current_span(async move {
            let _ = finished.send(run.await);
        }));
        Call { result, questions: questions.0, abort, asked: Vec::new(), next_id: 0 }
    }

    /// Follows the call to its result, or to the questions it asks (with those left
    /// unanswered by the last round). `stopped` ends it: the client left, or the server stops.
    pub async fn follow(mut self, stopped: impl Future<Output = ()>) -> Followed<T> {
        tokio::pin!(stopped);
        loop {
            if self.asked.is_empty() {
                tokio::select! {
                    biased;
                    result = &mut self.result => return Followed::Done(result.ok()),
                    Some(question) = self.questions.recv() => self.ask(question),
                    () = &mut stopped => {
                        self.abort.cancel();
                        return Followed::Done((&mut self.result).await.ok());
                    }
                }
            }
            // Questions asked at about the same time go in one round.
            while let Ok(question) = self.questions.try_recv() {
                self.ask(question);
            }
            // A question that could not be passed on was declined: the call goes on.
            if !self.asked.is_empty() {
                let forms = self.forms();
                return Followed::Asks(self, forms);
            }
        }
    }

    /// Keeps a question to send, or declines one that cannot be passed on.
    fn ask(&mut self, question: Question) {
        match passed_on(&question.request) {
            Ok(_) => {
                self.asked.push((self.next_id, question));
                self.next_id += 1;
            }
            Err(why) => {
                let why = crate::support::report::error_sentence(&why);
                tracing::warn!(server = %question.request.server, "its input request is declined: {why}");
                let _ = question.answer.send(InputAnswer::Decline);
            }
        }
    }

    /// One elicitation form per question waiting for its answer.
    fn forms(&self) -> InputRequests {
        self.asked
            .iter()
            .filter_map(|(id, question)| {
                let params = passed_on(&question.request).ok()?;
                Some((format!("{INPUT_KEY}{id}"), rmcp::model::InputRequest::Elicitation(ElicitRequest::new(params))))
            })
            .collect()
    }

    /// The answers a retry gives, checked: each names a question asked and is an
    /// elicitation result.
    fn answers(&self, responses: Option<&InputResponses>) -> Result<Vec<(u32, InputAnswer)>, String> {
        responses
            .into_iter()
            .flatten()
            .map(|(key, response)| {
                let id = key.strip_prefix(INPUT_KEY).and_then(|id| id.parse::<u32>().ok());
                let Some(id) = id.filter(|id| self.asked.iter().any(|(asked, _)| asked == id)) else {
                    return Err(format!("its inputResponses answer `{}`, which this call did not ask", cut(key)));
                };
                Ok((id, answer(key, response)?))
            })
            .collect()
    }

    /// Gives each answer to its question; those without one ask again.
    fn answer(&mut self, answers: Vec<(u32, InputAnswer)>) {
        for (id, answer) in answers {
            if let Some(at) = self.asked.iter().position(|(asked, _)| *asked == id) {
                let (_, question) = self.asked.remove(at);
                let _ = question.answer.send(answer);
            }
        }
    }

    /// Ends the call (its result is not read).
    pub fn end(self) {
        self.abort.cancel();
    }
}

/// Where one call's questions arrive.
pub struct CallQuestions(mpsc::Receiver<Question>);

/// The answer one response gives.
fn answer(key: &str, response: &Value) -> Result<InputAnswer, String> {
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => {
            Ok(InputAnswer::Accept(response.get("content").and_then(Value::as_object).cloned().unwrap_or_default()))
        }
        Some("decline") => Ok(InputAnswer::Decline),
        Some("cancel") => Ok(InputAnswer::Cancel),
        _ => Err(format!("its answer to `{}` is not an elicitation result (action accept, decline or cancel)", cut(key))),
    }
}

fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

/// The calls of this process waiting for their clients' answers, by handle.
pub struct Waiting<T> {
    calls: Mutex<HashMap<String, Call<T>>>,
    /// Names this process in the request states it makes, so that a retry that reaches
    /// another one is told where its call waits.
    replica: String,
    stop: CancellationToken,
}

/// Why a retry finds no waiting call.
pub enum NotWaiting {
    /// Its call waits in another process (another replica, or this server before a restart).
    Elsewhere,
    /// Its call was answered already, ended, or waited too long.
    Gone,
    /// The answers are not to its questions.
    Refused(String),
}

impl<T: Send + 'static> Waiting<T> {
    /// The waiting calls of one server, all ended when `stop` is cancelled; why not, when the
    /// system has no randomness to name this process with.
    pub fn new(stop: CancellationToken) -> std::io::Result<Arc<Self>> {
        Ok(Arc::new(Waiting { calls: Mutex::default(), replica: crate::gateway::unguessable_id()?, stop }))
    }

    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Keeps `call` until its retry comes, for at most [`ANSWER_WAIT`]; its handle. Past the
    /// bound on waiting calls (or with no randomness to name it) it is not kept: its questions
    /// are declined and it is given back.
    pub fn keep(self: &Arc<Self>, mut call: Call<T>) -> Result<String, Call<T>> {
        let named = crate::gateway::unguessable_id();
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let handle = match named {
            Ok(handle) if calls.len() < MAX_WAITING_CALLS => handle,
            refused => {
                drop(calls);
                let why = match refused {
                    Ok(_) => format!("{MAX_WAITING_CALLS} calls already wait for their clients' answers"),
                    Err(why) => format!("no name could be made for the waiting call ({why})"),
                };
                tracing::warn!("a question is declined: {why}");
                call.answer(call.asked.iter().map(|(id, _)| (*id, InputAnswer::Decline)).collect());
                return Err(call);
            }
        };
        calls.insert(handle.clone(), call);
        drop(calls);
        let waiting = self.clone();
        let kept = handle.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(ANSWER_WAIT) => {}
                () = waiting.stop.cancelled() => {}
            }
            if let Some(call) = waiting.take(&kept) {
                tracing::info!("a call that waited for its client's answers was ended unanswered");
                call.end();
            }
        });
        Ok(handle)
    }

    fn take(&self, handle: &str) -> Option<Call<T>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).remove(handle)
    }

    /// The call a retry names (kept by `replica` under `handle`), its questions answered.
    /// Answers that are not to its questions leave it waiting.
    pub fn resume(&self, replica: &str, handle: &str, responses: Option<&InputResponses>) -> Result<Call<T>, NotWaiting> {
        if replica != self.replica {
            return Err(NotWaiting::Elsewhere);
        }
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let call = calls.get(handle).ok_or(NotWaiting::Gone)?;
        let answers = call.answers(responses).map_err(NotWaiting::Refused)?;
        let mut call = calls.remove(handle).ok_or(NotWaiting::Gone)?;
        drop(calls);
        call.answer(answers);
        Ok(call)
    }
}

impl NotWaiting {
    /// The sentence of a refused retry.
    pub fn sentence(&self) -> String {
        match self {
            NotWaiting::Elsewhere => "the call that asked waits in another server process (another replica, or this \
                one before it restarted): the retry of a call that waits on a downstream server's question must reach \
                the replica that answered it, so route each client's requests to one replica, or call the tool again"
                .into(),
            NotWaiting::Gone => format!(
                "the call that asked waits no more (its questions were answered already, it ended, or it waited more \
                 than {} minutes); call the tool again",
                ANSWER_WAIT.as_secs() / 60
            ),
            NotWaiting::Refused(why) => why.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(server: &str) -> InputRequest {
        let schema = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}});
        InputRequest::form(server, "Who?".into(), schema).unwrap()
    }

    #[tokio::test]
    async fn questions_become_forms_answers_reach_them_and_unanswered_ones_ask_again() {
        let (asker, questions) = asker();
        let (to_run, run) = oneshot::channel::<()>();
        let first = asker.answer(question("a"));
        let second = asker.answer(question("b"));
        let call = Call::start(
            async move {
                let _ = run.await;
                "done"
            },
            questions,
            CancellationToken::new(),
        );
        let Followed::Asks(mut call, forms) = call.follow(std::future::pending()).await else { panic!("it asks") };
        assert_eq!(forms.keys().cloned().collect::<Vec<_>>(), ["input-0", "input-1"]);
        let given: InputResponses =
            serde_json::from_value(serde_json::json!({"input-1": {"action": "accept", "content": {"name": "Ada"}}})).unwrap();
        let answers = call.answers(Some(&given)).unwrap();
        call.answer(answers);
        assert_eq!(second.await, InputAnswer::Accept(serde_json::from_value(serde_json::json!({"name": "Ada"})).unwrap()));
        let Followed::Asks(call, forms) = call.follow(std::future::pending()).await else { panic!("it asks again") };
        assert_eq!(forms.keys().cloned().collect::<Vec<_>>(), ["input-0"], "the question left unanswered");
        for (bad, needle) in [
            (serde_json::json!({"input-1": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"approval-0": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"input-0": {"action": "maybe"}}), "not an elicitation result"),
        ] {
            let given: InputResponses = serde_json::from_value(bad).unwrap();
            assert!(call.answers(Some(&given)).unwrap_err().contains(needle));
        }
        drop(call);
        assert_eq!(first.await, InputAnswer::Decline, "a question whose call is gone is declined");
        drop(to_run);
    }
}
