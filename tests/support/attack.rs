//! What the attack suites (`tests/attacks/*.json`) share: loading cases, making the entries
//! a case's `setup` asks for (links, FIFOs, device nodes, sparse files, sockets), flipping
//! a path while a case runs, and a snapshot to tell whether a folder changed.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Text that only a broken host prints or returns.
pub const BROKEN: [&str; 4] = ["panicked", "RUST_BACKTRACE", "the engine stopped", "unreachable"];

/// The cases of `tests/attacks/<file>`.
pub fn cases(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("attacks").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let suite: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    suite["attacks"].as_array().expect("an `attacks` array").clone()
}

/// A string field of a case.
pub fn field<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key].as_str().unwrap_or_else(|| panic!("a case without `{key}`: {case}"))
}

/// The text a case gives (a script, an argument, standard input, a file's content): a JSON
/// string, or an object that generates it, so a suite holds a payload of megabytes in one
/// line: `{"repeat": TEXT, "times": N}` (TEXT written N times over), `{"join": [TEXT, ...]}`
/// (one after another), `{"numbered": TEXT, "count": N, "separator": TEXT}` (TEXT once for
/// each n from 0 to N - 1, its `{n}` filled in by [`numbered`], the separator between).
/// Every string in it passes through `place`.
pub fn text(value: &Value, place: &dyn Fn(&str) -> String) -> Result<String, String> {
    let Value::Object(generator) = value else {
        return value.as_str().map(place).ok_or_else(|| format!("not a text: {value}"));
    };
    let count = |key: &str| {
        generator
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("`{key}` is not a count in {value}"))
    };
    if let Some(unit) = generator.get("repeat") {
        Ok(text(unit, place)?.repeat(count("times")?))
    } else if let Some(parts) = generator.get("join") {
        parts.as_array().ok_or_else(|| format!("`join` takes a list: {value}"))?.iter().map(|part| text(part, place)).collect()
    } else if let Some(template) = generator.get("numbered") {
        let template = text(template, place)?;
        let separator = generator.get("separator").map(|separator| text(separator, place)).transpose()?.unwrap_or_default();
        Ok((0..count("count")?).map(|n| numbered(&template, n)).collect::<Vec<_>>().join(&separator))
    } else {
        Err(format!("not a text generator (`repeat`, `join`, `numbered`): {value}"))
    }
}

/// `template` for the number `n`: `{n}` is replaced by it, `{n:0W}` by it zero-padded to W
/// digits, `{n%M}` by its remainder modulo M; any other brace stays as written.
pub fn numbered(template: &str, n: usize) -> String {
    let mut filled = String::with_capacity(template.len() + 8);
    let mut rest = template;
    while let Some(at) = rest.find("{n") {
        filled.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        match tail.split_once('}').and_then(|(form, after)| Some((written_as(form, n)?, after))) {
            Some((number, after)) => {
                filled.push_str(&number);
                rest = after;
            }
            None => {
                filled.push_str("{n");
                rest = tail;
            }
        }
    }
    filled.push_str(rest);
    filled
}

/// `n` as the form after `{n` asks: `` as it is, `:0W` zero-padded to W digits, `%M` modulo
/// M; `None` for any other form.
fn written_as(form: &str, n: usize) -> Option<String> {
    if form.is_empty() {
        return Some(n.to_string());
    }
    if let Some(width) = form.strip_prefix(":0") {
        let width: usize = width.parse().ok()?;
        return Some(format!("{n:0width$}"));
    }
    let modulus: usize = form.strip_prefix('%')?.parse().ok()?;
    (modulus > 0).then(|| (n % modulus).to_string())
}

