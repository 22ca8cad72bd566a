//! Launch shapes: from `n_threads`/`grid`/`block` to a grid and block, validated against the
//! device's limits and the kernel's attributes.

/// Why a launch shape was refused; each maps to `ValueError` (or `TypeError` for
/// [`LaunchError::Ambiguous`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("{0}")]
    Ambiguous(String),
    #[error("{0}")]
    Invalid(String),
}

/// A grid and a block, each three extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchShape {
    /// A grid with a zero extent launches nothing.
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0)
    }
}

/// The device limits a launch must respect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    pub max_block: [u32; 3],
    pub max_grid: [u32; 3],
    pub max_threads_per_block: u32,
    pub shared_per_block: u32,
    pub shared_per_block_optin: u32,
}

/// The compiled kernel's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    pub max_threads_per_block: u32,
    pub static_shared: u32,
}

/// Up to three non-negative extents, on the stack.
#[derive(Clone, Copy)]
struct Extents {
    values: [u64; 3],
    len: usize,
}

impl Extents {
    fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

fn extents(what: &str, values: &[i64]) -> Result<Extents, LaunchError> {
    if values.is_empty() || values.len() > 3 {
        return Err(LaunchError::Invalid(format!(
            "{what} must have 1 to 3 dimensions, got {}",
            values.len()
        )));
    }
    let mut out = Extents {
        values: [1; 3],
        len: values.len(),
    };
    for (o, &v) in out.values.iter_mut().zip(values) {
        *o = u64::try_from(v).map_err(|_| {
            LaunchError::Invalid(format!("{what} must be non-negative, got {values:?}"))
        })?;
    }
    Ok(out)
}

/// Validates a block shape (1 to 3 positive extents, at most 1024 threads).
pub fn block_shape(block: &[i64]) -> Result<Vec<u32>, LaunchError> {
    let dims = extents("block", block)?;
    if dims.as_slice().contains(&0) {
        return Err(LaunchError::Invalid(format!(
            "block sizes must be positive, got {block:?}"
        )));
    }
    let threads: u64 = dims.as_slice().iter().product();
    if threads > 1024 {
        return Err(LaunchError::Invalid(format!(
            "a block has at most 1024 threads, got {block:?} ({threads} threads)"
        )));
    }
    Ok(dims.as_slice().iter().map(|&d| d as u32).collect())
}

fn pad3(values: &[u64]) -> Result<[u32; 3], LaunchError> {
    let mut out = [1u32; 3];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = u32::try_from(v).map_err(|_| {
            LaunchError::Invalid(format!("grid extent {v} exceeds the 32-bit range"))
        })?;
    }
    Ok(out)
}

/// The grid and block of a launch. Exactly one of `n_threads` and `grid` must be given;
/// `grid = ceil(n_threads / block)` per axis. A 1-D block with N-D `n_threads` becomes
/// `(b, 1, ...)`. Allocates nothing (it runs on every launch).
pub fn launch_shape(
    n_threads: Option<&[i64]>,
    grid: Option<&[i64]>,
    block: &[u32],
) -> Result<LaunchShape, LaunchError> {
    let mut b = [1u64; 3];
    for (o, &v) in b.iter_mut().zip(block) {
        *o = v as u64;
    }
    let block_len = block.len().min(3);
    match (n_threads, grid) {
        (Some(_), Some(_)) | (None, None) => Err(LaunchError::Ambiguous(
            "pass exactly one of n_threads and grid".into(),
        )),
        (None, Some(grid)) => {
            let g = extents("grid", grid)?;
            Ok(LaunchShape {
                grid: pad3(g.as_slice())?,
                block: pad3(&b[..block_len])?,
            })
        }
        (Some(n), None) => {
            let n = extents("n_threads", n)?;
            if block_len != n.len && block_len != 1 {
                return Err(LaunchError::Invalid(format!(
                    "n_threads {:?} and block {block:?} have different numbers of dimensions",
                    n.as_slice()
                )));
            }
            let mut g = [1u64; 3];
            for axis in 0..n.len {
                g[axis] = n.values[axis].div_ceil(b[axis]);
            }
            Ok(LaunchShape {
                grid: pad3(&g[..n.len])?,
                block: pad3(&b[..n.len.max(block_len)])?,
            })
        }
    }
}

/// Checks a launch against the device's and the kernel's limits.
pub fn validate(
    kernel: &str,
    shape: &LaunchShape,
    shared_mem: u32,
    device: &DeviceLimits,
    limits: &KernelLimits,
) -> Result<(), LaunchError> {
    for axis in 0..3 {
        if shape.block[axis] > device.max_block[axis] {
            return Err(LaunchError::Invalid(format!(
                "{kernel}: block[{axis}]={} exceeds the {} limit",
                shape.block[axis], device.max_block[axis]
            )));
        }
        if shape.grid[axis] > device.max_grid[axis] {
            return Err(LaunchError::Invalid(format!(
                "{kernel}: grid[{axis}]={} exceeds the {} limit",
                shape.grid[axis], device.max_grid[axis]
            )));
        }
    }
    let threads: u64 = shape.block.iter().map(|&b| b as u64).product();
    let max = device
        .max_threads_per_block
        .min(limits.max_threads_per_block);
    if threads > max as u64 {
        return Err(LaunchError::Invalid(format!(
            "{kernel}: block {:?} has {threads} threads, exceeding the {max} device/kernel limit",
            shape.block
        )));
    }
    let shared_limit = device.shared_per_block.max(device.shared_per_block_optin) as u64;
    let shared = limits.static_shared as u64 + shared_mem as u64;
    if shared > shared_limit {
        return Err(LaunchError::Invalid(format!(
            "{kernel}: static shared memory {} + shared_mem={shared_mem} exceeds the \
             {shared_limit} bytes a block can have",
            limits.static_shared
        )));
    }
    Ok(())
}

