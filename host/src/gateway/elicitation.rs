//! The plan of a client of 2025-11-25: what must ask is sent to the client as an elicitation
//! request while the call waits. An approval is the decision form
//! (`crate::gateway::approval_forms`) with a message saying what runs and why it asks; a
//! downstream server's question is passed on as an elicitation of this server's own, the
//! form's schema or the URL as the server sent it. The questions a client of 2026-07-28
//! answers in a retry (`crate::gateway::waiting`) are the same requests, carried in the
//! call's answer.

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::Value;

use crate::calls::policy::ApprovalRequest;
use crate::gateway::approval_forms::{decision_form, shown_input};
use crate::sources::tools::input::{InputAnswer, InputKind, InputRequest};

/// Why a downstream server's question cannot be passed on to the client: it is declined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotPassedOn {
    #[error("its form cannot be passed on")]
    Form(#[source] serde_json::Error),
    #[error("no id could be made for its URL elicitation")]
    NoId(#[source] std::io::Error),
}

/// The elicitation an approval is asked by: the decision form, and a message naming the
/// tool, its input, why it asks and what allowing it always does. None when the form cannot
/// be built (the call is then refused).
pub fn approval_request(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    let requested_schema = decision_form()?;
    let always = match request.allow_rule_stops_asking {
        true => format!("Allowing it always saves the rule `{}`.", request.rule),
        false => "Allowing it always lasts for this session; no rule is saved (an ask rule asks).".to_string(),
    };
    let message = format!(
        "`{}` wants to run ({}). It asks because of {}. {always}",
        request.tool,
        shown_input(&request.input),
        request.why,
    );
    Some(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema })
}

/// A downstream server's question as an elicitation of this server's own: the form's schema
/// or the URL as the server sent it, the message naming the server.
pub fn passed_on(request: &InputRequest) -> Result<ElicitRequestParams, NotPassedOn> {
    let message = format!("MCP server `{}` asks: {}", request.server, request.message);
    match &request.kind {
        InputKind::Form { schema, .. } => {
            let requested_schema = serde_json::from_value(schema.clone()).map_err(NotPassedOn::Form)?;
            Ok(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema })
        }
        InputKind::Url(url) => Ok(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url: url.clone(),
            elicitation_id: crate::gateway::unguessable_id().map_err(NotPassedOn::NoId)?,
        }),
    }
}

/// What the client's answer to a passed-on question tells the server that asked.
pub fn input_answer(action: &ElicitationAction, content: Option<&Value>) -> InputAnswer {
    match action {
        ElicitationAction::Accept => InputAnswer::Accept(content.and_then(Value::as_object).cloned().unwrap_or_default()),
        ElicitationAction::Cancel => InputAnswer::Cancel,
        _ => InputAnswer::Decline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn question(kind: &str) -> InputRequest {
        match kind {
            "form" => {
                InputRequest::form("files", "Which?".into(), json!({"type": "object", "properties": {"n": {"type": "string"}}}))
                    .unwrap()
            }
            _ => InputRequest::url("files", "Sign in".into(), "https://example.test/login".into()),
        }
    }

    #[test]
    fn a_question_is_passed_on_as_the_server_asked_it_naming_the_server() {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = passed_on(&question("form")).unwrap()
        else {
            panic!("a form")
        };
        assert_eq!(message, "MCP server `files` asks: Which?");
        assert!(serde_json::to_value(&requested_schema).unwrap()["properties"]["n"].is_object());
        let ElicitRequestParams::UrlElicitationParams { url, elicitation_id, .. } = passed_on(&question("url")).unwrap() else {
            panic!("a URL")
        };
        assert_eq!(url, "https://example.test/login");
        assert_eq!(elicitation_id.len(), 32, "an unguessable id");
    }

    #[test]
    fn the_clients_action_is_what_the_server_is_answered() {
        let content = json!({"n": "a"});
        assert_eq!(
            input_answer(&ElicitationAction::Accept, Some(&content)),
            InputAnswer::Accept(content.as_object().unwrap().clone())
        );
        assert_eq!(
            input_answer(&ElicitationAction::Accept, Some(&json!("not an object"))),
            InputAnswer::Accept(Default::default())
        );
        assert_eq!(input_answer(&ElicitationAction::Cancel, None), InputAnswer::Cancel);
        assert_eq!(input_answer(&ElicitationAction::Decline, Some(&content)), InputAnswer::Decline);
    }
}
