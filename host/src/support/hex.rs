//! Bytes as lowercase hex digits, and random ids made of them: the one spelling of digests,
//! handles and file names the host writes.

/// `bytes` as lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// `bytes` random bytes from the operating system, as hex; why not when it fails.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut random = vec![0u8; bytes];
    fill_random(&mut random)?;
    Ok(hex(&random))
}

/// Fills `bytes` from the operating system's randomness: the one source of the host's
/// secrets and unguessable names.
pub fn fill_random(bytes: &mut [u8]) -> std::io::Result<()> {
    getrandom::fill(bytes).map_err(|e| match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::other(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_read_as_two_lowercase_digits_each() {
        assert_eq!(super::hex(&[0, 0xab, 0x0f]), "00ab0f");
        let id = super::random_hex(16).unwrap();
        assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
    }
}
