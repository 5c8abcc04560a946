//! `exec-host:sandbox/tools`: start a call without blocking; wait for the next to finish.

use super::Completion;
use super::generated::exec_host::sandbox::tools::Host;
use crate::runtime::ExecState;

impl Host for ExecState {
    fn start_call(&mut self, name: String, args_json: String) -> u32 {
        self.calls.start(name, args_json)
    }

    async fn wait_next(&mut self) -> wasmtime::Result<Option<Completion>> {
        let Some((id, result)) = self.calls.next().await? else {
            return Ok(None);
        };
        let outcome = match result {
            Ok(mut output) => {
                self.images.add(std::mem::take(&mut output.images));
                Ok(output.into_script_json())
            }
            Err(error) => Err(error.message),
        };
        Ok(Some(Completion { id, outcome }))
    }
}
