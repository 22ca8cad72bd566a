//! The one disk-cache format of every compiled artefact (CUBIN and PTX images, emulation
//! libraries, fused CPU loops): one file per key, `<dir>/<key>.cnk`, written atomically
//! ([`write_atomic`]: a unique temporary file in the same folder, flushed, renamed over the final
//! name) and verified when read ([`read_verified`]). A file that is truncated, corrupt, of
//! another format version (an entry of an older cunumpy included) or refused by its reader is a
//! miss and is removed; it is never returned. Several processes may write one key at once: each
//! rename replaces the whole file, so readers see one complete entry or none. Where the caches
//! live is `crate::config` (one root, one folder per kind).
//!
//! File format, version 1 (integers little-endian):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `b"CUNPYKRN"` |
//! | 8 | 4 | format version (`1`) |
//! | 12 | 4 | reserved, `0` |
//! | 16 | 8 | payload length `n` |
//! | 24 | 32 | SHA-256 of the payload |
//! | 56 | n | payload |
//!
//! The file is exactly `56 + n` bytes; what the payload holds is the business of each cache.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file magic of a cache entry.
pub const MAGIC: &[u8; 8] = b"CUNPYKRN";
/// The entry format version written and read.
pub const FORMAT_VERSION: u32 = 1;
/// The header size in bytes.
pub const HEADER_LEN: usize = 56;
/// The file name extension of cache entries.
pub const EXTENSION: &str = "cnk";

/// The file of `key` in the cache folder `dir`: `<dir>/<key>.cnk`.
pub fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.{EXTENSION}"))
}

/// Wraps a payload in the verified entry format (header, then the payload).
pub fn encode_verified(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry; `None` unless magic, version, length and SHA-256 all match.
pub fn decode_verified(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return None;
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    if version != FORMAT_VERSION {
        return None;
    }
    let len = u64::from_le_bytes(bytes[16..24].try_into().ok()?);
    if (bytes.len() - HEADER_LEN) as u64 != len {
        return None;
    }
    let payload = &bytes[HEADER_LEN..];
    if Sha256::digest(payload)[..] != bytes[24..56] {
        return None;
    }
    Some(payload)
}

/// Writes `payload` to `path` as a verified entry, atomically.
pub fn write_verified(path: &Path, payload: &[u8]) -> io::Result<()> {
    write_atomic(path, &encode_verified(payload))
}

/// Reads the entry at `path` and hands its verified payload to `accept` (which checks what the
/// payload says, e.g. that it is for this key). A missing file is `None`; a damaged one, or one
/// that `accept` refuses, is removed and `None`.
pub fn read_verified<T>(path: &Path, accept: impl FnOnce(&[u8]) -> Option<T>) -> Option<T> {
    let mut file = File::open(path).ok()?;
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return None;
    }
    let value = decode_verified(&bytes).and_then(accept);
    if value.is_none() {
        remove_if_same_file(path, &file);
    }
    value
}
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically: a unique temporary file in the same folder, flushed to
/// disk, renamed over `path`. Creates the folder if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(
        ".{file_name}.{}.{}.{nanos}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    // Make the rename itself durable; not every file system allows syncing a folder.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes a damaged entry, unless another writer has already replaced it.
pub fn remove_if_same_file(path: &Path, opened: &File) {
    use std::os::unix::fs::MetadataExt;
    let (Ok(now), Ok(read)) = (fs::metadata(path), opened.metadata()) else {
        return;
    };
    if now.ino() == read.ino() && now.dev() == read.dev() {
        let _ = fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_replaces_them() {
        let dir = std::env::temp_dir().join(format!("cunumpy-disk-{}", std::process::id()));
        let path = dir.join("sub").join("entry.bin");
        write_atomic(&path, b"first").expect("write");
        write_atomic(&path, b"second, longer").expect("rewrite");
        assert_eq!(fs::read(&path).expect("read"), b"second, longer");
        let leftovers = fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
        let opened = File::open(&path).expect("open");
        remove_if_same_file(&path, &opened);
        assert!(!path.exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn verified_entries_round_trip_and_damage_is_a_removed_miss() {
        let dir = std::env::temp_dir().join(format!("cunumpy-verified-{}", std::process::id()));
        let path = entry_path(&dir, "00ff");
        assert_eq!(path.file_name().and_then(|n| n.to_str()), Some("00ff.cnk"));
        assert_eq!(read_verified(&path, |p| Some(p.to_vec())), None, "absent");
        let payload = b"an image".to_vec();
        write_verified(&path, &payload).expect("write");
        let bytes = fs::read(&path).expect("read");
        assert_eq!(bytes.len(), HEADER_LEN + payload.len());
        // The header holds the payload's SHA-256.
        assert_eq!(
            crate::cache_key::sha256_hex(&payload),
            bytes[24..56]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        assert_eq!(
            read_verified(&path, |p| Some(p.to_vec())),
            Some(payload.clone())
        );
        // Refused by its reader (another key, say): removed.
        assert_eq!(read_verified(&path, |_| None::<()>), None);
        assert!(!path.exists());
        // Every kind of damage: truncated, a flipped payload byte, another version, a bare
        // library as an older cunumpy wrote it (no header).
        let mut flipped = encode_verified(&payload);
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let mut other_version = encode_verified(&payload);
        other_version[8] = 2;
        let whole = encode_verified(&payload);
        for damaged in [
            whole[..whole.len() - 1].to_vec(),
            whole[..HEADER_LEN - 3].to_vec(),
            flipped,
            other_version,
            b"\x7fELF an old library".to_vec(),
        ] {
            fs::write(&path, &damaged).expect("write");
            assert_eq!(read_verified(&path, |p| Some(p.to_vec())), None);
            assert!(!path.exists(), "a damaged entry is removed");
        }
        let _ = fs::remove_dir_all(&dir);
        let _ = fs::remove_dir_all(&dir);
    }
}
