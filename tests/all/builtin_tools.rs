//! The builtin workspace tools through real scripts on a real temporary workspace: the
//! confinement claims (each tried), and the bounds that keep big or binary files out of a
//! model's context.

use exec_host_tests::Harness;
use serde_json::{Value, json};

async fn run(harness: &Harness, code: &str) -> Value {
    let outcome = harness.run(code).await;
    assert!(outcome.ok(), "{}", outcome.text());
    outcome.value().cloned().unwrap_or(Value::Null)
}

/// Runs `call` in a try/catch and returns the error message (or "ok").
async fn refusal(harness: &Harness, call: &str) -> String {
    let code = format!("try {{ await {call}; return 'ok'; }} catch (e) {{ return e.message; }}");
    run(harness, &code).await.as_str().unwrap().to_string()
}

#[tokio::test]
async fn symbolic_links_out_of_the_workspace_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let harness = Harness::new().await;
    let root = harness.dir.path();
    std::os::unix::fs::symlink(outside.path(), root.join("link-dir")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link-file")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();

    for call in [
        "tools.read_file({ path: 'link-file' })",
        "tools.read_file({ path: 'link-dir/secret.txt' })",
        "tools.read_file({ path: 'passwd' })",
        "tools.ls({ path: 'link-dir' })",
        "tools.write_file({ path: 'link-dir/planted.txt', content: 'x' })",
        "tools.edit_file({ path: 'link-file', old_string: 'top', new_string: 'no' })",
        "tools.grep({ pattern: 'secret', path: 'link-dir' })",
    ] {
        let message = refusal(&harness, call).await;
        assert!(message.contains("leads outside the workspace"), "{call}: {message}");
    }
    assert!(!outside.path().join("planted.txt").exists());
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "top secret");

    // A walk lists the links but does not follow them out.
    let found = run(&harness, "return await tools.grep({ pattern: 'secret' })").await;
    assert_eq!(found["matches"], json!([]));
    let globbed = run(&harness, "return await tools.glob({ pattern: '**/secret.txt' })").await;
    assert_eq!(globbed["matches"], json!([]));
}

