//! Approvals as MCP elicitation forms: the form a client is shown for a call that must ask,
//! and what its answers mean. A client of 2025-11-25 is sent the form as a request; a client
//! of 2026-07-28 gets one form per pending approval, keyed `approval-ID`, in the answer of a
//! call whose Exec parked (and in a task's `input_required` state), and answers them all in a
//! retry or a `tasks/update`.

use std::collections::HashMap;

use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationSchema, EnumSchema, InputRequest, InputRequests, InputResponses,
};
use serde_json::Value;

use crate::calls::policy::Approval;
use crate::conversation::render::{ParkedExec, PendingApproval};
use crate::support::text::cut_chars;

/// The choices offered, as the form's `decision` enum, with their titles.
const CHOICES: [(&str, &str); 3] = [("once", "Allow once"), ("always", "Allow always"), ("deny", "Deny")];

/// The prefix of an approval's key in `inputRequests` and `inputResponses`.
const APPROVAL_KEY: &str = "approval-";

/// Characters of a call's input (as JSON) an approval shows; the rest is cut.
pub const SHOWN_INPUT_CHARS: usize = 300;

/// Characters of a client's key quoted back in a refusal.
const QUOTED_KEY_CHARS: usize = 64;

/// The approval form: one required choice, `decision`.
pub fn decision_form() -> Option<ElicitationSchema> {
    let values = CHOICES.iter().map(|(value, _)| value.to_string()).collect();
    let titles = CHOICES.iter().map(|(_, title)| title.to_string()).collect();
    let choice = EnumSchema::builder(values).enum_titles(titles).ok()?;
    ElicitationSchema::builder().required_enum_schema("decision", choice.build()).build().ok()
}

/// A person's answer to the form: what was accepted (`content`), or declined.
pub fn decision(accepted: bool, content: Option<&Value>) -> Approval {
    if !accepted {
        return Approval::Deny { reason: "the user declined in the MCP client".into() };
    }
    match content.and_then(|c| c.get("decision")).and_then(Value::as_str) {
        Some("once") => Approval::AllowOnce,
        Some("always") => Approval::AllowAlways,
        _ => Approval::Deny { reason: "the user denied it in the MCP client".into() },
    }
}

/// A call's input as an approval shows it: its JSON, cut at [`SHOWN_INPUT_CHARS`].
pub fn shown_input(input: &Value) -> String {
    cut_chars(&input.to_string(), SHOWN_INPUT_CHARS)
}

/// The forms of a parked Exec: one elicitation per pending approval, keyed `approval-ID`.
pub fn forms(parked: &ParkedExec) -> InputRequests {
    let Some(schema) = decision_form() else { return InputRequests::new() };
    parked
        .approvals
        .iter()
        .map(|approval| {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message(approval),
                requested_schema: schema.clone(),
            };
            (format!("{APPROVAL_KEY}{}", approval.id), InputRequest::Elicitation(ElicitRequest::new(params)))
        })
        .collect()
}

/// What the form says of one approval.
fn message(approval: &PendingApproval) -> String {
    format!("`{}` wants to run ({}). It asks because of {}.", approval.tool, shown_input(&approval.input), approval.why)
}

/// The answers a retry gives, by approval id: every key must name a pending approval, and
/// every answer must be an elicitation result. An approval without an answer asks again.
pub fn answers(pending: &[u32], responses: Option<&InputResponses>) -> Result<HashMap<u32, Approval>, ErrorData> {
    let mut answers = HashMap::new();
    for (key, response) in responses.into_iter().flatten() {
        let Some(id) = approval_id(key).filter(|id| pending.contains(id)) else {
            return Err(refused(format!("its inputResponses answer `{}`, which this call did not ask", quoted(key))));
        };
        answers.insert(id, answer(key, response).map_err(|e| refused(e.to_string()))?);
    }
    Ok(answers)
}

/// The approval one answer gives, or why it is not an elicitation result.
pub fn answer(key: &str, response: &Value) -> Result<Approval, NotAnAnswer> {
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(decision(true, response.get("content"))),
        Some("decline" | "cancel") => Ok(decision(false, None)),
        _ => Err(NotAnAnswer { key: quoted(key) }),
    }
}

/// A client's answer to a form that is not an elicitation result.
#[derive(Debug, thiserror::Error)]
#[error("its answer to `{key}` is not an elicitation result (action accept, decline or cancel)")]
pub struct NotAnAnswer {
    /// The form's key, as the client spelled it (bounded, on one line).
    pub key: String,
}

/// The approval id a form's key names, spelled as the form was keyed: one spelling per id
/// (`approval-+0` and `approval-00` name nothing), so two answers never name one approval.
pub fn approval_id(key: &str) -> Option<u32> {
    let digits = key.strip_prefix(APPROVAL_KEY)?;
    digits.parse::<u32>().ok().filter(|id| id.to_string() == digits)
}

/// A refused retry, saying why, as the protocol's error (invalid params).
pub fn refused(why: String) -> ErrorData {
    ErrorData::invalid_params(format!("the retry was refused: {why}"), None)
}

/// A client's key as a refusal quotes it: bounded, on one line.
pub(crate) fn quoted(key: &str) -> String {
    crate::support::text::one_line(key, QUOTED_KEY_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn responses(value: Value) -> InputResponses {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn answers_name_only_what_was_asked_and_are_elicitation_results() {
        let asked = [0, 2];
        let given = responses(serde_json::json!({
            "approval-0": {"action": "accept", "content": {"decision": "always"}},
            "approval-2": {"action": "decline"},
        }));
        let given = answers(&asked, Some(&given)).unwrap();
        assert_eq!(given[&0], Approval::AllowAlways);
        assert!(matches!(given[&2], Approval::Deny { .. }));
        assert!(answers(&asked, None).unwrap().is_empty(), "no answers: each asks again");
        for (bad, needle) in [
            (serde_json::json!({"approval-1": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"other": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"approval-+0": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"approval-00": {"action": "accept"}}), "did not ask"),
            (serde_json::json!({"approval-0": {"action": "maybe"}}), "not an elicitation result"),
            (serde_json::json!({"approval-0": "yes"}), "not an elicitation result"),
        ] {
            let refused = answers(&asked, Some(&responses(bad))).unwrap_err();
            assert!(refused.message.contains(needle), "{}", refused.message);
        }
    }

    #[test]
    fn an_accepted_form_without_a_known_choice_denies() {
        assert_eq!(decision(true, Some(&serde_json::json!({"decision": "once"}))), Approval::AllowOnce);
        for content in [None, Some(serde_json::json!({})), Some(serde_json::json!({"decision": "sure"}))] {
            assert!(matches!(decision(true, content.as_ref()), Approval::Deny { .. }), "{content:?}");
        }
    }

    #[test]
    fn a_key_quoted_back_is_bounded_and_obeys_nothing() {
        let key = format!("approval-\u{1b}[2J{}", "9".repeat(1000));
        let refused = answers(&[0], Some(&responses(serde_json::json!({ key: {"action": "accept"} })))).unwrap_err();
        assert!(!refused.message.contains('\u{1b}') && refused.message.len() < 300, "{}", refused.message);
    }
}
