//! A script's console output as the host keeps it: each line as it is written, within a
//! bound in characters, with the level's prefix, told to a watcher as it is kept.

use std::sync::Arc;

use crate::sandbox::guest::Level;

/// The level of a console line: the `console` method the script called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsoleLevel {
    Log,
    Info,
    Warn,
    Error,
    Debug,
}

impl From<Level> for ConsoleLevel {
    fn from(level: Level) -> Self {
        match level {
            Level::Log => ConsoleLevel::Log,
            Level::Info => ConsoleLevel::Info,
            Level::Warn => ConsoleLevel::Warn,
            Level::Error => ConsoleLevel::Error,
            Level::Debug => ConsoleLevel::Debug,
        }
    }
}

/// Sees each console line of an Exec as it is kept (within the log cap, so it sees at most
/// `max_log_chars` characters in all): its level, and its text without the level's prefix.
pub type ConsoleWatcher = Arc<dyn Fn(ConsoleLevel, &str) + Send + Sync>;

/// Console output of one script, capped at a number of characters. Output before a
/// failure or a termination is kept: each line reaches the host as it is written.
#[derive(Default)]
pub(crate) struct ConsoleLog {
    pub lines: Vec<String>,
    chars: usize,
    max_chars: usize,
    /// Characters written past the cap (for a line the guest already cut, the units it
    /// did not pass count too).
    pub cut_chars: usize,
    watcher: Option<ConsoleWatcher>,
}

impl ConsoleLog {
    pub fn new(max_chars: usize) -> Self {
        ConsoleLog { max_chars, ..Default::default() }
    }

    /// The same log, with `watcher` told of each line kept.
    pub fn watched(mut self, watcher: Option<ConsoleWatcher>) -> Self {
        self.watcher = watcher;
        self
    }

    /// Keeps one line within the cap; `cut_units` is what the guest cut from it already.
    pub fn write(&mut self, level: Level, message: &str, cut_units: u64) {
        self.cut_chars = self.cut_chars.saturating_add(usize::try_from(cut_units).unwrap_or(usize::MAX));
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
            self.tell(level, message);
            return;
        }
        if room > 0 {
            let line: String = prefix.chars().chain(message.chars()).take(room).collect();
            self.tell(level, line.get(prefix.len()..).unwrap_or_default());
            self.lines.push(line);
            self.chars += room;
        }
        self.cut_chars += length - room;
    }

    /// A parked Exec's log, taken up where it stopped.
    pub fn restore(&mut self, lines: Vec<String>, cut_chars: usize) {
        self.chars = lines.iter().map(|line| line.chars().count()).sum::<usize>().min(self.max_chars);
        self.lines = lines;
        self.cut_chars = cut_chars;
    }

    fn tell(&self, level: Level, text: &str) {
        if let Some(watcher) = &self.watcher {
            watcher(level.into(), text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_output_is_capped_in_characters() {
        let mut log = ConsoleLog::new(10);
        log.write(Level::Log, "12345", 0);
        log.write(Level::Warn, "abc", 0);
        assert_eq!(log.lines, vec!["12345", "[warn"]);
        assert_eq!(log.cut_chars, 5);
        log.write(Level::Log, "more", 0);
        assert_eq!(log.cut_chars, 9);
    }
}
