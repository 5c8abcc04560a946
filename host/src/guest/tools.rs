//! `exec-host:sandbox/tools`: start a call without blocking; wait for the next to finish.

use super::Completion;
use super::generated::exec_host::sandbox::tools::{Host, Started, ToolValue};
use crate::runtime::{ExecState, calls};
use crate::tools::{ScriptValue, ToolError, ToolOutput};

impl Host for ExecState {
    fn start_call(&mut self, name: String, args_json: String) -> Started {
        // The tool's first poll is the tool's time (and any wake-up of another thread it
        // causes), not the script's.
        let paused = self.clock.pause();
        let started = self.calls.start(name, args_json);
        drop(paused);
        match started {
            calls::Started::Pending(id) => Started::Pending(id),
            calls::Started::Done(result) => Started::Done(self.deliver(result)),
        }
    }

    async fn wait_next(&mut self) -> wasmtime::Result<Vec<Completion>> {
        // Polling the calls in flight, the last poll of each included, is not the script's time.
        let paused = self.clock.pause();
        let finished = self.calls.finished().await?;
        drop(paused);
        Ok(finished.into_iter().map(|(id, result)| Completion { id, outcome: self.deliver(result) }).collect())
    }
}

impl ExecState {
    /// A finished call as the script gets it: images set aside as attachments, the value
    /// as text or JSON, a failure as its message.
    fn deliver(&mut self, result: Result<ToolOutput, ToolError>) -> Result<ToolValue, String> {
        match result {
            Ok(mut output) => {
                self.images.add(std::mem::take(&mut output.images));
                Ok(match output.into_script_value() {
                    ScriptValue::Json(json) => ToolValue::Json(json),
                    ScriptValue::Text(text) => ToolValue::Text(text),
                })
            }
            Err(error) => Err(error.message),
        }
    }
}
