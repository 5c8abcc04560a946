//! The README and the documents of `docs/` (the user guide, `docs/guide/`, an mdBook, among
//! them) link to each other and to the repository's files. Every relative link must lead to a
//! file or folder that exists, every `#fragment` into a Markdown file to one of its headings,
//! every chapter of the guide must be in its `SUMMARY.md` and every `{{#include}}` must find
//! its file. And the script of the README's tour prints what the README says it prints.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

#[path = "common/mod.rs"]
mod common;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The README and every Markdown file under `docs/`, except the built book.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.join("README.md")];
    markdown_under(&root.join("docs"), &root.join("docs/book"), &mut found);
    found
}

fn markdown_under(folder: &Path, skip: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path == skip {
            continue;
        }
        if path.is_dir() {
            markdown_under(&path, skip, found);
        } else if path.extension().is_some_and(|extension| extension == "md") {
            found.push(path);
        }
    }
}

/// The text with its fenced code blocks blanked out (their line breaks kept, so that line
/// numbers stay those of the file).
fn without_fences(text: &str) -> String {
    let mut unfenced = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |c| trimmed.chars().take_while(|d| *d == c).count());
        match fence {
            Some((c, length)) => {
                if marker == Some(c) && run >= length && trimmed[run..].trim().is_empty() {
                    fence = None;
                }
                unfenced.push_str(&blank(line));
            }
            None if run >= 3 => {
                fence = Some((marker.unwrap(), run));
                unfenced.push_str(&blank(line));
            }
            None => unfenced.push_str(line),
        }
    }
    unfenced
}

/// The text with its fenced code blocks and code spans blanked out (their line breaks kept,
/// so that line numbers stay those of the file).
fn prose(text: &str) -> String {
    let unfenced = without_fences(text);
    // Code spans, paragraph by paragraph: they never cross a blank line.
    let mut out = String::with_capacity(unfenced.len());
    let mut paragraph = String::new();
    for line in unfenced.split_inclusive('\n') {
        paragraph.push_str(line);
        if line.trim().is_empty() {
            out.push_str(&without_code_spans(&paragraph));
            paragraph.clear();
        }
    }
    out.push_str(&without_code_spans(&paragraph));
    out
}

/// A paragraph with its code spans (a run of n backticks up to the next run of exactly n)
/// blanked out; a run that no other closes stays as it is.
fn without_code_spans(paragraph: &str) -> String {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = String::with_capacity(paragraph.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let open = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + open;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let run = chars[j..].iter().take_while(|c| **c == '`').count();
                if run == open {
                    close = Some(j + run);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.extend(chars[i..end].iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
                i = end;
            }
            None => {
                out.extend(&chars[i..i + open]);
                i += open;
            }
        }
    }
    out
}

fn blank(line: &str) -> String {
    if line.ends_with('\n') { "\n".to_string() } else { String::new() }
}

/// The targets of the inline links and images (`[text](target)`) and of the reference
/// definitions (`[label]: target`) of a text, each with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in prose(text).lines().enumerate() {
        let number = index + 1;
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(target) = inline_target(rest) {
                found.push((number, target));
            }
        }
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() <= 3
            && trimmed.starts_with('[')
            && let Some(close) = trimmed.find("]:")
            && !trimmed[1..close].contains('[')
            && let Some(target) = trimmed[close + 2..].split_whitespace().next()
        {
            found.push((number, target.trim_start_matches('<').trim_end_matches('>').to_string()));
        }
    }
    found
}

/// What follows `](`: `<target>`, or a target up to a space or the `)` that closes it.
fn inline_target(rest: &str) -> Option<String> {
    if let Some(angled) = rest.strip_prefix('<') {
        return angled.find('>').map(|end| angled[..end].to_string());
    }
    let mut depth = 0;
    for (at, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(rest[..at].to_string()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(rest[..at].to_string()),
            _ => {}
        }
    }
    None
}

