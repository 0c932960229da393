//! Certificate fingerprints: how a pinned peer is named, as users write and read them.

use crate::{Error, Result};
use sha2::{Digest, Sha256};

/// A certificate's SHA-256 fingerprint: 64 lowercase hex digits.
pub fn fingerprint(cert: &[u8]) -> String {
    Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses a fingerprint as a user may write it: hex in either case, with or without
/// colons and a `sha256:` prefix.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    let t = t
        .strip_prefix("sha256:")
        .or_else(|| t.strip_prefix("SHA256:"))
        .unwrap_or(t);
    let hex: String = t.chars().filter(|&c| c != ':').collect();
    let bad = || {
        Error::Usage(format!(
            "'{text}' is not a SHA-256 fingerprint (64 hex digits, as `venn keygen` prints)"
        ))
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

pub(super) fn fingerprint_hex(fp: &[u8; 32]) -> String {
    fp.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_as_users_write_them() {
        let fp = "ab".repeat(32);
        let want = [0xab; 32];
        assert_eq!(parse_fingerprint(&fp).unwrap(), want);
        assert_eq!(
            parse_fingerprint(&format!("SHA256:{}", fp.to_uppercase())).unwrap(),
            want
        );
        let colons: Vec<&str> = (0..32).map(|_| "AB").collect();
        assert_eq!(parse_fingerprint(&colons.join(":")).unwrap(), want);
        assert!(parse_fingerprint(&fp[..62]).is_err());
        assert!(parse_fingerprint(&"zz".repeat(32)).is_err());
    }
}