/// The note for an inferred launch size that other array arguments contradict, or `None`.
///
/// 0.7.1's rule is kept: with neither `n_threads` nor `grid`, the launch takes the leading
/// extents of the first array argument (`chosen`; its last extent with `from_last_axis`). When
/// another array argument's corresponding extent differs (10,000 particles deposited onto a
/// 128-cell grid), which array sets the size is a guess, and the caller should be told.
pub fn ambiguous_inference(
    kernel: &str,
    shapes: &[Vec<i64>],
    chosen: &[i64],
    from_last_axis: bool,
) -> Option<String> {
    let extent = |s: &Vec<i64>| -> Vec<i64> {
        if from_last_axis {
            s.last().map(|&v| vec![v]).unwrap_or_default()
        } else {
            s.iter().take(chosen.len()).copied().collect()
        }
    };
    let differs = shapes.iter().any(|s| extent(s) != chosen);
    if !differs {
        return None;
    }
    let shown: Vec<String> = shapes
        .iter()
        .map(|s| match s.as_slice() {
            [one] => format!("({one},)"),
            many => format!(
                "({})",
                many.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect();
    let count = chosen
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" x ");
    let which = if from_last_axis {
        "the last axis of the first array argument"
    } else {
        "the leading extent of the first array argument, as cunumpy 0.7 did"
    };
    Some(format!(
        "{kernel}: n_threads was not given and the array arguments differ in size (shapes {}); \
         launching {count} threads from {which}. Pass n_threads= (or set n_threads_from) to \
         choose; this warning is shown once per kernel",
        shown.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_inference_names_kernel_sizes_and_count() {
        let shapes = vec![vec![128], vec![10_000], vec![10_000]];
        let note = ambiguous_inference("deposit", &shapes, &[128], false).expect("ambiguous");
        assert!(note.starts_with("deposit: "));
        assert!(note.contains("(128,), (10000,), (10000,)"));
        assert!(note.contains("launching 128 threads"));
        assert!(ambiguous_inference("k", &[vec![50], vec![50, 3]], &[50], false).is_none());
        assert!(ambiguous_inference("k", &[vec![3, 50], vec![50]], &[50], true).is_none());
        assert!(ambiguous_inference("k", &[vec![8, 8], vec![8, 4]], &[8, 8], false).is_some());
    }

    #[test]
    fn n_threads_rounds_up_and_pads_a_1d_block() {
        let s = launch_shape(Some(&[1000]), None, &[128]).expect("shape");
        assert_eq!(s.grid, [8, 1, 1]);
        assert_eq!(s.block, [128, 1, 1]);
        let s = launch_shape(Some(&[100, 7]), None, &[32]).expect("shape");
        assert_eq!(s.grid, [4, 7, 1]);
        assert_eq!(s.block, [32, 1, 1]);
    }

    #[test]
    fn exactly_one_of_n_threads_and_grid() {
        assert_eq!(
            launch_shape(None, None, &[128]),
            Err(LaunchError::Ambiguous(
                "pass exactly one of n_threads and grid".into()
            ))
        );
        assert!(launch_shape(Some(&[1]), Some(&[1]), &[128]).is_err());
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(launch_shape(Some(&[-1]), None, &[128]).is_err());
        assert!(launch_shape(Some(&[1, 2, 3, 4]), None, &[128]).is_err());
        assert!(launch_shape(Some(&[8]), None, &[8, 8]).is_err());
        assert!(block_shape(&[0]).is_err());
        assert!(block_shape(&[64, 32]).is_err());
        assert_eq!(block_shape(&[32, 32]).expect("ok"), vec![32, 32]);
    }

    #[test]
    fn empty_grid_launches_nothing() {
        let s = launch_shape(Some(&[0]), None, &[128]).expect("shape");
        assert!(s.is_empty());
    }

    #[test]
    fn limits_are_enforced() {
        let device = DeviceLimits {
            max_block: [1024, 1024, 64],
            max_grid: [u32::MAX, 65535, 65535],
            max_threads_per_block: 1024,
            shared_per_block: 48 * 1024,
            shared_per_block_optin: 227 * 1024,
        };
        let kernel = KernelLimits {
            max_threads_per_block: 256,
            static_shared: 4096,
        };
        let ok = LaunchShape {
            grid: [10, 1, 1],
            block: [256, 1, 1],
        };
        assert!(validate("k", &ok, 0, &device, &kernel).is_ok());
        let too_many = LaunchShape {
            block: [512, 1, 1],
            ..ok
        };
        let msg = validate("k", &too_many, 0, &device, &kernel)
            .expect_err("limit")
            .to_string();
        assert!(
            msg.contains("exceeding the 256 device/kernel limit"),
            "{msg}"
        );
        let deep = LaunchShape {
            block: [1, 1, 65],
            ..ok
        };
        let msg = validate("k", &deep, 0, &device, &kernel)
            .expect_err("limit")
            .to_string();
        assert!(msg.contains("block[2]=65 exceeds the 64 limit"), "{msg}");
        let msg = validate("k", &ok, 227 * 1024, &device, &kernel)
            .expect_err("shared")
            .to_string();
        assert!(
            msg.contains("static shared memory 4096 + shared_mem=232448"),
            "{msg}"
        );
    }
}