/// A heading's anchor as GitHub and mdBook make it: the text (a link's text, without its
/// target) lowercased, what is not alphanumeric, a space, `-` or `_` dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](target) reads as its text.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| inline_target(&after[close + 2..]).map(|target| (close, target))) {
            Some((close, target)) => {
                text.push_str(&after[..close]);
                rest = &after[close + 2 + target.len()..];
                rest = rest.strip_prefix(')').unwrap_or(rest);
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text: its ATX headings' slugs (a repeated one numbered `-1`,
/// `-2`, ... after the first), explicit `{#id}` attributes, and HTML `id`/`name` attributes.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    // Headings are found outside fenced code only; code spans inside them still count.
    let unfenced = without_fences(text);
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for line in unfenced.lines() {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && (trimmed.len() == level || trimmed[level..].starts_with(' ')) {
            let mut heading = trimmed[level..].trim();
            heading = heading.trim_end_matches('#').trim_end();
            if let Some(open) = heading.rfind("{#")
                && heading.ends_with('}')
            {
                found.insert(heading[open + 2..heading.len() - 1].to_string());
                continue;
            }
            let base = slug(heading);
            let count = seen.entry(base.clone()).or_insert(0);
            found.insert(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
            *count += 1;
        }
        for attribute in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(attribute) {
                rest = &rest[at + attribute.len()..];
                if let Some(end) = rest.find('"') {
                    found.insert(rest[..end].to_string());
                }
            }
        }
    }
    found
}

/// A path with its `.` and `..` parts resolved as text.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Every broken link of the given files, as `file:line: link: why`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, target) in links(&text) {
            let has_scheme = target.split_once(':').is_some_and(|(scheme, _)| {
                !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
            });
            if has_scheme || target.is_empty() {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let where_ = format!("{}:{line}: ({target})", shown(root, file));
            if path.starts_with('/') {
                broken.push(format!("{where_}: an absolute path, which works nowhere but one site: make it relative"));
                continue;
            }
            let resolved = if path.is_empty() { file.clone() } else { normal(&file.parent().unwrap().join(path)) };
            if !resolved.starts_with(root) {
                broken.push(format!("{where_}: leads out of the repository"));
                continue;
            }
            if !resolved.exists() {
                broken.push(format!("{where_}: {} does not exist", shown(root, &resolved)));
                continue;
            }
            if let Some(fragment) = fragment
                && resolved.extension().is_some_and(|extension| extension == "md")
            {
                let target_text = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&target_text).contains(fragment) {
                    broken.push(format!("{where_}: {} has no heading whose anchor is #{fragment}", shown(root, &resolved)));
                }
            }
        }
    }
    broken
}

