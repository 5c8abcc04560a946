//! How commands read, part by part, and what rules make of them.

use super::words::ansi_c;
use super::*;

/// Each part: (what it runs in the end, or its text where it runs nothing of its own;
/// opaque).
fn runs(command: &str) -> Vec<(String, bool)> {
    parts(command).into_iter().map(|part| (part.runs.last().cloned().unwrap_or(part.text), part.opaque)).collect()
}

fn plain(texts: &[&str]) -> Vec<(String, bool)> {
    texts.iter().map(|text| (text.to_string(), false)).collect()
}

/// Whether an allow rule `Bash(specifier)` lets all of `command` run.
fn allowed(specifier: &str, command: &str) -> bool {
    let pattern = CommandPattern::new(specifier);
    let parts = parts(command);
    !parts.is_empty() && parts.iter().all(|part| pattern.allows(part))
}

/// Whether a deny rule `Bash(specifier)` names any part of `command`.
fn denied(specifier: &str, command: &str) -> bool {
    let pattern = CommandPattern::new(specifier);
    parts(command).iter().any(|part| pattern.names(part))
}

#[test]
fn commands_split_at_every_operator_and_substitutions_are_parts_of_their_own() {
    assert_eq!(runs("git status && rm -rf x"), plain(&["git status", "rm -rf x"]));
    assert_eq!(runs("a || b; c | d & e\nf"), plain(&["a", "b", "c", "d", "e", "f"]));
    assert_eq!(runs("echo 'a && b' \"c; d\""), plain(&["echo 'a && b' 'c; d'"]));
    assert_eq!(runs("make 2>&1 | tee log"), plain(&["make", "tee log"]));
    assert_eq!(runs("echo $(rm -rf x)"), [("rm -rf x".into(), false), ("echo $(rm -rf x)".into(), true)]);
    assert_eq!(runs("echo \"`id`\""), [("id".into(), false), ("echo \"`id`\"".into(), true)]);
    assert_eq!(runs("(cd a && make)"), plain(&["cd a", "make"]));
    assert_eq!(runs("diff <(ls a) <(ls b)"), [("ls a".into(), false), ("ls b".into(), false), ("diff".into(), true)]);
    assert_eq!(runs("cat <<EOF\n$(rm x)\nEOF\n"), [("rm x".into(), false), ("cat".into(), true)]);
    assert_eq!(runs("cat <<'EOF'\n$(rm x)\nEOF\n"), plain(&["cat"]));
    assert_eq!(
        runs("for f in $(ls); do rm $f; done"),
        [("ls".into(), false), ("for f in ...".into(), true), ("rm $f".into(), false)]
    );
    assert_eq!(runs("if test -f a; then rm a; else touch b; fi"), plain(&["test -f a", "rm a", "touch b"]));
    assert_eq!(runs("coproc { rm x; }"), plain(&["rm x"]));
    assert!(parts("echo 'unclosed").iter().all(|part| part.unreadable));
    assert_eq!(parts(&"a;".repeat(100)).len(), MAX_PARTS + 1);
}

#[test]
fn a_command_is_read_as_bash_reads_it_so_no_prefix_rule_lets_a_second_command_through() {
    // Each of these runs `touch pwned` in bash; none may pass `Bash(echo:*)` or the
    // guide's `Bash(git status:*)` (docs/guide/tools.md).
    for attack in [
        "echo #'\ntouch pwned\n#'",
        "echo #\"\ntouch pwned\n#\"",
        "echo $'\\'' ; touch pwned ; echo $'\\''",
        "echo () { touch pwned; }; echo",
        "echo x; eval 'touch pwned'",
        "echo x | xargs touch pwned",
        "echo `touch pwned`",
        "echo \"$(touch pwned)\"",
        "echo ${x:-$(touch pwned)}",
        "echo x > >(touch pwned)",
        "echo x && bash -c 'touch pwned'",
        "echo x; source ./script",
        "echo x; . ./script",
        "echo x; exec touch pwned",
        "echo x; command touch pwned",
        "echo x; trap 'touch pwned' EXIT",
        "echo x\ncoproc touch pwned",
    ] {
        assert!(!allowed("echo:*", attack), "{attack:?}: {:?}", parts(attack));
    }
    assert!(!allowed("git status:*", "git status #'\ntouch pwned\n#'"));
    assert!(!allowed("git * main", "git push origin main; touch pwned; git log main"));
    // And what is plainly one command still is.
    assert!(allowed("echo:*", "echo 'a;b' \"c && d\" # a comment; touch nothing"));
    assert!(allowed("git status:*", "git status --short"));
    assert!(allowed("git * main", "git push origin main"));
    assert!(allowed("npm run test:*", "npm run test -- --watch"));
    assert!(!allowed("npm run test:*", "npm run testing"));
}

