//! Every setting the Rust crates read from the environment, read here and nowhere else
//! (`python/cunumpy/_config.py` is the Python twin; `docs/environment-variables.md` lists
//! them all).
//!
//! One spelling of true and false for every switch: `1`, `true`, `yes`, `on` are true and
//! `0`, `false`, `no`, `off` are false, in any case, around any whitespace; an unset or empty
//! variable means "the default". Each reader has a `_from` twin that takes the environment as
//! a function, for tests.

use std::ffi::OsString;
use std::path::PathBuf;

/// The kernel (CUBIN) cache folder.
pub const CACHE_DIR: &str = "CUNUMPY_CACHE_DIR";
/// The emulation and host-loop library cache folder, or a false value for none.
pub const EMULATION_CACHE: &str = "CUNUMPY_EMULATION_CACHE";
/// How fused CPU loops are compiled: a false value, `sync`, or anything else (background).
pub const HOST_LOOPS: &str = "CUNUMPY_HOST_LOOPS";
/// The idle-byte limit of the host memory pool.
pub const HOST_POOL_LIMIT: &str = "CUNUMPY_HOST_POOL_LIMIT";
/// The host C++ compiler (it may carry arguments, such as `ccache g++`).
pub const CXX: &str = "CXX";
/// The SM count the emulated device reports (what fused launch grids are sized by).
pub const EMULATED_SM_COUNT: &str = "CUNUMPY_EMULATED_SM_COUNT";
/// Seconds an emulator compile may take before it is reported on one line.
pub const EMULATION_SLOW_COMPILE: &str = "CUNUMPY_EMULATION_SLOW_COMPILE";
/// The rows each thread walks in a fused stencil's tiled mapping, or a false value for the
/// flat mapping.
pub const FUSION_STENCIL_TILES: &str = "CUNUMPY_FUSION_STENCIL_TILES";
/// Rows per thread of a fused stencil's tiled mapping unless the setting says otherwise.
pub const DEFAULT_STENCIL_ROWS: u32 = 8;
/// The emulated device's SM count unless the setting says otherwise: an H200's.
pub const DEFAULT_EMULATED_SM_COUNT: u32 = 132;

/// A switch's value in the one spelling (see the module doc); None when unset, empty or not
/// a spelling of true or false.
pub fn flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The environment as the readers see it.
fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// `name`'s value when set and not blank.
fn nonempty(env: &impl Fn(&str) -> Option<OsString>, name: &str) -> Option<OsString> {
    env(name).filter(|v| !v.to_string_lossy().trim().is_empty())
}

/// `$XDG_CACHE_HOME/cunumpy` (an absolute path), else `$HOME/.cache/cunumpy`: the one folder
/// under which every compiled artefact is cached, one sub-folder per kind.
pub fn cache_root_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(xdg) = nonempty(&env, "XDG_CACHE_HOME").map(PathBuf::from) {
        if xdg.is_absolute() {
            return Some(xdg.join("cunumpy"));
        }
    }
    nonempty(&env, "HOME").map(|home| PathBuf::from(home).join(".cache").join("cunumpy"))
}

/// The kernel cache folder: `$CUNUMPY_CACHE_DIR`, else `<cache root>/kernels`; None when
/// neither is known.
pub fn kernel_cache_dir_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(dir) = nonempty(&env, CACHE_DIR) {
        return Some(PathBuf::from(dir));
    }
    cache_root_from(env).map(|root| root.join("kernels"))
}

/// [`kernel_cache_dir_from`] with the process environment.
pub fn kernel_cache_dir() -> Option<PathBuf> {
    kernel_cache_dir_from(process_env)
}

/// The emulation and host-loop library cache folder: `$CUNUMPY_EMULATION_CACHE` when set (a
/// false value, or an empty one, turns the disk cache off: None), else
/// `<cache root>/emulation`.
pub fn emulation_cache_dir_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(value) = env(EMULATION_CACHE) {
        let value = value.to_string_lossy().trim().to_string();
        if value.is_empty() || flag(&value) == Some(false) {
            return None;
        }
        return Some(PathBuf::from(value));
    }
    cache_root_from(env).map(|root| root.join("emulation"))
}

