//! The `Bash` rules' reading of a command, differentially against bash itself: the input
//! picks a command from shell fragments (every quoting form, comments, operators, groups,
//! substitutions, here-documents, functions, wrappers). bash runs it, confined, with no
//! command on its `PATH`, so every command it would run reaches `command_not_found_handle`,
//! which records its name. Wherever our reading is certain (no part unreadable), every name
//! bash ran must be one we read: as written, or as a wrapper or what it runs. A miss is a
//! command a rule could not see.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use exec_host::CancellationToken;
use exec_host::command::{self, Confinement, Layers};
use exec_host::settings::commands::{Part, READER_THREAD, parts};
use libfuzzer_sys::fuzz_target;

/// The fragments a command is made of.
const FRAGMENTS: &[&str] = &[
    "aa",
    "bb",
    "rm",
    "'rm'",
    "\\rm",
    "r\\m",
    "\"r\"m",
    "$'rm'",
    "command ",
    "env ",
    "nice ",
    "exec ",
    "eval ",
    "bash -c ",
    "sh -c ",
    "xargs ",
    "timeout 5 ",
    "FOO=1 ",
    " ",
    " ",
    " ",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "\n",
    "(",
    ")",
    "{ ",
    " }",
    "$(",
    "`",
    "<(",
    ">(",
    "#",
    "'",
    "\"",
    "\\",
    "$",
    "if ",
    "then ",
    "fi",
    "for x in a; do ",
    "done",
    "case a in a) ",
    ";;",
    "esac",
    "() ",
    "<<EOF\n",
    "\nEOF\n",
    "<<'EOF'\n",
    "coproc ",
    "function ",
    "! ",
    "[[ ",
    " ]]",
    "$((",
    "))",
    "x=",
    "${x:-",
    "}",
    "\\\n",
    "echo ",
    "true ",
    "a",
    "x",
    "-c",
    "'aa'",
    "\"bb\"",
    "=",
    "<<<",
    "2>&1",
    ">",
    "<",
    "$x",
    "${x}",
    "eval",
    "cc",
    "[",
    "]",
    "while false; do ",
    "until true; do ",
    "select x in a; do ",
    "-",
    "--",
    "-n 1 ",
    "env -i ",
    "command -p ",
    "builtin ",
    "\t",
    "*",
    "?",
    "~",
    "a[1]=b ",
    "declare ",
    "export ",
    "local ",
    "set -- ",
    "shift ",
    "alias ",
    "source ",
];

/// A command read from the input: one fragment a byte, at most 24.
fn command_of(bytes: &[u8]) -> String {
    bytes.iter().take(24).map(|byte| FRAGMENTS[*byte as usize % FRAGMENTS.len()]).collect()
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime"))
}

/// What the handler records: each command bash looked up and did not find, NUL-ended.
const PRELUDE: &str = "__ran=\"$PWD/.ran\"; command_not_found_handle() { printf '%s\\0' \"$1\" >> \"$__ran\"; return 127; }\n";

/// Runs `command` in bash, confined to a fresh workspace; the names it looked up.
fn bash_runs(command: &str) -> Vec<String> {
    let workspace = tempfile::tempdir().expect("a workspace");
    std::fs::write(workspace.path().join(".prelude"), PRELUDE).expect("the prelude");
    std::fs::write(workspace.path().join(".command"), command).expect("the command");
    // The command exactly as given (a trailing new line kept), in a bash with no `PATH`.
    let runner =
        "c=\"$(cat .command; printf x)\"; c=\"${c%x}\"; PATH=/nonexistent BASH_ENV=\"$PWD/.prelude\" exec /bin/bash -c \"$c\"";
    let confinement = Confinement::new(workspace.path(), Layers::default());
    let cancel = CancellationToken::new();
    let ran = runtime().block_on(command::run(runner, &confinement, Duration::from_secs(3), &cancel, &|_| {}));
    ran.expect("bash starts, confined");
    let record = std::fs::read(workspace.path().join(".ran")).unwrap_or_default();
    String::from_utf8_lossy(&record).split('\0').filter(|name| !name.is_empty()).map(str::to_string).collect()
}

/// The first word of `text` (a part's words, quoted as `shlex` quotes them).
fn first_word(text: &str) -> Option<String> {
    shlex::split(text)?.into_iter().next()
}

fn names(part: &Part, name: &str) -> bool {
    first_word(&part.text).as_deref() == Some(name) || part.runs.iter().any(|runs| first_word(runs).as_deref() == Some(name))
}

/// libFuzzer's panic hook aborts at any panic. A panic of the parser on the reader's own
/// thread is one the host survives (the command is then unreadable): it passes, and every
/// other panic still aborts.
fn survive_the_reader_s_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let aborting = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |panic| {
            if std::thread::current().name() != Some(READER_THREAD) {
                aborting(panic);
            }
        }));
    });
}

fuzz_target!(|bytes: &[u8]| {
    survive_the_reader_s_panics();
    let command = command_of(bytes);
    let read = parts(&command);
    if read.iter().any(|part| part.unreadable) {
        return;
    }
    for name in bash_runs(&command) {
        assert!(
            read.iter().any(|part| names(part, &name)),
            "bash ran {name:?} for {command:?}, which the rules read as {read:#?}"
        );
    }
});
