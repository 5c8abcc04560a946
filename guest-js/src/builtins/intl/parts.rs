//! ICU4X's formatted output as ECMA-402's typed parts (`formatToParts`).
//!
//! ICU4X annotates what it writes with [`writeable::Part`]s (`integer`, `group`,
//! `minusSign`, `element`, ...), nested: an integer holds its group separators. The
//! innermost annotation types each piece of text; unannotated text is a `literal`.
//! ECMA-402's type names are ICU4X's part values for numbers and lists, so they pass
//! through; other formatters' parts are renamed by their callers.

use std::fmt;

use writeable::{PartsWrite, Writeable};

/// One typed piece of formatted text.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub kind: &'static str,
    pub text: String,
}

impl Part {
    pub fn new(kind: &'static str, text: &str) -> Part {
        Part { kind, text: text.to_owned() }
    }
}

pub type Parts = Vec<Part>;

/// The parts of `value`, adjacent pieces of one type joined (as `1,234` is the integer
/// `1`, the group `,` and the integer `234`).
pub fn parts_of(value: &impl Writeable) -> Parts {
    let mut sink = Collector { parts: Vec::new(), stack: Vec::new() };
    // Writing into a `String` cannot fail.
    let _ = value.write_to_parts(&mut sink);
    sink.parts
}

struct Collector {
    parts: Parts,
    /// The value of each annotation the writer is inside, innermost last.
    stack: Vec<&'static str>,
}

impl fmt::Write for Collector {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if text.is_empty() {
            return Ok(());
        }
        let kind = self.stack.last().copied().unwrap_or("literal");
        match self.parts.last_mut() {
            Some(last) if last.kind == kind => last.text.push_str(text),
            _ => self.parts.push(Part::new(kind, text)),
        }
        Ok(())
    }
}

impl PartsWrite for Collector {
    type SubPartsWrite = Collector;

    fn with_part(&mut self, part: writeable::Part, mut f: impl FnMut(&mut Self::SubPartsWrite) -> fmt::Result) -> fmt::Result {
        self.stack.push(part.value);
        let result = f(self);
        self.stack.pop();
        result
    }
}
