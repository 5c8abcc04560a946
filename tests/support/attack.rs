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

/// Makes one `setup` entry under `dir`: `["file", path, text]`, `["dir", path]`,
/// `["link", path, target]`, `["hardlink", path, target]`, `["fifo", path]`,
/// `["chardev", path, major, minor]`, `["sparse", path, bytes]`, `["socket", path]`,
/// `["repeat", path, text, times]` (the text written `times` over), `["pieces", path,
/// [[text, times], ...]]` (each text written its times over, one after another),
/// `["mode", path, mode]` (permissions set, `mode` in decimal).
/// `place` substitutes a case's `$NAME` variables (`$OUTSIDE`, `$WS`, `$FIXTURE`); a socket
/// is kept in `sockets` while it is bound.
pub fn make(dir: &Path, entry: &Value, place: &dyn Fn(&str) -> String, sockets: &mut Vec<UnixListener>) -> Result<(), String> {
    let part = |i: usize| entry[i].as_str().map(place).unwrap_or_default();
    let at = dir.join(part(1));
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let made = match entry[0].as_str().unwrap_or_default() {
        "file" => std::fs::write(&at, part(2)),
        "repeat" => std::fs::write(&at, part(2).repeat(entry[3].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(1))),
        "pieces" => {
            let pieces = entry[2].as_array().map(Vec::as_slice).unwrap_or_default();
            let text: String = pieces
                .iter()
                .map(|piece| place(piece[0].as_str().unwrap_or_default()).repeat(piece[1].as_u64().unwrap_or(1) as usize))
                .collect();
            std::fs::write(&at, text)
        }
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
