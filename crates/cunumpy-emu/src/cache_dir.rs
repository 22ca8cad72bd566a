//! Where emulation libraries are cached on disk, from the environment.

use std::path::PathBuf;

/// The cache directory for the given values of `CUNUMPY_EMULATION_CACHE`, `XDG_CACHE_HOME`
/// and `HOME`: the first one when set (`0`, `off`, `false`, `no` or empty disable the disk
/// cache: `None`), else `$XDG_CACHE_HOME/cunumpy/emulation`, else
/// `$HOME/.cache/cunumpy/emulation` (`None` when neither is known).
pub fn resolve_cache_dir(
    setting: Option<&str>,
    xdg_cache_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    if let Some(value) = setting {
        let v = value.trim();
        if matches!(
            v.to_ascii_lowercase().as_str(),
            "" | "0" | "off" | "false" | "no"
        ) {
            return None;
        }
        return Some(PathBuf::from(v));
    }
    if let Some(xdg) = xdg_cache_home.filter(|x| !x.trim().is_empty()) {
        return Some(PathBuf::from(xdg).join("cunumpy").join("emulation"));
    }
    home.filter(|h| !h.trim().is_empty()).map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("cunumpy")
            .join("emulation")
    })
}

static WARNINGS: std::sync::Mutex<(Vec<PathBuf>, Vec<String>)> =
    std::sync::Mutex::new((Vec::new(), Vec::new()));

/// Queues `message` about cache folder `dir`, once per folder and process.
pub(crate) fn warn_once(dir: &std::path::Path, message: String) {
    let mut w = cunumpy_core::sync::lock(&WARNINGS);
    if w.0.iter().any(|d| d == dir) {
        return;
    }
    w.0.push(dir.to_path_buf());
    w.1.push(message);
}

/// The warnings about unusable cache folders queued since the last call (each folder is
/// warned about once per process); the caller shows them (the binding: as Python warnings).
pub fn take_cache_warnings() -> Vec<String> {
    std::mem::take(&mut cunumpy_core::sync::lock(&WARNINGS).1)
}

/// The emulation cache folder of the process environment (read by `cunumpy_core::config`,
/// which follows [`resolve_cache_dir`]'s rule).
pub fn default_cache_dir() -> Option<PathBuf> {
    cunumpy_core::config::emulation_cache_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_wins_and_can_disable() {
        assert_eq!(
            resolve_cache_dir(Some("/c"), Some("/x"), Some("/h")),
            Some(PathBuf::from("/c"))
        );
        for off in ["", "0", "off", "FALSE", "no", " No "] {
            assert_eq!(
                resolve_cache_dir(Some(off), Some("/x"), Some("/h")),
                None,
                "{off:?}"
            );
        }
    }

    #[test]
    fn xdg_then_home() {
        assert_eq!(
            resolve_cache_dir(None, Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/cunumpy/emulation"))
        );
        assert_eq!(
            resolve_cache_dir(None, Some(""), Some("/h")),
            Some(PathBuf::from("/h/.cache/cunumpy/emulation"))
        );
        assert_eq!(resolve_cache_dir(None, None, None), None);
    }
}
