//! `exec-host:sandbox/console`: every line reaches the host as it is written.

use super::Level;
use super::generated::exec_host::sandbox::console::Host;
use crate::runtime::ExecState;

impl Host for ExecState {
    fn write(&mut self, level: Level, message: String) {
        self.console.write(level, &message);
    }
}
