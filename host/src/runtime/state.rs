//! What one Exec's store holds: its WASI context (no files, no sockets, no environment),
//! its nested calls, its console output, its images and its clock.

use std::sync::Arc;

use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::calls::{Images, NestedCalls};
use super::clock::GuestClock;
use crate::guest::Level;

/// Bytes of the guest's own stderr kept (it carries an engine panic's message).
pub const GUEST_STDERR_BYTES: usize = 16 * 1024;

pub struct ExecState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: StoreLimits,
    pub(crate) calls: NestedCalls,
    pub(crate) console: ConsoleLog,
    pub(crate) images: Images,
    pub(crate) clock: Arc<GuestClock>,
    pub(crate) stderr: MemoryOutputPipe,
}

impl ExecState {
    pub(crate) fn new(
        calls: NestedCalls,
        console: ConsoleLog,
        images: Images,
        clock: Arc<GuestClock>,
        limiter: StoreLimits,
    ) -> Self {
        let stderr = MemoryOutputPipe::new(GUEST_STDERR_BYTES);
        // No preopens, no environment, no arguments; stdout is discarded.
        let wasi = wasmtime_wasi::WasiCtxBuilder::new().stderr(stderr.clone()).build();
        ExecState { wasi, table: ResourceTable::new(), limiter, calls, console, images, clock, stderr }
    }
}

impl WasiView for ExecState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Console output of one script, capped at a number of characters. Output before a
/// failure or a termination is kept: each line reaches the host as it is written.
#[derive(Debug, Default)]
pub struct ConsoleLog {
    pub lines: Vec<String>,
    chars: usize,
    max_chars: usize,
    /// Characters written past the cap.
    pub cut_chars: usize,
}

impl ConsoleLog {
    pub fn new(max_chars: usize) -> Self {
        ConsoleLog { max_chars, ..Default::default() }
    }

    pub fn write(&mut self, level: Level, message: &str) {
        let prefix = match level {
            Level::Warn => "[warn] ",
            Level::Error => "[error] ",
            Level::Log | Level::Info | Level::Debug => "",
        };
        let length = prefix.chars().count() + message.chars().count();
        let room = self.max_chars - self.chars;
        if length <= room {
            self.lines.push(format!("{prefix}{message}"));
            self.chars += length;
            return;
        }
        if room > 0 {
            let line: String = prefix.chars().chain(message.chars()).take(room).collect();
            self.lines.push(line);
            self.chars += room;
        }
        self.cut_chars += length - room;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_output_is_capped_in_characters() {
        let mut log = ConsoleLog::new(10);
        log.write(Level::Log, "12345");
        log.write(Level::Warn, "abc");
        assert_eq!(log.lines, vec!["12345", "[warn"]);
        assert_eq!(log.cut_chars, 5);
        log.write(Level::Log, "more");
        assert_eq!(log.cut_chars, 9);
    }
}
