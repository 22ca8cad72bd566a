//! The one cache key type for every compiled artifact (CUBIN, PTX, emulator library).
//!
//! Each part is hashed with its name and length, so no two different sets of parts can
//! produce the same byte stream.

use sha2::{Digest, Sha256};

/// A builder of cache keys: add named parts, then take the hex digest.
#[derive(Clone)]
pub struct CacheKey {
    hasher: Sha256,
}

impl CacheKey {
    /// Starts a key for one kind of artifact (`"cubin"`, `"emulator"`, ...).
    pub fn new(artifact: &str) -> Self {
        let mut key = CacheKey {
            hasher: Sha256::new(),
        };
        key.add("artifact", artifact.as_bytes());
        key
    }

    /// Adds one named part (source text, an option list, a header's content, a version).
    pub fn add(&mut self, name: &str, value: &[u8]) -> &mut Self {
        self.hasher.update((name.len() as u64).to_le_bytes());
        self.hasher.update(name.as_bytes());
        self.hasher.update((value.len() as u64).to_le_bytes());
        self.hasher.update(value);
        self
    }

    /// Adds a list of strings as one part (order matters).
    pub fn add_list(&mut self, name: &str, values: &[String]) -> &mut Self {
        self.hasher.update((values.len() as u64).to_le_bytes());
        for value in values {
            self.add(name, value.as_bytes());
        }
        self
    }

    /// The 64-hex-digit SHA-256 digest.
    pub fn hex(&self) -> String {
        hex_digest(&self.hasher.clone().finalize())
    }
}

/// Lowercase hex of a byte slice.
pub fn hex_digest(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// SHA-256 of a byte slice, as hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_digest(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_delimited() {
        let mut a = CacheKey::new("cubin");
        a.add("source", b"ab").add("options", b"c");
        let mut b = CacheKey::new("cubin");
        b.add("source", b"a").add("options", b"bc");
        assert_ne!(a.hex(), b.hex());
        assert_eq!(a.hex().len(), 64);
    }

    #[test]
    fn sha256_matches_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
