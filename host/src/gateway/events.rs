//! What a gateway tells whoever counts its work (the server's `/metrics`): the events of
//! approvals, downstream questions and tasks, as names an exposition format can use. The
//! gateway says what happened; how it is counted is the observer's.

/// What happened to an approval of a client of 2026-07-28.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApprovalEvent {
    /// A call parked its Exec and the client was sent the forms.
    Parked,
    /// A retry with answers resumed an Exec.
    Retried,
    /// A retry was refused (a bad, stale or used state; answers to forms not asked).
    Refused,
}

/// What happened to a downstream server's questions passed on to a client of 2026-07-28.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuestionEvent {
    /// A call's answer carried them, and the call waits for the retry.
    Asked,
    /// A retry gave answers, and the call went on.
    Answered,
}

/// What happened to a task (an Exec of a client of 2026-07-28 that runs on after its call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskEvent {
    /// A call's Exec became a task.
    Created,
    /// A task's Exec parked: the client is to answer its forms.
    InputRequired,
    /// A task's Exec ended with a result.
    Completed,
    /// A task ended without a result (the server stopped, the Exec was lost).
    Failed,
    Cancelled,
    /// A task whose host stopped was taken up by this one.
    TakenUp,
}

impl ApprovalEvent {
    /// The event's name as a label value.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalEvent::Parked => "parked",
            ApprovalEvent::Retried => "retried",
            ApprovalEvent::Refused => "refused",
        }
    }
}

impl QuestionEvent {
    /// The event's name as a label value.
    pub fn name(self) -> &'static str {
        match self {
            QuestionEvent::Asked => "asked",
            QuestionEvent::Answered => "answered",
        }
    }
}

impl TaskEvent {
    /// The event's name as a label value.
    pub fn name(self) -> &'static str {
        match self {
            TaskEvent::Created => "created",
            TaskEvent::InputRequired => "input_required",
            TaskEvent::Completed => "completed",
            TaskEvent::Failed => "failed",
            TaskEvent::Cancelled => "cancelled",
            TaskEvent::TakenUp => "taken_up",
        }
    }
}

/// Told of a gateway's events. Every method does nothing unless an observer counts it.
pub trait GatewayObserver: Send + Sync {
    fn approval(&self, _event: ApprovalEvent) {}
    fn question(&self, _event: QuestionEvent) {}
    fn task(&self, _event: TaskEvent) {}
    /// The state store failed to keep or give back a parked Exec, a request state or a task.
    fn store_error(&self) {}
}
