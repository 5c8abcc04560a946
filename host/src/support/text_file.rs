//! The files that steer the host (settings, MCP configurations, a script named on the
//! command line, a conformance case, a guest component) are read here, and only here:
//! regular files only, opened without ever blocking on a FIFO or a device, and never more
//! than a named bound.

use std::io::{self, Read};
use std::path::Path;

/// Bytes read at most of a settings or MCP configuration file.
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Bytes read at most of a script file.
pub const MAX_SCRIPT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a file could not be read, as the end of a sentence that names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("does not exist")]
    Missing,
    #[error("is a directory, not a file")]
    Directory,
    #[error("is not a regular file (a FIFO, device or socket)")]
    NotRegular,
    #[error("is a link, which is not followed")]
    Link,
    #[error("is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("is not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("cannot be read")]
    Io(#[source] io::Error),
}

/// Reads the regular file `path` as UTF-8 text of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    utf8(read_bytes(path, limit)?)
}

/// Reads the regular file `path`, at most `limit` bytes; a larger one is refused unread.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opens at once instead of waiting for a writer; it is refused just below.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(opening_error)?;
    read_opened(file, limit)
}

/// Reads the regular file `name` of `folder` as UTF-8 text of at most `limit` bytes, never
/// through a link: one at `name` is [`ReadError::Link`].
pub fn read_text_in(folder: &cap_std::fs::Dir, name: &str, limit: u64) -> Result<String, ReadError> {
    use cap_std::fs::OpenOptionsExt;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW);
    let file = folder.open_with(name, &options).map_err(opening_error)?;
    utf8(read_opened(file.into_std(), limit)?)
}

fn opening_error(error: io::Error) -> ReadError {
    match (error.kind(), error.raw_os_error()) {
        (io::ErrorKind::NotFound, _) => ReadError::Missing,
        // Only special files refuse to open this way: a socket, a device with no driver.
        (_, Some(libc::ENXIO | libc::ENODEV)) => ReadError::NotRegular,
        (_, Some(libc::ELOOP)) => ReadError::Link,
        _ => ReadError::Io(error),
    }
}

/// The bytes of an opened file, when it is a regular one within `limit`.
fn read_opened(file: std::fs::File, limit: u64) -> Result<Vec<u8>, ReadError> {
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if metadata.is_dir() {
        return Err(ReadError::Directory);
    }
    if !metadata.is_file() {
        return Err(ReadError::NotRegular);
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    bounded_bytes(file, limit)
}

/// Reads `reader` to its end as UTF-8 text of at most `limit` bytes (standard input, say).
pub fn bounded_text(reader: impl Read, limit: u64) -> Result<String, ReadError> {
    utf8(bounded_bytes(reader, limit)?)
}

/// Reads `reader` to its end, at most `limit` bytes (a file may grow while it is read).
fn bounded_bytes(reader: impl Read, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

fn utf8(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 { offset: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bounded_regular_utf8_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_text(&file, 10).unwrap(), "{}");
        assert!(matches!(read_text(&file, 1), Err(ReadError::TooLarge { limit: 1 })));
        assert!(matches!(read_text(&dir.path().join("none"), 10), Err(ReadError::Missing)));
        assert!(matches!(read_text(dir.path(), 10), Err(ReadError::Directory)));
        assert!(matches!(read_text(Path::new("/dev/zero"), 10), Err(ReadError::NotRegular)));
        let fifo = dir.path().join("pipe");
        let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_text(&fifo, 10), Err(ReadError::NotRegular)), "no writer, and no wait");
        std::fs::write(&file, b"ok\xff").unwrap();
        assert!(matches!(read_text(&file, 10), Err(ReadError::NotUtf8 { offset: 2 })));
    }

    #[test]
    fn a_file_read_in_a_folder_is_never_read_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a.json"), dir.path().join("link.json")).unwrap();
        let folder = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        assert_eq!(read_text_in(&folder, "a.json", 10).unwrap(), "{}");
        assert!(matches!(read_text_in(&folder, "link.json", 10), Err(ReadError::Link)));
        assert!(matches!(read_text_in(&folder, "none", 10), Err(ReadError::Missing)));
        assert!(matches!(read_text_in(&folder, "a.json", 1), Err(ReadError::TooLarge { limit: 1 })));
    }
}
