//! `exec-host man`: the manual page, made from the command-line definition (`flags`) so it
//! never drifts from `--help`: the command's own page, then a section per subcommand with
//! its synopsis, what it does and its options.

use std::io::Write as _;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::UsageError;
use crate::flags::Cli;

/// What the exit status says, as `main` sets it.
const EXIT_STATUS: &str = "0 when the script succeeded (for doctor: when everything configured works); \
1 when it failed, Exec was refused, search matched nothing or a doctor check failed; \
2 for a usage or set-up error (one sentence on standard error); \
3 when the script parked (run --on-ask park, resume).";

/// Where the files the commands read and write are, when no flag names them.
const FILES: &[(&str, &str)] = &[
    ("WORKSPACE/.exec-host/settings.json", "the project's settings"),
    ("~/.config/exec-host/settings.json", "the user's settings ($XDG_CONFIG_HOME/exec-host/settings.json when set)"),
    ("/etc/exec-host/managed-settings.json", "the managed settings, above every other file"),
    ("$XDG_STATE_HOME/exec-host/store, state.key", "parked Execs and kept values, and the key that seals them"),
    ("$XDG_DATA_HOME/exec-host/credentials.json", "the OAuth tokens of MCP servers and APIs (exec-host mcp login)"),
    ("~/.cache/exec-host", "the guests' compiled code ($EXEC_HOST_CACHE_DIR or $XDG_CACHE_HOME/exec-host when set)"),
];

/// The page, in roff.
pub(crate) fn page() -> std::io::Result<Vec<u8>> {
    let command = Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    // The commands, each described in a section of its own below (there is one page).
    let mut commands = roff::Roff::new();
    commands.control("SH", ["COMMANDS"]);
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
        let about = sub.get_about().map(|about| about.to_string()).unwrap_or_default();
        commands.control("TP", []).text([roff::bold(format!("exec-host {}", sub.get_name()))]).text([roff::roman(about)]);
    }
    commands.to_writer(&mut out)?;
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
        subcommand(&mut out, &format!("exec-host {}", sub.get_name()), sub)?;
        for nested in sub.get_subcommands().filter(|nested| nested.get_name() != "help") {
            subcommand(&mut out, &format!("exec-host {} {}", sub.get_name(), nested.get_name()), nested)?;
        }
    }
    let mut files = roff::Roff::new();
    files.control("SH", ["FILES"]);
    for (place, what) in FILES {
        files.control("TP", []).text([roff::bold(*place)]).text([roff::roman(*what)]);
    }
    files.control("SH", ["EXIT STATUS"]).text([roff::roman(EXIT_STATUS)]);
    files.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// The section of one subcommand: its usage, its long description, and its options.
fn subcommand(out: &mut Vec<u8>, title: &str, command: &clap::Command) -> std::io::Result<()> {
    let command = command.clone().bin_name(title.to_string());
    let mut head = roff::Roff::new();
    head.control("SH", [title.to_uppercase().as_str()]);
    let usage = command.clone().render_usage().to_string();
    head.text([roff::bold(usage.trim_start_matches("Usage: "))]);
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        head.control("PP", []).text([roff::roman(about.to_string())]);
    }
    head.to_writer(&mut *out)?;
    // The options as clap_mangen renders them, under this section rather than one of their own.
    let mut options = Vec::new();
    clap_mangen::Man::new(command).render_options_section(&mut options)?;
    let options = String::from_utf8_lossy(&options).replacen(".SH OPTIONS\n", "", 1);
    out.extend_from_slice(b".PP\nOptions:\n");
    out.extend_from_slice(options.as_bytes());
    Ok(())
}

/// `exec-host man`.
pub(crate) fn print() -> Result<ExitCode, UsageError> {
    let page = page()?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&page)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
