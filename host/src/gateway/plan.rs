//! The plan of one request: how a call of this client reaches its end, chosen once from the
//! protocol revision the request speaks and what its client and this server can do. Every
//! later decision of the call (how an approval is asked, where a downstream server's question
//! goes, whether a retry is taken, whether the call may become a task, what a parked Exec
//! answers) is the plan's, here, and nowhere else.
//!
//! | revision | client | server | plan |
//! | --- | --- | --- | --- |
//! | 2025-11-25 | any | any | `Elicitation`: asked by request while the call waits |
//! | 2026-07-28 | any | no state store | `Stateless`: nobody can be asked |
//! | 2026-07-28 | declares Tasks | a state store | `Task`: an Exec past [`TASK_AFTER`] becomes a task |
//! | 2026-07-28 | no Tasks | a state store | `MultiRoundTrip`: the call's answer carries the forms |
//!
//! The approvals of the last two park their Exec when the client declared elicitation, and are
//! refused, saying why, when it did not.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::ProtocolVersion;

use crate::conversation::render::ToolResult;
use crate::gateway::request_state::within_bound;
use crate::gateway::task_record::TASK_AFTER;

/// The protocol revisions a client may speak, as far as they change a call's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Revision {
    /// MCP 2025-11-25 and earlier: the server may send its client requests.
    V2025_11_25,
    /// MCP 2026-07-28 and later: stateless; the server sends its client no requests, a call's
    /// answer carries what it asks.
    V2026_07_28,
}

impl Revision {
    /// The revision of a request that names `version` (none: the earliest).
    pub fn of(version: Option<&ProtocolVersion>) -> Revision {
        match version {
            Some(version) if *version >= ProtocolVersion::V_2026_07_28 => Revision::V2026_07_28,
            _ => Revision::V2025_11_25,
        }
    }
}

/// What a request says of its client, and what this server has, as far as the plan reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Situation {
    pub revision: Revision,
    /// The client declared elicitation (it can answer forms).
    pub elicits: bool,
    /// The client declared the Tasks extension (`io.modelcontextprotocol/tasks`).
    pub takes_tasks: bool,
    /// The server keeps parked Execs, request states and tasks in a state store.
    pub has_store: bool,
}

/// How one call of a client reaches its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// A client of 2025-11-25: the call runs to its end; an approval or a downstream server's
    /// question is sent to the client as an elicitation request while the call waits.
    Elicitation,
    /// A client of 2026-07-28 on a server without a state store: nothing can park, so nobody
    /// is asked; calls that must ask are refused, saying why.
    Stateless { refusal: &'static str },
    /// A client of 2026-07-28 on a server with a store: a call that must ask parks its Exec
    /// (or, for a downstream server's question, waits here) and answers `InputRequiredResult`;
    /// the client's retry carries the answers and the request state.
    MultiRoundTrip { approvals: Approvals },
    /// A client of 2026-07-28 that takes tasks, on a server with a store: an Exec still
    /// running after [`TASK_AFTER`] becomes a task; one that parks is `input_required`.
    Task { approvals: Approvals },
}

/// How a plan of 2026-07-28 with a store meets a call that must ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approvals {
    /// The Exec parks and its forms travel to the client.
    Park,
    /// The client cannot answer forms: the call is refused, with the reason.
    Refuse(&'static str),
}

/// How a call that must ask reaches the client making it (what its approver does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asking {
    /// An elicitation request to the client, when it declared elicitation.
    Request,
    /// The Exec parks, and the answer carries the form.
    Park,
    /// Nobody can be asked; the reason.
    Refuse(&'static str),
}

/// Where a downstream server's question, asked during one of the client's calls, goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Questions {
    /// Passed on to the client as an elicitation request of this server's own.
    Request,
    /// The call waits in this process; its answer carries the questions
    /// (`crate::gateway::waiting`).
    Wait,
    /// Declined: the client cannot be asked in this call.
    Decline,
}

/// How a call begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start<S> {
    /// A new call; an Exec yields after `yield_after`, to become a task.
    Fresh { yield_after: Option<Duration> },
    /// The retry of a call that asked: its request state says where it goes on.
    Retry(S),
}

/// What a call's answer is, once it ran to `result`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The result.
    Result,
    /// The Exec that yielded becomes a task.
    Task,
    /// The Exec parked: its forms go back, with the state the retry carries.
    Forms,
    /// The Exec parked once too often: it is discarded, and the call is refused.
    TooManyRounds,
}

/// Why the client cannot be asked by a plan of 2026-07-28.
const CANNOT_ELICIT: &str = "the MCP client cannot be asked (it did not declare elicitation)";
const NO_STORE: &str = "this server keeps no parked Execs (it has no state store)";

