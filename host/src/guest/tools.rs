//! `exec-host:sandbox/tools`: start a call without blocking; wait for the next to finish.

use super::Completion;
use super::generated::exec_host::sandbox::tools::{Host, ToolValue};
use crate::runtime::ExecState;
use crate::tools::ScriptValue;

impl Host for ExecState {
    fn start_call(&mut self, name: String, args_json: String) -> u32 {
        self.calls.start(name, args_json)
    }

    async fn wait_next(&mut self) -> wasmtime::Result<Vec<Completion>> {
        let finished = self.calls.finished().await?;
        let mut completions = Vec::with_capacity(finished.len());
        for (id, result) in finished {
            let outcome = match result {
                Ok(mut output) => {
                    self.images.add(std::mem::take(&mut output.images));
                    Ok(match output.into_script_value() {
                        ScriptValue::Json(json) => ToolValue::Json(json),
                        ScriptValue::Text(text) => ToolValue::Text(text),
                    })
                }
                Err(error) => Err(error.message),
            };
            completions.push(Completion { id, outcome });
        }
        Ok(completions)
    }
}