/// [`emulation_cache_dir_from`] with the process environment.
pub fn emulation_cache_dir() -> Option<PathBuf> {
    emulation_cache_dir_from(process_env)
}

/// How fused CPU loops are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostLoops {
    /// Never: the interpreter runs every fused CPU call.
    Off,
    /// On the calling thread, before the first call returns.
    Sync,
    /// On a background thread; the interpreter runs until the loop is ready.
    Background,
}

/// `$CUNUMPY_HOST_LOOPS`: a false value is `Off`, `sync` is `Sync`, anything else (unset
/// included) is `Background`.
pub fn host_loops_from(env: impl Fn(&str) -> Option<OsString>) -> HostLoops {
    let value = env(HOST_LOOPS)
        .map(|v| v.to_string_lossy().trim().to_ascii_lowercase())
        .unwrap_or_default();
    if flag(&value) == Some(false) {
        HostLoops::Off
    } else if value == "sync" {
        HostLoops::Sync
    } else {
        HostLoops::Background
    }
}

/// [`host_loops_from`] with the process environment.
pub fn host_loops() -> HostLoops {
    host_loops_from(process_env)
}

/// `$CUNUMPY_HOST_POOL_LIMIT` as given (None when unset); `crate::host_pool::parse_limit`
/// reads it.
pub fn host_pool_limit() -> Option<OsString> {
    process_env(HOST_POOL_LIMIT)
}

/// `$CUNUMPY_EMULATED_SM_COUNT`: a positive integer, else (unset or blank) 132; Err with
/// the value as given when it is not a positive integer. Read at each call, so that a test
/// can emulate a GPU of another size.
pub fn emulated_sm_count_from(env: impl Fn(&str) -> Option<OsString>) -> Result<u32, String> {
    let Some(value) = nonempty(&env, EMULATED_SM_COUNT) else {
        return Ok(DEFAULT_EMULATED_SM_COUNT);
    };
    let text = value.to_string_lossy().into_owned();
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(text),
    }
}

/// [`emulated_sm_count_from`] with the process environment.
pub fn emulated_sm_count() -> Result<u32, String> {
    emulated_sm_count_from(process_env)
}