#[tokio::test]
async fn symbolic_links_inside_the_workspace_work() {
    let harness = Harness::new().await;
    let root = harness.dir.path();
    std::fs::create_dir(root.join("real")).unwrap();
    std::fs::write(root.join("real/a.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("real/a.txt", root.join("alias.txt")).unwrap();
    let read = run(&harness, "return (await tools.read_file({ path: 'alias.txt' })).content").await;
    assert_eq!(read, json!("inside"));
}

#[tokio::test]
async fn absolute_and_climbing_paths_are_refused_for_every_tool() {
    let harness = Harness::new().await;
    for call in [
        "tools.ls({ path: '/' })",
        "tools.ls({ path: '..' })",
        "tools.write_file({ path: '../x.txt', content: 'x' })",
        "tools.write_file({ path: '/tmp/x.txt', content: 'x' })",
        "tools.glob({ pattern: '*', path: '../..' })",
        "tools.grep({ pattern: 'x', path: '/etc' })",
        "tools.edit_file({ path: 'a/../../x', old_string: 'a', new_string: 'b' })",
    ] {
        let message = refusal(&harness, call).await;
        assert!(message.contains("outside the workspace") || message.contains("absolute path"), "{call}: {message}");
    }
}

#[tokio::test]
async fn binary_files_are_refused_not_dumped() {
    let harness = Harness::new().await;
    std::fs::write(harness.dir.path().join("image.bin"), [0x89, b'P', b'N', b'G', 0, 0, 1, 2]).unwrap();
    let message = refusal(&harness, "tools.read_file({ path: 'image.bin' })").await;
    assert_eq!(message, "`image.bin` is a binary file (8 bytes); read_file reads text only");
    let found = run(&harness, "return await tools.grep({ pattern: 'PNG' })").await;
    assert_eq!(found, json!({"matches": [], "truncated": false, "skipped": 1}));
}

#[tokio::test]
async fn huge_files_are_read_in_bounded_windows() {
    let harness = Harness::new().await;
    let text: String = (1..=50_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(harness.dir.path().join("big.txt"), &text).unwrap();
    std::fs::write(harness.dir.path().join("wide.txt"), "w".repeat(10_000)).unwrap();
    let first = run(
        &harness,
        "const r = await tools.read_file({ path: 'big.txt' }); return [r.start_line, r.end_line, r.total_lines, r.truncated]",
    )
    .await;
    assert_eq!(first, json!([1, 2000, 50000, true]));
    let window = run(
        &harness,
        "const r = await tools.read_file({ path: 'big.txt', offset: 49999, limit: 10 }); return [r.content, r.truncated]",
    )
    .await;
    assert_eq!(window, json!(["line 49999\nline 50000", false]));
    let capped = run(&harness, "const r = await tools.read_file({ path: 'big.txt', limit: 1000000 }); return r.end_line").await;
    assert_eq!(capped, json!(10000));
    let wide = run(&harness, "return (await tools.read_file({ path: 'wide.txt' })).content").await;
    assert!(wide.as_str().unwrap().ends_with("… [line cut: 10000 characters in all]"));
    let past = refusal(&harness, "tools.read_file({ path: 'big.txt', offset: 60000 })").await;
    assert!(past.contains("has 50000 lines; offset 60000 is past its end"), "{past}");
}

#[tokio::test]
async fn grep_and_glob_are_bounded() {
    let harness = Harness::new().await;
    let text: String = (0..500).map(|i| format!("match {i}\n")).collect();
    std::fs::write(harness.dir.path().join("many.txt"), text).unwrap();
    let found = run(&harness, "const r = await tools.grep({ pattern: 'match' }); return [r.matches.length, r.truncated]").await;
    assert_eq!(found, json!([200, true]));
    for i in 0..1_100 {
        std::fs::write(harness.dir.path().join(format!("f{i:04}.md")), "").unwrap();
    }
    let globbed = run(&harness, "const r = await tools.glob({ pattern: '*.md' }); return [r.matches.length, r.truncated]").await;
    assert_eq!(globbed, json!([1000, true]));
    let listed = run(&harness, "const r = await tools.ls({}); return [r.entries.length, r.total, r.truncated]").await;
    assert_eq!(listed, json!([1000, 1101, true]));
}

#[tokio::test]
async fn bad_parameters_say_what_is_wrong() {
    let harness = Harness::new().await;
    let unknown = refusal(&harness, "tools.read_file({ file: 'a.txt' })").await;
    assert!(unknown.contains("Additional properties are not allowed ('file' was unexpected)"), "{unknown}");
    let missing = refusal(&harness, "tools.write_file({ path: 'a.txt' })").await;
    assert!(missing.contains("\"content\" is a required property"), "{missing}");
    // In JSON Schema's words, never the decoder's: each field at fault, a huge value cut.
    let negative = refusal(&harness, "tools.read_file({ path: 'a.txt', limit: -1 })").await;
    assert_eq!(negative, "read_file: `limit`: -1 is less than the minimum of 0");
    let several = refusal(&harness, "tools.read_file({ path: 5, offset: 'x'.repeat(100000), limit: -1, a: 1 })").await;
    assert!(several.starts_with("read_file: "), "{several}");
    assert!(several.contains("`path`: 5 is not of type \"string\"") && several.contains("more"), "{several}");
    assert!(several.len() < 2_000 && !several.contains("usize") && !several.contains("u64"), "{several}");
    let absent = refusal(&harness, "tools.read_file({ path: 'absent.txt' })").await;
    assert_eq!(absent, "read_file: `absent.txt` does not exist in the workspace", "a failed call names its tool");
    let regex = refusal(&harness, "tools.grep({ pattern: '(' })").await;
    assert!(regex.contains("not a valid regular expression"), "{regex}");
    let glob = refusal(&harness, "tools.glob({ pattern: '[' })").await;
    assert!(glob.contains("is not valid"), "{glob}");
    let absent = refusal(&harness, "tools.read_file({ path: 'nope.txt' })").await;
    assert_eq!(absent, "read_file: `nope.txt` does not exist in the workspace");
}

#[tokio::test]
async fn edit_file_replaces_exactly_what_it_is_told() {
    let harness = Harness::new().await;
    std::fs::write(harness.dir.path().join("a.txt"), "one two one").unwrap();
    let all =
        run(&harness, "return await tools.edit_file({ path: 'a.txt', old_string: 'one', new_string: '1', replace_all: true })")
            .await;
    assert_eq!(all, json!({"path": "a.txt", "replacements": 2}));
    assert_eq!(std::fs::read_to_string(harness.dir.path().join("a.txt")).unwrap(), "1 two 1");
    let missing = refusal(&harness, "tools.edit_file({ path: 'a.txt', old_string: 'zzz', new_string: 'y' })").await;
    assert_eq!(missing, "edit_file: old_string was not found in `a.txt`");
}

#[tokio::test]
async fn glob_and_grep_leave_out_what_git_ignores_unless_asked_for_all() {
    let harness = Harness::new().await;
    let root = harness.dir.path();
    for (path, text) in [
        (".gitignore", "target/\n*.log\n!keep.log\n"),
        ("src/main.rs", "fn main() { needle() }\n"),
        ("src/.gitignore", "generated.rs\n"),
        ("src/generated.rs", "// needle: generated\n"),
        ("target/debug/out.rs", "// NEEDLE in a build folder\n"),
        ("debug.log", "needle in a log\n"),
        ("keep.log", "needle kept\n"),
        (".hidden/notes.rs", "// needle hidden\n"),
        (".env.rs", "// needle dotfile\n"),
    ] {
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), text).unwrap();
    }
    let globbed = run(&harness, "return (await tools.glob({ pattern: '**/*.{rs,log}' })).matches").await;
    assert_eq!(globbed, json!(["keep.log", "src/main.rs"]));
    let everything = run(&harness, "return (await tools.glob({ pattern: '**/*.{rs,log}', all: true })).matches").await;
    assert_eq!(
        everything,
        json!([".env.rs", "debug.log", "keep.log", ".hidden/notes.rs", "src/generated.rs", "src/main.rs", "target/debug/out.rs"])
    );
    // A folder given as the path is searched even when it is itself ignored or hidden.
    let inside = run(&harness, "return (await tools.glob({ pattern: '*', path: '.hidden' })).matches").await;
    assert_eq!(inside, json!([".hidden/notes.rs"]));

    let paths = "(r) => r.matches.map((m) => m.path)";
    let found = run(&harness, &format!("return ({paths})(await tools.grep({{ pattern: 'needle' }}))")).await;
    assert_eq!(found, json!(["keep.log", "src/main.rs"]));
    let any_case =
        run(&harness, &format!("return ({paths})(await tools.grep({{ pattern: 'needle', case_insensitive: true, all: true }}))"))
            .await;
    assert_eq!(
        any_case,
        json!([".env.rs", "debug.log", "keep.log", ".hidden/notes.rs", "src/generated.rs", "src/main.rs", "target/debug/out.rs"])
    );
}

#[tokio::test]
async fn grep_gives_the_lines_around_a_match_when_asked() {
    let harness = Harness::new().await;
    let text: String = (1..=12).map(|n| format!("line {n}{}\n", if n == 2 || n == 4 { " hit" } else { "" })).collect();
    std::fs::write(harness.dir.path().join("a.txt"), text).unwrap();
    let found = run(&harness, "return (await tools.grep({ pattern: 'hit', context: 2 })).matches").await;
    assert_eq!(
        found,
        json!([
            {"path": "a.txt", "line": 2, "text": "line 2 hit", "before": ["line 1"], "after": ["line 3", "line 4 hit"]},
            {"path": "a.txt", "line": 4, "text": "line 4 hit", "before": ["line 2 hit", "line 3"], "after": ["line 5", "line 6"]}
        ])
    );
    let plain = run(&harness, "return (await tools.grep({ pattern: 'line 12' })).matches").await;
    assert_eq!(plain, json!([{"path": "a.txt", "line": 12, "text": "line 12"}]), "no context keys unless asked");
    let too_much = refusal(&harness, "tools.grep({ pattern: 'hit', context: 11 })").await;
    assert_eq!(too_much, "grep: `context`: 11 is greater than the maximum of 10");
}

#[tokio::test]
async fn hostile_gitignore_files_are_passed_over() {
    let harness = Harness::new().await;
    let root = harness.dir.path();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    std::fs::create_dir(root.join("fifo")).unwrap();
    std::fs::write(root.join("fifo/b.txt"), "x\n").unwrap();
    // A FIFO where a .gitignore should be is never waited on; a huge one is read only so far.
    let fifo = std::ffi::CString::new(root.join("fifo/.gitignore").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let mut huge = "*.txt\n".to_string();
    huge += &"#".repeat(300 * 1024);
    huge += "\nc.md\n";
    std::fs::create_dir(root.join("big")).unwrap();
    std::fs::write(root.join("big/.gitignore"), &huge).unwrap();
    std::fs::write(root.join("big/a.txt"), "x\n").unwrap();
    std::fs::write(root.join("big/c.md"), "x\n").unwrap();
    let found = run(&harness, "return (await tools.glob({ pattern: '**/*.*' })).matches").await;
    assert_eq!(found, json!(["a.txt", "big/c.md", "fifo/b.txt"]));
}
