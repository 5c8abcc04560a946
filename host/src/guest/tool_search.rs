//! `exec-host:sandbox/tool-search`: `tools.ToolSearch(...)`, answered at once.

use super::generated::exec_host::sandbox::tool_search::Host;
use crate::runtime::ExecState;

impl Host for ExecState {
    fn search(&mut self, args_json: String) -> Result<String, String> {
        // Searching is the host's work, like a tool's, not the script's time.
        let _paused = self.clock.pause();
        self.calls.search(&args_json)
    }
}