/// `$CUNUMPY_EMULATION_SLOW_COMPILE`: seconds (a non-negative number) after which an emulator
/// compile is reported on one line; 1 when unset, blank or not such a number.
pub fn emulation_slow_compile_seconds_from(env: impl Fn(&str) -> Option<OsString>) -> f64 {
    nonempty(&env, EMULATION_SLOW_COMPILE)
        .and_then(|v| v.to_string_lossy().trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(1.0)
}

/// [`emulation_slow_compile_seconds_from`] with the process environment.
pub fn emulation_slow_compile_seconds() -> f64 {
    emulation_slow_compile_seconds_from(process_env)
}

/// `$CUNUMPY_FUSION_STENCIL_TILES`: how a fused elementwise kernel that reads shifted views
/// of an array along an outer axis (a stencil) maps threads: 0 for the flat mapping (a false
/// value), else the rows each thread walks in the tiled mapping: an integer from 2 to 32, or
/// [`DEFAULT_STENCIL_ROWS`] when unset, blank, true or anything else.
pub fn fusion_stencil_rows_from(env: impl Fn(&str) -> Option<OsString>) -> u32 {
    let Some(value) = nonempty(&env, FUSION_STENCIL_TILES) else {
        return DEFAULT_STENCIL_ROWS;
    };
    let text = value.to_string_lossy().trim().to_string();
    if flag(&text) == Some(false) {
        return 0;
    }
    match text.parse::<u32>() {
        Ok(n) if (2..=32).contains(&n) => n,
        _ => DEFAULT_STENCIL_ROWS,
    }
}

/// [`fusion_stencil_rows_from`] with the process environment.
pub fn fusion_stencil_rows() -> u32 {
    fusion_stencil_rows_from(process_env)
}

/// `$CXX` when set and not blank.
pub fn cxx() -> Option<String> {
    nonempty(&process_env, CXX).map(|v| v.to_string_lossy().into_owned())
}

/// Any other variable the crates read (the CUDA toolkit's `CUDA_HOME`/`CUDA_PATH`, `PATH`):
/// the process environment, read in this one place.
pub fn var_os(name: &str) -> Option<OsString> {
    process_env(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn one_spelling_of_true_and_false() {
        for t in ["1", "true", "YES", " on "] {
            assert_eq!(flag(t), Some(true), "{t:?}");
        }
        for f in ["0", "False", "no", "OFF "] {
            assert_eq!(flag(f), Some(false), "{f:?}");
        }
        for n in ["", "2", "sync", "maybe"] {
            assert_eq!(flag(n), None, "{n:?}");
        }
    }

    #[test]
    fn kernel_cache_dir_prefers_the_setting_then_xdg_then_home() {
        let all = [(CACHE_DIR, "/c"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(kernel_cache_dir_from(env(&all)), Some("/c".into()));
        assert_eq!(
            kernel_cache_dir_from(env(&all[1..])),
            Some("/x/cunumpy/kernels".into())
        );
        assert_eq!(
            kernel_cache_dir_from(env(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")])),
            Some("/h/.cache/cunumpy/kernels".into())
        );
        assert_eq!(kernel_cache_dir_from(env(&[])), None);
    }

    #[test]
    fn emulation_cache_dir_can_be_turned_off() {
        let home = ("HOME", "/h");
        assert_eq!(
            emulation_cache_dir_from(env(&[home])),
            Some("/h/.cache/cunumpy/emulation".into())
        );
        assert_eq!(
            emulation_cache_dir_from(env(&[(EMULATION_CACHE, " /e "), home])),
            Some("/e".into())
        );
        for off in ["", "0", "off", "FALSE", "no", " No "] {
            assert_eq!(
                emulation_cache_dir_from(env(&[(EMULATION_CACHE, off), home])),
                None,
                "{off:?}"
            );
        }
    }

    #[test]
    fn stencil_rows_are_off_a_count_or_the_default() {
        assert_eq!(fusion_stencil_rows_from(env(&[])), DEFAULT_STENCIL_ROWS);
        for off in ["0", "off", " False "] {
            assert_eq!(
                fusion_stencil_rows_from(env(&[(FUSION_STENCIL_TILES, off)])),
                0
            );
        }
        assert_eq!(
            fusion_stencil_rows_from(env(&[(FUSION_STENCIL_TILES, " 16 ")])),
            16
        );
        for default in ["", "1", "on", "33", "many"] {
            assert_eq!(
                fusion_stencil_rows_from(env(&[(FUSION_STENCIL_TILES, default)])),
                DEFAULT_STENCIL_ROWS,
                "{default:?}"
            );
        }
    }

    #[test]
    fn emulated_sm_count_is_a_positive_integer() {
        assert_eq!(emulated_sm_count_from(env(&[])), Ok(132));
        assert_eq!(
            emulated_sm_count_from(env(&[(EMULATED_SM_COUNT, " 20 ")])),
            Ok(20)
        );
        for bad in ["0", "-3", "many"] {
            assert_eq!(
                emulated_sm_count_from(env(&[(EMULATED_SM_COUNT, bad)])),
                Err(bad.to_string())
            );
        }
    }

    #[test]
    fn host_loops_modes() {
        assert_eq!(host_loops_from(env(&[])), HostLoops::Background);
        assert_eq!(
            host_loops_from(env(&[(HOST_LOOPS, "")])),
            HostLoops::Background
        );
        assert_eq!(
            host_loops_from(env(&[(HOST_LOOPS, " SYNC")])),
            HostLoops::Sync
        );
        for off in ["off", "0", "no", "false"] {
            assert_eq!(host_loops_from(env(&[(HOST_LOOPS, off)])), HostLoops::Off);
        }
    }
}
