//! Writing and dropping files of the disk caches (compiled kernels, emulation libraries, fused
//! CPU loops) so that no reader ever sees half a file: every cache writes through
//! [`write_atomic`]. Where the caches live is `crate::config` (one root, one folder per kind).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
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
}
