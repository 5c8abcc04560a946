//! What a guest asked of the host at the WIT boundary, in order: the record a conformance
//! case compares (see `crate::sandbox::conformance`). Only an Exec that asks for it keeps one.

use super::console::ConsoleLevel;

/// Events one trace keeps; past it they are counted, not kept.
pub const MAX_TRACE_EVENTS: usize = 10_000;

/// Bytes of names, arguments and messages one trace keeps; past it events are counted, not
/// kept. (A guest passes each call at most `max_argument_bytes` of arguments, but may make
/// many calls.)
pub const MAX_TRACE_BYTES: usize = 16 * 1024 * 1024;

/// One import of the contract's three interfaces, as the guest called it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BoundaryEvent {
    /// `tools.call(name, args-json)`.
    Call { name: String, args_json: String },
    /// `tool-search.search(args-json)`.
    Search { args_json: String },
    /// `console.write(level, message, cut-units)`.
    Console { level: ConsoleLevel, message: String, cut_units: u64 },
    /// `state.load(key)`.
    Load { key: String },
    /// `state.store(key, value-json)`; `None` removes the key.
    Store { key: String, value_json: Option<String> },
}

impl BoundaryEvent {
    fn bytes(&self) -> usize {
        match self {
            BoundaryEvent::Call { name, args_json } => name.len() + args_json.len(),
            BoundaryEvent::Search { args_json } => args_json.len(),
            BoundaryEvent::Console { message, .. } => message.len(),
            BoundaryEvent::Load { key } => key.len(),
            BoundaryEvent::Store { key, value_json } => key.len() + value_json.as_ref().map_or(0, String::len),
        }
    }
}

/// The events of one Exec, within [`MAX_TRACE_EVENTS`] and [`MAX_TRACE_BYTES`].
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<BoundaryEvent>,
    /// Events past the bounds, not kept.
    pub dropped: usize,
    bytes: usize,
}

impl Trace {
    pub(crate) fn push(&mut self, event: BoundaryEvent) {
        let bytes = event.bytes();
        if self.events.len() >= MAX_TRACE_EVENTS || self.bytes + bytes > MAX_TRACE_BYTES {
            self.dropped += 1;
            return;
        }
        self.bytes += bytes;
        self.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_keeps_its_bounds() {
        let mut trace = Trace::default();
        for _ in 0..MAX_TRACE_EVENTS + 3 {
            trace.push(BoundaryEvent::Search { args_json: "{}".into() });
        }
        assert_eq!((trace.events.len(), trace.dropped), (MAX_TRACE_EVENTS, 3));
        let mut trace = Trace::default();
        let big = "x".repeat(MAX_TRACE_BYTES / 2);
        for _ in 0..3 {
            trace.push(BoundaryEvent::Search { args_json: big.clone() });
        }
        assert_eq!((trace.events.len(), trace.dropped), (2, 1));
    }
}