#[test]
fn arithmetic_expansion_of_numbers_runs_no_command_and_a_prefix_rule_allows_it() {
    for command in ["echo probe-$((6*7))", "echo \"$(( 0x10 + 2#101 ))\" $((1 << 3))", "echo ${HOME} ${#1} ${s:2:3} ${a[0]}"] {
        assert!(allowed("echo:*", command), "{command:?}: {:?}", parts(command));
    }
    assert_eq!(runs("echo probe-$((6*7))"), plain(&["echo probe-$((6*7))"]));
    // One that substitutes still runs what it substitutes.
    assert_eq!(runs("echo $(( $(rm x) + 1 ))"), [("rm x".into(), false), ("echo $(( $(rm x) + 1 ))".into(), true)]);
}

#[test]
fn a_variable_whose_value_bash_evaluates_as_code_is_allowed_by_no_specifier() {
    // bash evaluates a variable's value as arithmetic in each of these places, and a
    // subscript there runs what it substitutes; `${x@P}` expands the value as a prompt. Each
    // line makes `pwned` in real bash, and none may pass `Bash(echo:*)`.
    let set = "x='a[$(touch pwned)]'; y='$(touch pwned)'; s=abc; ";
    let attacks = [
        "echo $((x))",
        "echo \"$((x + 1))\"",
        "echo $[x]",
        "echo ${s:x}",
        "echo ${s:0:x}",
        "echo ${s[x]}",
        "echo ${!x}",
        "echo ${y@P}",
        "echo ${u:-${s:x}}",
        "((x)); echo",
        "[[ x -eq 0 ]]; echo",
        "a[x]=1; echo",
        "for ((i = x; i < 1; i++)); do echo; done",
    ];
    for attack in attacks {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("{set}{attack}"))
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("bash runs");
        let _ = status;
        assert!(dir.path().join("pwned").exists(), "{attack:?} is an attack in bash");
        assert!(!allowed("echo:*", attack), "{attack:?}: {:?}", parts(attack));
        assert!(!allowed("echo:*", &format!("{set}{attack}")), "{attack:?}");
    }
}

#[test]
fn a_deny_rule_names_the_command_however_it_is_spelled_or_wrapped() {
    for spelling in [
        "rm x",
        "\\rm x",
        "'rm' x",
        "\"rm\" x",
        "r\"m\" x",
        "$'rm' x",
        "/bin/rm x",
        "/usr/bin/../bin/rm x",
        "command rm x",
        "command -p rm x",
        "builtin rm x",
        "exec rm x",
        "env rm x",
        "env -i FOO=1 rm x",
        "FOO=1 rm x",
        "nice -n 5 rm x",
        "nohup rm x",
        "timeout 5 rm x",
        "timeout -s KILL 5 rm x",
        "time rm x",
        "xargs rm",
        "sudo rm x",
        "sh -c 'rm x'",
        "bash -c \"cd a && rm x\"",
        "echo $(rm x)",
        "true && { rm x; }",
        "f() { rm x; }; f",
        "eval 'rm x'",
        "eval rm x",
        // What runs cannot be known: every deny rule names it.
        "$CMD x",
        "source ./cleanup.sh",
    ] {
        assert!(denied("rm:*", spelling), "{spelling:?}: {:?}", parts(spelling));
    }
    // `$'...'` as bash decodes it: every escape that spells the name.
    for spelling in ["$'\\x72m' x", "$'\\x72\\x6d' x", "$'\\162m' x", "$'\\u0072m' x", "$'\\U00000072\\155' x", "r$'\\x6d' x"] {
        assert!(denied("rm:*", spelling), "{spelling:?}: {:?}", parts(spelling));
    }
    // A name bash makes of file names or braces: `*` runs the first file of the folder.
    for spelling in ["* x", "r? x", "r[m] x", "{rm,x}", "r{m,} x", ">rm; * x", "command r* x", "env r? x"] {
        assert!(denied("rm:*", spelling), "{spelling:?}: {:?}", parts(spelling));
    }
    // A coprocess's simple command runs as `COPROC ...` inside a substitution: not read.
    for spelling in ["coproc rm x", "echo $(coproc rm x)", "cat <(coproc ls)"] {
        assert!(parts(spelling).iter().any(|part| part.unreadable), "{spelling:?}: {:?}", parts(spelling));
    }
    assert!(!parts("coproc { ls; }").iter().any(|part| part.unreadable));
    // Quoted, the same characters are the name itself.
    assert!(!denied("rm:*", "'*' x") && !denied("rm:*", "\\? x") && !denied("rm:*", "\"r{m,}\" x"));
    assert!(!denied("rm:*", "echo rm x"));
    assert!(!denied("rm:*", "rmdir x"));
    // What cannot be read is named by every deny rule.
    assert!(denied("rm:*", "echo 'unclosed"));
    // A name that expands cannot be known: it asks, never allowed.
    assert!(!allowed("rm:*", "$CMD x"));
    assert!(!allowed("echo:*", "\"$CMD\" x"));
}