/// Makes one `setup` entry under `dir`: `["file", path, text]` (`text` as [`text`] reads
/// it), `["numbered", path, count, text]` (`count` files, `path` filled by [`numbered`] for
/// each), `["dir", path]`, `["link", path, target]`, `["hardlink", path, target]`,
/// `["fifo", path]`, `["chardev", path, major, minor]`, `["sparse", path, bytes]`,
/// `["socket", path]`, `["mode", path, mode]` (permissions set, `mode` in decimal).
/// `place` substitutes a case's `$NAME` variables (`$OUTSIDE`, `$WS`, `$FIXTURE`); a socket
/// is kept in `sockets` while it is bound.
pub fn make(dir: &Path, entry: &Value, place: &dyn Fn(&str) -> String, sockets: &mut Vec<UnixListener>) -> Result<(), String> {
    let part = |i: usize| entry[i].as_str().map(place).unwrap_or_default();
    let kind = entry[0].as_str().unwrap_or_default();
    if kind == "numbered" {
        let count = entry[2].as_u64().ok_or_else(|| format!("`numbered` without a count: {entry}"))?;
        let content = text(&entry[3], place)?;
        let path = part(1);
        for n in 0..count as usize {
            let at = dir.join(numbered(&path, n));
            let parent = at.parent().unwrap_or(dir);
            std::fs::create_dir_all(parent)
                .and_then(|()| std::fs::write(&at, &content))
                .map_err(|e| format!("setting up {}: {e}", at.display()))?;
        }
        return Ok(());
    }
    let at = dir.join(part(1));
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let made = match kind {
        "file" => std::fs::write(&at, text(&entry[2], place)?),
        "mode" => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(entry[2].as_u64().unwrap_or(0o755) as u32))
        }
        "dir" => std::fs::create_dir_all(&at),
        "link" => std::os::unix::fs::symlink(part(2), &at),
        "hardlink" => std::fs::hard_link(part(2), &at),
        "fifo" => node(&at, libc::S_IFIFO | 0o644, 0),
        "chardev" => {
            let number = |i: usize| entry[i].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
            node(&at, libc::S_IFCHR | 0o666, libc::makedev(number(2), number(3)))
        }
        "sparse" => std::fs::File::create(&at).and_then(|file| file.set_len(entry[2].as_u64().unwrap_or(1 << 30))),
        "socket" => UnixListener::bind(&at).map(|socket| sockets.push(socket)),
        other => return Err(format!("unknown setup entry `{other}`")),
    };
    made.map_err(|e| format!("setting up {entry}: {e}"))
}

/// A FIFO or a device node (device nodes need root, which the suites' machines have).
fn node(at: &Path, mode: libc::mode_t, device: libc::dev_t) -> std::io::Result<()> {
    let path = CString::new(at.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::mknod(path.as_ptr(), mode, device) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Puts `at` in `state` (`"dir"`, `"fifo"` or `"link:TARGET"`); a link replaces a link
/// atomically.
pub fn flip(at: &Path, state: &str) {
    let spare = at.with_extension("flip");
    let _ = std::fs::remove_file(&spare);
    match state.strip_prefix("link:") {
        Some(target) => {
            if std::os::unix::fs::symlink(target, &spare).is_ok() && std::fs::rename(&spare, at).is_err() {
                let _ = std::fs::remove_dir_all(at);
                let _ = std::fs::rename(&spare, at);
            }
        }
        None => {
            let _ = std::fs::remove_file(at);
            let _ = if state == "dir" { std::fs::create_dir(at) } else { node(at, libc::S_IFIFO | 0o644, 0) };
        }
    }
}

/// Every entry under `dir` (links not followed) with its kind and, for small files, text.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut seen = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&next) else { continue };
        let what = if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&next) {
                pending.extend(entries.flatten().map(|e| e.path()));
            }
            "dir".to_string()
        } else if meta.is_symlink() {
            format!("link to {:?}", std::fs::read_link(&next).unwrap_or_default())
        } else if meta.is_file() && meta.len() < 1 << 20 {
            format!("file {:?}", String::from_utf8_lossy(&std::fs::read(&next).unwrap_or_default()))
        } else {
            format!("{:?} of {} bytes", meta.file_type(), meta.len())
        };
        seen.insert(next.strip_prefix(dir).unwrap_or(&next).to_path_buf(), what);
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_fills_in_n_and_leaves_other_braces() {
        assert_eq!(numbered("d{n%30}/f{n}.txt", 2998), "d28/f2998.txt");
        assert_eq!(numbered("many/f{n:05}", 7), "many/f00007");
        assert_eq!(numbered("{\"s{n}\": {}} {x} {n:x} {n%0} {n", 3), "{\"s3\": {}} {x} {n:x} {n%0} {n");
    }

    #[test]
    fn generators_compose() {
        let place = |text: &str| text.replace("$WS", "/ws");
        let value = serde_json::json!({"join": ["[", {"numbered": "\"$WS/{n}\"", "count": 3, "separator": ","}, "]", {"repeat": "!", "times": 2}]});
        assert_eq!(text(&value, &place).unwrap(), "[\"/ws/0\",\"/ws/1\",\"/ws/2\"]!!");
        assert!(text(&serde_json::json!({"repeat": "x"}), &place).unwrap_err().contains("`times`"));
        assert!(text(&serde_json::json!({"twice": "x"}), &place).is_err());
        assert!(text(&serde_json::json!(1), &place).is_err());
    }
}
