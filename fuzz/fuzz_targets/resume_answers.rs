//! The answers that resume a parked Exec, from any bytes: a retry's `inputResponses` (MCP
//! 2026-07-28) and a `tasks/update` to a task that waits on some forms. An answer is given
//! only to an approval that was asked, each is an elicitation result, and a task resumes
//! only once every form it asked has its answer.
#![no_main]

use exec_host::Approval;
use exec_host::gateway::approval_forms::answers;
use exec_host::gateway::task_record::{Answered, Record, TaskState};
use libfuzzer_sys::fuzz_target;
use rmcp::model::{InputRequests, InputResponses};

/// The approvals a parked Exec asked, as a task keeps their forms.
const ASKED: [u32; 3] = [0, 2, 7];

fn waiting_task() -> Record {
    let form = |id: u32| {
        let request = serde_json::json!({"method": "elicitation/create", "params": {"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {}}}});
        (format!("approval-{id}"), serde_json::from_value(request).unwrap())
    };
    let mut record = Record::new("alice", "parked");
    let requests: InputRequests = ASKED.iter().map(|id| form(*id)).collect();
    record.state = TaskState::InputRequired { handle: "parked".into(), requests, answered: InputResponses::new() };
    record
}

fuzz_target!(|data: &[u8]| {
    let Ok(responses) = serde_json::from_slice::<InputResponses>(data) else { return };
    // A retry: every key names an approval asked, or nothing resumes.
    if let Ok(given) = answers(&ASKED, Some(&responses)) {
        assert!(given.keys().all(|id| ASKED.contains(id)), "{given:?}");
        assert_eq!(given.len(), responses.len());
        for approval in given.values() {
            assert!(matches!(approval, Approval::AllowOnce | Approval::AllowAlways | Approval::Deny { .. }), "{approval:?}");
        }
    }
    // A task: it resumes once every form has its answer, with an answer for each.
    let mut task = waiting_task();
    if let Ok(Some(Answered { handle, answers })) = task.take_answers(&responses) {
        assert_eq!(handle, "parked");
        let mut ids: Vec<u32> = answers.keys().copied().collect();
        ids.sort();
        assert_eq!(ids, ASKED, "{answers:?}");
    }
    let _ = serde_json::to_string(&task.detailed("id"));
});