#[test]
fn an_allow_rule_matches_only_the_command_as_written() {
    // A path is not its base name to an allow rule: `./rm` is a program the workspace holds.
    assert!(!allowed("rm:*", "./rm x"));
    assert!(!allowed("rm:*", "command rm x"));
    assert!(allowed("rm:*", "\\rm x"));
    assert!(!allowed("ls:*", "ls -la | grep x"));
    assert!(allowed("ls:*", "ls -la"));
}

#[test]
fn nesting_past_the_bound_and_huge_commands_are_not_read_and_never_crash() {
    for deep in ["(".repeat(5000), "$(".repeat(2000), "{ ".repeat(3000), "echo \"$(".repeat(500), "if true; then ".repeat(2000)] {
        let parts = parts(&deep);
        assert!(parts.iter().any(|part| part.unreadable), "{}", parts.len());
    }
    let huge = "echo x; ".repeat(MAX_COMMAND_BYTES / 4);
    assert!(parts(&huge).iter().all(|part| part.unreadable));
}

#[test]
fn ansi_c_quoted_text_reads_as_bash_decodes_it() {
    for (quoted, decoded) in [
        ("rm", Some("rm")),
        ("\\x72m", Some("rm")),
        ("\\x7", Some("\u{7}")),
        ("\\xg", Some("\\xg")),
        ("\\101\\0101", Some("A\u{8}1")),
        ("\\7", Some("\u{7}")),
        ("a\\tb\\n", Some("a\tb\n")),
        ("\\'\\\"\\\\\\?", Some("'\"\\?")),
        ("\\u00e9\\U0001F600", Some("é😀")),
        ("\\q\\", Some("\\q\\")),
        ("\\u", Some("\\u")),
        ("\\cA", None),
        ("a\\0b", None),
        ("\\777", None),
        ("\\xff", None),
        ("\\ud800", None),
    ] {
        assert_eq!(ansi_c(quoted).as_deref(), decoded, "{quoted:?}");
    }
}

#[test]
fn a_command_the_parser_panics_on_is_unreadable_and_the_host_goes_on() {
    // Found by the `bash_rules` fuzz target: the parser's tokenizer unwraps past the end
    // of a here-document opened inside `${...}`.
    let parts = parts("bash -c ${x:-<<EOF\n}$true \nEOF\n");
    assert!(parts.iter().any(|part| part.unreadable), "{parts:?}");
    assert!(denied("shutdown", "bash -c ${x:-<<EOF\n}$true \nEOF\n"), "every deny rule names what cannot be read");
}

#[test]
fn prefix_exact_and_wildcard_specifiers_match_as_claude_code_s() {
    let part = |text: &str| Part { text: text.into(), runs: vec![text.into()], opaque: false, unreadable: false };
    let prefix = CommandPattern::new("npm run test:*");
    assert!(prefix.allows(&part("npm run test")));
    assert!(prefix.allows(&part("npm run test --watch")));
    assert!(!prefix.allows(&part("npm run testing")));
    assert!(!prefix.allows(&Part { opaque: true, ..part("npm run test") }));
    let exact = CommandPattern::new("git status");
    assert!(exact.allows(&part("git status")) && !exact.allows(&part("git status -s")));
    let wildcard = CommandPattern::new("git * main");
    assert!(wildcard.allows(&part("git push origin main")) && !wildcard.allows(&part("git push origin dev")));
}