impl Plan {
    /// The one choice of a request's plan.
    pub fn choose(situation: Situation) -> Plan {
        let Situation { revision, elicits, takes_tasks, has_store } = situation;
        if revision == Revision::V2025_11_25 {
            return Plan::Elicitation;
        }
        let approvals = match elicits {
            true => Approvals::Park,
            false => Approvals::Refuse(CANNOT_ELICIT),
        };
        match (has_store, approvals, takes_tasks) {
            (false, Approvals::Refuse(why), _) => Plan::Stateless { refusal: why },
            (false, Approvals::Park, _) => Plan::Stateless { refusal: NO_STORE },
            (true, approvals, true) => Plan::Task { approvals },
            (true, approvals, false) => Plan::MultiRoundTrip { approvals },
        }
    }

    /// The plan of a `tasks/*` request, whose resumed Execs ask as this client's calls do:
    /// `None` on a server that keeps no tasks.
    pub fn for_tasks(elicits: bool, has_store: bool) -> Option<Plan> {
        let plan = Plan::choose(Situation { revision: Revision::V2026_07_28, elicits, takes_tasks: true, has_store });
        matches!(plan, Plan::Task { .. }).then_some(plan)
    }

    /// How a call that must ask reaches the client.
    pub fn asking(self) -> Asking {
        match self {
            Plan::Elicitation => Asking::Request,
            Plan::Stateless { refusal } => Asking::Refuse(refusal),
            Plan::MultiRoundTrip { approvals } | Plan::Task { approvals } => match approvals {
                Approvals::Park => Asking::Park,
                Approvals::Refuse(why) => Asking::Refuse(why),
            },
        }
    }

    /// Where the downstream servers' questions of a call go (a new one, or a parked Exec a
    /// retry resumes). A call that may become a task cannot wait on its client's answer in
    /// this process, so its questions are declined.
    pub fn questions(self) -> Questions {
        match self {
            Plan::Elicitation => Questions::Request,
            Plan::MultiRoundTrip { approvals: Approvals::Park } => Questions::Wait,
            Plan::MultiRoundTrip { approvals: Approvals::Refuse(_) } | Plan::Task { .. } | Plan::Stateless { .. } => {
                Questions::Decline
            }
        }
    }

    /// Whether parked Execs answer with forms and retries carry request states: a plan of
    /// 2026-07-28 with a store.
    pub fn keeps_rounds(self) -> bool {
        matches!(self, Plan::MultiRoundTrip { .. } | Plan::Task { .. })
    }

    /// How a call begins: fresh, or the retry of one that asked (the request carries a
    /// `requestState`, `state`). A retry is refused by a plan that made no state.
    pub fn start<S>(self, state: Option<S>) -> Result<Start<S>, ErrorData> {
        match (state, self.keeps_rounds()) {
            (Some(state), true) => Ok(Start::Retry(state)),
            (Some(_), false) => Err(ErrorData::invalid_params("the retry was refused: this server made no requestState", None)),
            (None, _) => Ok(Start::Fresh { yield_after: matches!(self, Plan::Task { .. }).then_some(TASK_AFTER) }),
        }
    }

