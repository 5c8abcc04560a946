//! The tools of a conformance case: they answer from the case's scripted answers, on a real
//! clock, and know nothing else.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::case::{Answer, Reply, Spec};
use crate::sandbox::runtime::{ScriptTools, ToolFuture};
use crate::sources::tools::ToolOutput;
use crate::state::{ConversationValues, ValueBounds};
use crate::support::vocabulary::{AskedBefore, ToolError};

/// Answers a case's calls and searches.
pub(crate) struct ScriptedTools {
    names: Vec<String>,
    answers: Vec<Answer>,
    searches: Vec<Answer>,
    /// Which `once` answers have been used, per list.
    used: Mutex<(Vec<bool>, Vec<bool>)>,
    /// The case's kept values, in memory, with the default bounds.
    values: Arc<ConversationValues>,
}

impl ScriptedTools {
    pub(crate) fn new(spec: &Spec) -> Arc<Self> {
        Arc::new(ScriptedTools {
            names: spec.tools.clone(),
            answers: spec.answers.clone(),
            searches: spec.searches.clone(),
            used: Mutex::new((vec![false; spec.answers.len()], vec![false; spec.searches.len()])),
            values: Arc::new(ConversationValues::in_memory(spec.stored.clone(), ValueBounds::default())),
        })
    }

    /// The first answer for `tool` (or a search, when `None`) whose arguments match, marking
    /// it used when it answers once.
    fn find(&self, tool: Option<&str>, args: &Map<String, Value>) -> Option<Answer> {
        let mut used = self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (answers, used) = match tool {
            Some(_) => (&self.answers, &mut used.0),
            None => (&self.searches, &mut used.1),
        };
        let args = Value::Object(args.clone());
        let index = answers.iter().enumerate().position(|(i, answer)| {
            !used[i] && answer.tool.as_deref() == tool && answer.args.as_ref().is_none_or(|wanted| *wanted == args)
        })?;
        if answers[index].once {
            used[index] = true;
        }
        Some(answers[index].clone())
    }
}

fn reply(reply: Reply) -> Result<ToolOutput, ToolError> {
    match reply {
        Reply::Value(value) => Ok(ToolOutput::structured(value)),
        Reply::Text(text) => Ok(ToolOutput::text(text)),
        Reply::Error(message) => Err(ToolError::execution(message)),
        // Only a pending call can be answered with `never`; see `call`.
        Reply::Never => Err(ToolError::execution("a call answered `never` finished")),
    }
}

impl ScriptTools for ScriptedTools {
    fn names(&self) -> &[String] {
        &self.names
    }

    fn call(
        &self,
        _: u32,
        name: String,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _: Option<AskedBefore>,
    ) -> ToolFuture {
        let Some(answer) = self.find(Some(&name), &args) else {
            return std::future::ready(Err(ToolError::execution(format!("no answer is scripted for {name}")).into())).boxed();
        };
        match (answer.reply, answer.after) {
            (Reply::Never, _) => async move {
                cancel.cancelled().await;
                Err(ToolError::execution("cancelled").into())
            }
            .boxed(),
            (answered, None) => std::future::ready(reply(answered).map_err(Into::into)).boxed(),
            (answered, Some(after)) => async move {
                tokio::time::sleep(after).await;
                reply(answered).map_err(Into::into)
            }
            .boxed(),
        }
    }

    fn search(&self, args: Map<String, Value>) -> Result<String, ToolError> {
        match self.find(None, &args).map(|answer| answer.reply) {
            Some(Reply::Value(value)) => Ok(value.to_string()),
            Some(Reply::Error(message)) => Err(ToolError::execution(message)),
            _ => Err(ToolError::execution("no answer is scripted for the search")),
        }
    }

    fn values(&self) -> Arc<ConversationValues> {
        self.values.clone()
    }

    /// The cases check the engine's own messages: nothing is added to them.
    fn explain_not_a_function(&self, _: &str, _: crate::sandbox::runtime::Position) -> Option<String> {
        None
    }
}
