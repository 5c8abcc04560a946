//! Text a script or an MCP server chose (a result, a tool's description, a hook's report)
//! reaches the operator's terminal. Escape sequences in it could rewrite the screen, set
//! the window title or answer back to the shell; printed to a terminal, control characters
//! are shown as escapes, not obeyed. Output to files and pipes is left as it is.

use std::borrow::Cow;
use std::io::IsTerminal;

/// `text` as it may be printed to standard output.
pub fn out(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() { neutralise(text) } else { text.into() }
}

/// Prints `text` (made safe by [`out`]) on standard output. A reader that has gone (the
/// pipe closed: `| head`) has read what it wanted: the command ends there, quietly and
/// successfully, as a Unix tool does.
pub fn print(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_all(out(text).as_bytes()).and_then(|()| stdout.flush());
    if let Err(error) = written
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// [`print`], and a newline.
pub fn println(text: &str) {
    print(&format!("{text}\n"));
}

/// `text` as it may be printed to standard error.
pub fn err(text: &str) -> Cow<'_, str> {
    if std::io::stderr().is_terminal() { neutralise(text) } else { text.into() }
}

/// Every control character but newline and tab, and the characters that reorder text
/// (bidirectional overrides and isolates), written as a visible `\u{..}` escape.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    let obeyed =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(obeyed) {
        return text.into();
    }
    text.chars().map(|c| if obeyed(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect::<String>().into()
}

/// Log lines as the command's own messages: `exec-host: warning: ...`, the way the command
/// words every warning it prints itself, with the message made safe for a terminal.
pub struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        let mut fields = String::new();
        context.field_format().format_fields(tracing_subscriber::fmt::format::Writer::new(&mut fields), event)?;
        writeln!(writer, "exec-host: {level}: {}", err(&fields))
    }
}

/// Leaves out what a dependency reports as an error but is the normal end of a call whose
/// client has gone: rmcp's "failed to send pending response during drain" comes when a
/// connection closes (its client cancelled or left) while the answer to it was on its way,
/// and its "fail to response message" with a closed channel when the answer comes after the
/// client's stream closed; nobody is left to read that answer.
pub struct WithoutUnheardAnswers;

/// rmcp's target, and its messages for an answer nobody reads (the second only with a
/// closed channel as its error).
const UNHEARD_TARGET: &str = "rmcp::service";
const UNHEARD_IN_DRAIN: &str = "failed to send pending response during drain";
const UNHEARD_AFTER_CLOSE: &str = "fail to response message";

impl<S> tracing_subscriber::layer::Filter<S> for WithoutUnheardAnswers {
    fn enabled(&self, _: &tracing::Metadata<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &tracing::Event<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        #[derive(Default)]
        struct Fields {
            message: String,
            error: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                self.record_debug(field, &format_args!("{value}"));
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.message = format!("{value:?}"),
                    "error" => self.error = format!("{value:?}"),
                    _ => {}
                }
            }
        }
        if event.metadata().target() != UNHEARD_TARGET {
            return true;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let unheard =
            fields.message == UNHEARD_IN_DRAIN || (fields.message == UNHEARD_AFTER_CLOSE && fields.error.contains("closed"));
        !unheard
    }
}

#[cfg(test)]
mod tests {
    use super::neutralise;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(neutralise("plain\ttext\nok"), "plain\ttext\nok");
        assert_eq!(neutralise("\u{1b}]0;title\u{7}"), "\\u{1b}]0;title\\u{7}");
        assert_eq!(neutralise("a\u{9b}31mb\rc\u{7f}"), "a\\u{9b}31mb\\u{d}c\\u{7f}");
        assert_eq!(neutralise("x\u{202E}y"), "x\\u{202e}y");
    }
}
