//! An error and its causes as one sentence: how the host writes an error to the model, to
//! an MCP client and to the command line. An error type says its own part and keeps its
//! cause as its `source`; this joins them. A few causes are written to end a sentence (a
//! [`ReadError`](crate::support::text_file::ReadError) says "does not exist" of the file
//! its wrapper names), and their wrappers write them in their own words: those are not
//! repeated.

use std::error::Error;

/// `error` and every cause beneath it, joined by `": "`; a cause whose text the sentence
/// already holds (an error that repeats its cause) is not written twice.
pub fn error_sentence(error: &(dyn Error + 'static)) -> String {
    let mut sentence = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = inner.to_string();
        if !sentence.contains(&text) {
            sentence.push_str(": ");
            sentence.push_str(&text);
        }
        cause = inner.source();
    }
    sentence
}

/// Where in a JSON document a reader's error is, as a key path (`permissions.deny[1]`): the
/// path up to the first place the tracker could not name, `None` at the top level.
pub(crate) fn json_key(path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut key = String::new();
    for segment in path.iter().take_while(|segment| !matches!(segment, Segment::Unknown)) {
        if !key.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            key.push('.');
        }
        key.push_str(&segment.to_string());
    }
    Some(key).filter(|key| !key.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the file a.json cannot be read")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_is_written_once() {
        let error = Outer(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied"));
        assert_eq!(error_sentence(&error), "the file a.json cannot be read: permission denied");
        let plain = std::io::Error::other("no cause");
        assert_eq!(error_sentence(&plain), "no cause");
    }
}
