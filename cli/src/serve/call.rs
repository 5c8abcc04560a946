//! A client's `tools/call`, along the plan of its request (`exec_host::gateway::plan`): the
//! plan is chosen once, and every branch below is one of its decisions. What is here is the
//! process around them: the slots a call holds, the call's abort, its progress notifications,
//! the tasks it runs on, and the figures it is counted in.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use exec_host::gateway::events::{ApprovalEvent, GatewayObserver, QuestionEvent};
use exec_host::gateway::plan::{Ending, Plan, Questions, Revision, Situation, Start};
use exec_host::gateway::request_state::{self, Retry};
use exec_host::gateway::tool_result::call_tool_result;
use exec_host::gateway::{approval_forms, waiting};
use exec_host::{CallOptions, CancellationToken, ToolCall};
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::{RequestContext, RoleServer};

use super::gateway::client_identity;
use super::{CallResult, Gateway, Parking};

/// Who makes the call of a request, what it is, and its plan.
struct ThisCall {
    /// The client's identity ([`client_identity`]).
    client: String,
    tool: String,
    plan: Plan,
    /// Ends the call (the client cancelled it, or the server stops).
    abort: CancellationToken,
    arrived: std::time::Instant,
}

/// A call of this request: one to run, or one that waited on questions its retry answers.
enum Running {
    Future(std::pin::Pin<Box<dyn std::future::Future<Output = CallResult> + Send>>),
    Call(waiting::Call<CallResult>),
}

impl Gateway {
    /// The plan of a request: from the revision it speaks, what its client declared, and
    /// whether this server keeps a store.
    fn plan(&self, context: &RequestContext<RoleServer>) -> Plan {
        let capabilities = context.client_capabilities();
        Plan::choose(Situation {
            revision: Revision::of(context.protocol_version().as_ref()),
            elicits: capabilities.as_ref().is_some_and(|capabilities| capabilities.elicitation.is_some()),
            takes_tasks: capabilities.as_ref().is_some_and(|capabilities| capabilities.supports_tasks()),
            has_store: self.parking.is_some(),
        })
    }

    /// The parking a plan of 2026-07-28 with a store uses: a plan is chosen with a store only
    /// when the server has one, so its absence is a fault of this server.
    fn parking_of(&self, plan: Plan) -> Result<&Arc<Parking>, ErrorData> {
        self.parking
            .as_ref()
            .ok_or_else(|| ErrorData::internal_error(format!("the plan {plan:?} needs the state store this server lacks"), None))
    }