    /// What the answer to a call that ran to `result` in approval round `round` is.
    pub fn ending(self, result: &ToolResult, round: u32) -> Ending {
        if result.running.is_some() && matches!(self, Plan::Task { .. }) {
            return Ending::Task;
        }
        match (&result.parked, self.keeps_rounds()) {
            (Some(_), true) if within_bound(round) => Ending::Forms,
            (Some(_), true) => Ending::TooManyRounds,
            _ => Ending::Result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::render::{ParkedExec, RunningExec, running_result};

    fn situation(revision: Revision, elicits: bool, takes_tasks: bool, has_store: bool) -> Situation {
        Situation { revision, elicits, takes_tasks, has_store }
    }

    #[test]
    fn the_revision_is_read_from_the_version_a_request_names() {
        assert_eq!(Revision::of(None), Revision::V2025_11_25);
        assert_eq!(Revision::of(Some(&ProtocolVersion::V_2025_06_18)), Revision::V2025_11_25);
        assert_eq!(Revision::of(Some(&ProtocolVersion::V_2025_11_25)), Revision::V2025_11_25);
        assert_eq!(Revision::of(Some(&ProtocolVersion::V_2026_07_28)), Revision::V2026_07_28);
    }

    #[test]
    fn every_situation_has_one_plan() {
        use Revision::*;
        // A client of 2025-11-25 is asked by request, whatever it and the server have.
        for (elicits, tasks, store) in [(false, false, false), (true, true, true), (true, false, true), (false, true, false)] {
            assert_eq!(Plan::choose(situation(V2025_11_25, elicits, tasks, store)), Plan::Elicitation);
        }
        let table = [
            ((false, false, false), Plan::Stateless { refusal: CANNOT_ELICIT }),
            ((false, true, false), Plan::Stateless { refusal: CANNOT_ELICIT }),
            ((true, false, false), Plan::Stateless { refusal: NO_STORE }),
            ((true, true, false), Plan::Stateless { refusal: NO_STORE }),
            ((true, false, true), Plan::MultiRoundTrip { approvals: Approvals::Park }),
            ((false, false, true), Plan::MultiRoundTrip { approvals: Approvals::Refuse(CANNOT_ELICIT) }),
            ((true, true, true), Plan::Task { approvals: Approvals::Park }),
            ((false, true, true), Plan::Task { approvals: Approvals::Refuse(CANNOT_ELICIT) }),
        ];
        for ((elicits, tasks, store), plan) in table {
            assert_eq!(Plan::choose(situation(V2026_07_28, elicits, tasks, store)), plan, "{elicits} {tasks} {store}");
        }
    }

    #[test]
    fn each_plan_asks_and_passes_questions_on_its_own_way() {
        let cases = [
            (Plan::Elicitation, Asking::Request, Questions::Request, false),
            (Plan::Stateless { refusal: NO_STORE }, Asking::Refuse(NO_STORE), Questions::Decline, false),
            (Plan::MultiRoundTrip { approvals: Approvals::Park }, Asking::Park, Questions::Wait, true),
            (
                Plan::MultiRoundTrip { approvals: Approvals::Refuse(CANNOT_ELICIT) },
                Asking::Refuse(CANNOT_ELICIT),
                Questions::Decline,
                true,
            ),
            (Plan::Task { approvals: Approvals::Park }, Asking::Park, Questions::Decline, true),
            (Plan::Task { approvals: Approvals::Refuse(CANNOT_ELICIT) }, Asking::Refuse(CANNOT_ELICIT), Questions::Decline, true),
        ];
        for (plan, asking, questions, rounds) in cases {
            assert_eq!(plan.asking(), asking, "{plan:?}");
            assert_eq!(plan.questions(), questions, "{plan:?}");
            assert_eq!(plan.keeps_rounds(), rounds, "{plan:?}");
        }
    }

    #[test]
    fn a_retry_is_taken_only_by_a_plan_that_makes_request_states() {
        for plan in [Plan::Elicitation, Plan::Stateless { refusal: NO_STORE }] {
            let refused = plan.start(Some("state")).unwrap_err();
            assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(refused.message.contains("made no requestState"), "{}", refused.message);
        }
        for plan in [Plan::MultiRoundTrip { approvals: Approvals::Park }, Plan::Task { approvals: Approvals::Park }] {
            assert_eq!(plan.start(Some("state")).unwrap(), Start::Retry("state"));
        }
        assert_eq!(
            Plan::Task { approvals: Approvals::Refuse(CANNOT_ELICIT) }.start(None::<&str>).unwrap(),
            Start::Fresh { yield_after: Some(TASK_AFTER) }
        );
        for plan in [
            Plan::Elicitation,
            Plan::Stateless { refusal: NO_STORE },
            Plan::MultiRoundTrip { approvals: Approvals::Park },
            Plan::MultiRoundTrip { approvals: Approvals::Refuse(CANNOT_ELICIT) },
        ] {
            assert_eq!(plan.start(None::<&str>).unwrap(), Start::Fresh { yield_after: None }, "only a task's call yields");
        }
    }

    #[test]
    fn the_tasks_requests_have_a_plan_only_on_a_server_with_a_store() {
        assert_eq!(Plan::for_tasks(true, false), None);
        assert_eq!(Plan::for_tasks(true, true), Some(Plan::Task { approvals: Approvals::Park }));
        assert_eq!(Plan::for_tasks(false, true), Some(Plan::Task { approvals: Approvals::Refuse(CANNOT_ELICIT) }));
    }

    #[test]
    fn a_call_ends_as_its_plan_and_its_result_say() {
        let running = running_result("c".into(), RunningExec { handle: "r".into(), logs: Vec::new(), calls: 0 });
        let mut done = running.clone();
        done.running = None;
        let mut parked = done.clone();
        parked.parked = Some(ParkedExec { handle: "h".into(), approvals: Vec::new(), exec_call_id: "call-1".into() });
        let task = Plan::Task { approvals: Approvals::Park };
        let round_trip = Plan::MultiRoundTrip { approvals: Approvals::Park };
        assert_eq!(task.ending(&done, 1), Ending::Result);
        assert_eq!(task.ending(&running, 1), Ending::Task);
        assert_eq!(round_trip.ending(&running, 1), Ending::Result, "only a task's call yields");
        for plan in [task, round_trip] {
            assert_eq!(plan.ending(&parked, 1), Ending::Forms);
            assert_eq!(plan.ending(&parked, crate::gateway::request_state::MAX_ROUNDS), Ending::Forms);
            assert_eq!(plan.ending(&parked, crate::gateway::request_state::MAX_ROUNDS + 1), Ending::TooManyRounds);
        }
        // A plan that never parks shows a parked result as it is (it cannot arise there).
        assert_eq!(Plan::Elicitation.ending(&parked, 1), Ending::Result);
        assert_eq!(Plan::Stateless { refusal: NO_STORE }.ending(&parked, 1), Ending::Result);
    }
}
