//! Hex spelling of digests, and the SHA-256 every hash in the out dir and the release uses.

use sha2::{Digest, Sha256};

/// Lower-case hex of `bytes`. (A table, not `write!`: every cache line's checksum is spelled
/// here when it is written and again when it is read back.)
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut spelled = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        spelled.push(char::from(DIGITS[usize::from(b >> 4)]));
        spelled.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    spelled
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_nothing_is_the_known_digest() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        let every_byte: Vec<u8> = (0..=255).collect();
        let by_format: String = every_byte.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&every_byte), by_format);
    }
}