    /// One `tools/call`: run, parked with forms, waiting on a downstream server's questions,
    /// become a task, or refused.
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arrived = std::time::Instant::now();
        self.approver.connected(context.peer.clone());
        let plan = self.plan(&context);
        self.approver.ask_by(plan.asking());
        let _slots = match self.capacity.take(&self.slots) {
            Ok(slots) => slots,
            Err(busy) => {
                self.count(|metrics| metrics.busy(&request.name, arrived.elapsed()));
                return Ok(CallToolResponse::from(CallToolResult::error(vec![ContentBlock::text(busy)])));
            }
        };
        let this = ThisCall {
            client: client_identity(&context),
            tool: request.name.to_string(),
            plan,
            abort: CancellationToken::new(),
            arrived,
        };
        let (client, tool, abort) = (&this.client, &this.tool, &this.abort);
        let mut options = self.call_options(abort, &context);
        // A downstream server's questions wait with the call, and travel in its answer.
        let questions = match plan.questions() {
            Questions::Wait => {
                let (asker, questions) = waiting::asker();
                options = options.on_input(asker);
                Some(questions)
            }
            Questions::Request | Questions::Decline => None,
        };
        let session = self.session.clone();
        let (running, round): (Running, u32) = match plan.start(request.request_state.as_deref())? {
            Start::Retry(state) => {
                let parking = self.parking_of(plan)?;
                let retry = parking.rounds.open(client, tool, state).map_err(|error| self.refused_retry(error))?;
                let round = retry.round + 1;
                match &retry.waits_in {
                    // A call that waits on questions: the answers go to them, and it goes on.
                    Some(replica) => {
                        let call = parking
                            .waiting
                            .resume(replica, &retry.handle, request.input_responses.as_ref())
                            .map_err(|why| self.refused_retry(approval_forms::refused(why.sentence())))?;
                        self.count(|metrics| metrics.question(QuestionEvent::Answered));
                        (Running::Call(call), round)
                    }
                    // A parked Exec: the answers resume it.
                    None => {
                        let answers = self.answers_of(&retry, request.input_responses.as_ref()).await?;
                        let metrics = self.metrics.clone();
                        let resumed = async move {
                            let resumed = session.resume(&retry.handle, answers, options).await;
                            if let (Ok(_), Some(metrics)) = (&resumed, metrics) {
                                metrics.approval(ApprovalEvent::Retried);
                            }
                            resumed
                        };
                        (Running::Future(Box::pin(resumed)), round)
                    }
                }
            }
            Start::Fresh { yield_after } => {
                let input = serde_json::Value::Object(request.arguments.unwrap_or_default());
                let call = ToolCall::new(self.call_ids.next(), tool.clone(), input);
                // An Exec of a client that takes tasks runs on as one past a moment.
                if let Some(after) = yield_after {
                    options = options.yield_after(after);
                }
                (Running::Future(Box::pin(async move { Ok(session.call_with(call, options).await) })), 1)
            }
        };
        let mut call = match (running, questions) {
            (Running::Call(call), _) => call,
            (Running::Future(run), Some(questions)) => waiting::Call::start(run, questions, abort.clone()),
            (Running::Future(run), None) => {
                let result = self.until_done(run, abort, &context).await;
                return self.answered(result, round, &this, &context).await;
            }
        };
        loop {
            match call.follow(self.stopped(&context)).await {
                waiting::Followed::Done(result) => {
                    // A task that ended without a result panicked: never expected.
                    let result =
                        result.ok_or_else(|| ErrorData::internal_error("the call's task ended without a result", None))?;
                    return self.answered(result, round, &this, &context).await;
                }
                waiting::Followed::Asks(asks, forms) => {
                    if !request_state::within_bound(round) {
                        asks.end();
                        return Ok(CallToolResponse::from(request_state::too_many_rounds()));
                    }
                    let parking = self.parking_of(plan)?;
                    match parking.waiting.keep(asks) {
                        Ok(handle) => {
                            self.count(|metrics| metrics.question(QuestionEvent::Asked));
                            let replica = parking.waiting.replica();
                            let asked = parking.rounds.questions_required(client, tool, forms, (replica, handle), round);
                            return Ok(CallToolResponse::from(asked));
                        }
                        // No room to wait: its questions were declined, and it goes on.
                        Err(back) => call = back,
                    }
                }
            }
        }
    }

    /// The answer to a call that ran to `result` in approval round `round`, as its plan
    /// says: its result, the forms of its parked Exec, or a task it became.
    async fn answered(
        &self,
        result: CallResult,
        round: u32,
        this: &ThisCall,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (client, tool, plan) = (this.client.as_str(), this.tool.as_str(), this.plan);
        let mut result = result.map_err(|error| self.refused(error))?;
        if let (Ending::Task, Some(running)) = (plan.ending(&result, round), &result.running) {
            let parking = self.parking_of(plan)?;
            if let Some(created) = parking.tasks.create(&self.session, client, &running.handle).await {
                self.count(|metrics| metrics.became_task(this.arrived.elapsed()));
                return Ok(CallToolResponse::Task(created));
            }
            // It could not become a task: the call waits for it.
            let waited =
                self.until_done(self.session.wait(&running.handle, std::time::Duration::MAX), &this.abort, context).await;
            result = waited.map_err(|error| ErrorData::internal_error(exec_host::error_sentence(&error), None))?;
        }
        let ending = plan.ending(&result, round);
        self.count(|metrics| metrics.call_ended(tool, &result, ending == Ending::Forms));
        match (ending, &result.parked) {
            // A parked Exec's forms go back in the answer, within the bound on rounds.
            (Ending::Forms, Some(parked)) => {
                let forms = self.parking_of(plan)?.rounds.input_required(client, tool, parked, round);
                self.count(|metrics| metrics.approval(ApprovalEvent::Parked));
                Ok(CallToolResponse::from(forms))
            }
            (Ending::TooManyRounds, Some(parked)) => {
                let _ = self.session.discard_parked(&parked.handle).await;
                Ok(CallToolResponse::from(request_state::too_many_rounds()))
            }
            _ => {
                let (announcements, list_changed) = self.announce();
                if list_changed {
                    let _ = context.peer.notify_tool_list_changed().await;
                }
                Ok(CallToolResponse::from(call_tool_result(&result, announcements)))
            }
        }
    }

    /// The answers a retry gives to the approvals of the parked Exec it names, or why it is
    /// refused.
    async fn answers_of(
        &self,
        retry: &Retry,
        responses: Option<&rmcp::model::InputResponses>,
    ) -> Result<std::collections::HashMap<u32, exec_host::Approval>, ErrorData> {
        let parked = self.session.parked_exec(&retry.handle).await.map_err(|error| self.refused(error))?;
        let pending: Vec<u32> = parked.approvals.iter().map(|approval| approval.id).collect();
        approval_forms::answers(&pending, responses).map_err(|error| self.refused_retry(error))
    }

    /// A retry refused for what it carries, counted.
    fn refused_retry(&self, error: ErrorData) -> ErrorData {
        self.count(|metrics| metrics.approval(ApprovalEvent::Refused));
        error
    }

    /// A retry whose parked Exec cannot be taken up, counted, as the protocol's error.
    fn refused(&self, error: exec_host::ResumeError) -> ErrorData {
        self.count(|metrics| {
            metrics.approval(ApprovalEvent::Refused);
            if matches!(error, exec_host::ResumeError::Unreadable { .. }) {
                metrics.store_error();
            }
        });
        ErrorData::invalid_params(format!("the retry was refused: {}", exec_host::error_sentence(&error)), None)
    }

    /// The options of one call: its abort, and progress notifications when the request
    /// carries a progress token.
    fn call_options(&self, abort: &CancellationToken, context: &RequestContext<RoleServer>) -> CallOptions {
        let mut options = CallOptions::new(abort.clone());
        if let Some(token) = context.meta.get_progress_token() {
            // Each nested call reaching the host is a step, and so is each step a downstream
            // tool reports. One task sends the latest step whenever there is a newer one: in
            // order, and never a backlog for a slow client.
            let (latest, mut changed) = tokio::sync::watch::channel(None::<ProgressNotificationParam>);
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while changed.changed().await.is_ok() {
                    let step = changed.borrow_and_update().clone();
                    if let Some(step) = step
                        && peer.notify_progress(step).await.is_err()
                    {
                        break;
                    }
                }
            });
            // Progress must grow with each notification: it counts the steps so far, counted
            // and handed on under one lock so that they leave in order.
            let steps = Mutex::new(0u64);
            let step = move |message: String| {
                let mut count = steps.lock().unwrap_or_else(|e| e.into_inner());
                *count += 1;
                latest.send_replace(Some(ProgressNotificationParam::new(token.clone(), *count as f64).with_message(message)));
            };
            let step = Arc::new(step);
            let reported = std::sync::atomic::AtomicUsize::new(0);
            let on_call = step.clone();
            options = options
                .on_nested_call(move |calls| {
                    // A call that finishes is not news.
                    if reported.swap(calls.len(), Ordering::Relaxed) == calls.len() {
                        return;
                    }
                    let Some(last) = calls.last() else { return };
                    let plural = if calls.len() == 1 { "" } else { "s" };
                    on_call(format!("{} tool call{plural}, the last `{}`", calls.len(), last.name));
                })
                .on_tool_progress(move |progress| step(format!("`{}`: {}", progress.tool, progress.step)));
        }
        options
    }

    /// Resolves when the call of this request is to stop: the client cancelled it or left,
    /// or the server stops.
    fn stopped(&self, context: &RequestContext<RoleServer>) -> impl std::future::Future<Output = ()> + use<> {
        let (client, server) = (context.ct.clone(), self.stop.clone());
        async move {
            tokio::select! {
                () = client.cancelled() => {}
                () = server.cancelled() => {}
            }
        }
    }

    /// `running` to its end. The client's `notifications/cancelled`, the client leaving, or
    /// the server stopping aborts it, and it then ends promptly with its failure result.
    async fn until_done<T>(
        &self,
        running: impl std::future::Future<Output = T>,
        abort: &CancellationToken,
        context: &RequestContext<RoleServer>,
    ) -> T {
        tokio::pin!(running);
        tokio::select! {
            result = &mut running => result,
            _ = context.ct.cancelled() => { abort.cancel(); running.await }
            _ = self.stop.cancelled() => { abort.cancel(); running.await }
        }
    }
}