/// What is wrong with a guide: a chapter on disk that `SUMMARY.md` does not list, an entry
/// whose file is missing, an `{{#include}}` whose file is missing.
fn guide_problems(root: &Path, guide: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let summary_path = guide.join("SUMMARY.md");
    let Ok(summary) = std::fs::read_to_string(&summary_path) else {
        return vec![format!("{} is missing", shown(root, &summary_path))];
    };
    let mut listed = BTreeSet::new();
    for (line, target) in links(&summary) {
        let path = normal(&guide.join(target.split('#').next().unwrap()));
        if !path.is_file() {
            problems.push(format!("{}:{line}: the chapter {target} does not exist", shown(root, &summary_path)));
        }
        listed.insert(path);
    }
    let mut chapters = Vec::new();
    markdown_under(guide, &guide.join("book"), &mut chapters);
    for chapter in &chapters {
        if *chapter != summary_path && !listed.contains(chapter) {
            problems.push(format!("{}: not listed in {}", shown(root, chapter), shown(root, &summary_path)));
        }
        // mdBook expands {{#include}} everywhere, in code blocks too.
        let text = std::fs::read_to_string(chapter).unwrap();
        for (index, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("{{#") {
                rest = &rest[at + 3..];
                let Some(end) = rest.find("}}") else { break };
                let directive = rest[..end].trim();
                rest = &rest[end..];
                let mut words = directive.split_whitespace();
                let (Some(kind), Some(argument)) = (words.next(), words.next()) else { continue };
                if !matches!(kind, "include" | "rustdoc_include" | "playground") {
                    continue;
                }
                let file = argument.split(':').next().unwrap();
                let path = normal(&chapter.parent().unwrap().join(file));
                if !path.is_file() {
                    problems.push(format!(
                        "{}:{}: {{{{#{kind} {argument}}}}}: {} does not exist",
                        shown(root, chapter),
                        index + 1,
                        shown(root, &path)
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_leads_somewhere() {
    let root = repository();
    let files = documents(&root);
    assert!(files.iter().any(|file| file.ends_with("docs/guide/SUMMARY.md")), "the guide is found: {files:?}");
    let broken = broken_links(&root, &files);
    assert!(broken.is_empty(), "{} broken links:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn the_guide_s_summary_lists_exactly_its_chapters() {
    let root = repository();
    let problems = guide_problems(&root, &root.join("docs/guide"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let book = std::fs::read_to_string(root.join("docs/book.toml")).unwrap();
    assert!(book.contains("src = \"guide\"") && book.contains("create-missing = false"), "{book}");
}

#[test]
fn the_checks_find_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let guide = root.join("docs/guide");
    std::fs::create_dir_all(&guide).unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Top\n\n## `serve`: exec-host as an MCP server\n\nSee [a](docs/guide/a.md), [b](docs/guide/a.md#the-heading),\n\
         [c](#serve-exec-host-as-an-mcp-server), [d](https://example.com/x.md), `[e](missing.md)`.\n\n\
         ```md\n[f](missing.md)\n```\n\n[g](docs/guide/missing.md) and [h](docs/guide/a.md#no-such-heading)\n\n\
         [ref]: docs/gone/\n",
    )
    .unwrap();
    std::fs::write(
        guide.join("a.md"),
        "# A\n\n## The heading\n\n## The heading\n\n[i](a.md#the-heading-1) {{#include ../absent.md}}\n",
    )
    .unwrap();
    std::fs::write(guide.join("stray.md"), "# Stray\n").unwrap();
    std::fs::write(guide.join("SUMMARY.md"), "# Summary\n\n- [A](a.md)\n- [Gone](gone.md)\n").unwrap();

    let broken = broken_links(root, &documents(root));
    let lines: Vec<&str> = broken.iter().map(|problem| problem.split(": ").next().unwrap()).collect();
    assert_eq!(lines, ["README.md:12", "README.md:12", "README.md:14", "docs/guide/SUMMARY.md:4"], "{broken:#?}");
    assert!(broken[0].contains("(docs/guide/missing.md)") && broken[1].contains("#no-such-heading"), "{broken:#?}");

    let problems = guide_problems(root, &guide);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems.iter().any(|problem| problem.contains("gone.md does not exist")), "{problems:#?}");
    assert!(problems.iter().any(|problem| problem.contains("stray.md: not listed")), "{problems:#?}");
    assert!(problems.iter().any(|problem| problem.contains("docs/absent.md does not exist")), "{problems:#?}");
}

#[test]
fn the_readme_s_tour_script_prints_what_the_readme_shows() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("### A script with `run`").expect("the tour's `run` section")..];
    let block = |fence: &str| section.split(fence).nth(1).and_then(|rest| rest.split("\n```").next()).unwrap().to_string();
    let (command, shown) = (block("```sh\n"), block("```json\n"));
    assert!(command.starts_with("exec-host run "), "{command}");

    // As a user runs it, from the repository's root, with `exec-host` on the PATH.
    let home = tempfile::tempdir().unwrap();
    let binaries = Path::new(env!("CARGO_BIN_EXE_exec-host")).parent().unwrap();
    let path = format!("{}:{}", binaries.display(), std::env::var("PATH").unwrap_or_default());
    let output = std::process::Command::new("sh")
        .args(["-c", &command])
        .current_dir(&root)
        .env("PATH", path)
        .env("EXEC_HOST_CACHE_DIR", common::shared_cache())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim_end(), shown, "{stderr}");
    let summary: Vec<&str> = stderr.lines().collect();
    assert_eq!(summary, ["... 4 tool calls", "read_file", "read_file"], "the README describes the summary");
    assert!(section.contains("`... 4 tool calls`, then the last two tools called"), "{section}");
}
