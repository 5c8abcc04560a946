//! What a simple command runs, as bash resolves it: wrappers (`command`, `env`, `nice`,
//! `timeout`, ...) taken off, a path cut to its base name, `sh -c` and `eval` code found.

use super::MAX_DEPTH;
use super::words::quoted;

/// How a simple command's reading ends, once its words are read.
pub(super) enum Resolved {
    /// With the command that runs.
    Runs,
    /// With code run as a command of its own: a shell's `-c`, `eval`'s arguments.
    Shell(String),
    /// It cannot be known: a command name that expands, code this reading cannot see
    /// (`source`, `trap`), a wrapper whose options are not understood.
    Unknown,
}

/// Commands that run the command their arguments name, with the options each takes before
/// it (`true`: the option takes a value).
const WRAPPERS: &[(&str, &[(&str, bool)])] = &[
    ("command", &[("-p", false), ("-v", false), ("-V", false)]),
    ("builtin", &[]),
    ("exec", &[("-c", false), ("-l", false), ("-a", true)]),
    ("nice", &[("-n", true)]),
    ("nohup", &[]),
    ("time", &[("-p", false)]),
    ("setsid", &[("-f", false), ("-w", false)]),
    ("stdbuf", &[("-i", true), ("-o", true), ("-e", true)]),
    ("xargs", &[("-0", false), ("-r", false), ("-t", false), ("-n", true), ("-I", true), ("-d", true), ("-P", true)]),
    ("sudo", &[]),
    ("doas", &[]),
];

/// Commands that run code this reading cannot see: a file's (`source`), or later (`trap`).
const CODE_RUNNERS: &[&str] = &["source", ".", "trap", "fc", "bind", "enable", "alias", "complete", "compgen"];

/// Shells whose `-c` code is read as a command.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// Resolves what runs from a command's words, `shown` (quoted where needed) and `read` (as
/// bash passes them, when they do not expand): wrappers taken off (`env` with its
/// assignments, `timeout` with its duration), a path cut to its base name. A wrapper's own
/// words must not expand.
pub(super) fn resolve(shown: &[String], read: &[Option<String>]) -> (Vec<String>, Resolved) {
    let mut stages = Vec::new();
    let mut at = 0;
    for _ in 0..MAX_DEPTH {
        // The command's name, or a wrapper's, that expands cannot be known; nor one with a
        // `[` (bash reads `name[...]` as one word up to the matching `]`, spaces and all).
        let Some(Some(first)) = read.get(at) else { return (stages, Resolved::Unknown) };
        if first.contains('[') && first != "[" {
            return (stages, Resolved::Unknown);
        }
        let name = base_name(first);
        let words = &read[at..];
        stages.push(std::iter::once(quoted(name)).chain(shown[at + 1..].iter().cloned()).collect::<Vec<_>>().join(" "));
        if CODE_RUNNERS.contains(&name) {
            return (stages, Resolved::Unknown);
        }
        if name == "eval" {
            // `eval` runs its arguments, joined by spaces, as code.
            let code: Option<Vec<&str>> = words[1..].iter().map(Option::as_deref).collect();
            return match code {
                Some(code) => (stages, Resolved::Shell(code.join(" "))),
                None => (stages, Resolved::Unknown),
            };
        }
        if SHELLS.contains(&name) {
            let resolved = match words.get(1..) {
                Some([Some(flag), Some(code), ..]) if flag == "-c" => Resolved::Shell(code.clone()),
                // Code that expands, or options this reading does not follow.
                Some([Some(flag), ..]) if flag.starts_with('-') => Resolved::Unknown,
                Some([None, ..]) => Resolved::Unknown,
                // A shell reading a script file, or standard input: nothing to read here.
                _ => Resolved::Runs,
            };
            return (stages, resolved);
        }
        let skipped = match name {
            "env" => skip_env(words),
            "timeout" => skip_options(
                words,
                &[("-s", true), ("-k", true), ("--foreground", false), ("--preserve-status", false), ("-v", false)],
            )
            .map(|at| at + 1),
            _ => match WRAPPERS.iter().find(|(wrapper, _)| *wrapper == name) {
                Some((_, options)) => skip_options(words, options),
                None => return (stages, Resolved::Runs),
            },
        };
        match skipped {
            Some(skip) if skip < words.len() => at += skip,
            // `command -v x` or `nice` alone: the wrapper runs nothing but itself.
            Some(_) => return (stages, Resolved::Runs),
            None => return (stages, Resolved::Unknown),
        }
    }
    (stages, Resolved::Unknown)
}

/// Where a wrapper's command starts: after its name and the options it takes (`--` ends
/// them); `None` for an option not known, or one that expands.
fn skip_options(words: &[Option<String>], options: &[(&str, bool)]) -> Option<usize> {
    let mut at = 1;
    while let Some(word) = words.get(at) {
        let word = word.as_deref()?;
        if word == "--" {
            return Some(at + 1);
        }
        if !word.starts_with('-') || word == "-" {
            return Some(at);
        }
        let (takes_value, attached) = match options.iter().find(|(option, _)| word.starts_with(option)) {
            Some((option, takes_value)) => (*takes_value, word.len() > option.len()),
            // `nice -5`: a number is nice's adjustment.
            None if word[1..].chars().all(|c| c.is_ascii_digit()) => (false, false),
            None => return None,
        };
        // Flags run together (`-cl`): each must be one that takes no value.
        if !takes_value
            && attached
            && !word[1..].chars().all(|flag| options.iter().any(|(option, takes)| !takes && option[1..] == *flag.to_string()))
        {
            return None;
        }
        at += if takes_value && !attached { 2 } else { 1 };
    }
    Some(at)
}

/// Where `env`'s command starts: after its options (`-i`, `-u NAME`) and assignments.
fn skip_env(words: &[Option<String>]) -> Option<usize> {
    let mut at = skip_options(words, &[("-i", false), ("-u", true), ("-0", false), ("--ignore-environment", false)])?;
    while let Some(word) = words.get(at) {
        match word.as_deref()? {
            word if word.contains('=') && !word.starts_with('=') => at += 1,
            _ => break,
        }
    }
    Some(at)
}

/// What bash looks up for `word`: the last part of a path.
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}
