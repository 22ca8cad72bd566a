//! A pool of host memory buffers, the CPU counterpart of CuPy's `MemoryPool`.
//!
//! Large results of fused CPU calls are written into fresh arrays. Taken from the system
//! allocator each time, every such array is a fresh `mmap`: each of its pages faults on first
//! touch and the kernel zeroes it, which costs more than the computation that fills it. A
//! [`HostPool`] keeps the buffers that come back and hands them out again, so a loop of calls
//! keeps writing into memory that is already mapped.
//!
//! - [`HostPool::take`] rounds a request up to a size class (a multiple of [`SIZE_CLASS`]) and
//!   returns the idle buffer of that class returned most recently, or allocates a new one
//!   (uninitialised, aligned to [`ALIGNMENT`]). Allocation failure is an error, not an abort.
//! - Dropping a [`HostBuffer`] gives it back to its pool (it holds the pool's shared state, so
//!   the pool handle may be gone by then). The pool keeps it idle unless that would take the
//!   idle bytes above the pool's limit; then the oldest idle buffers are freed to make room,
//!   and a buffer larger than the limit itself is freed at once.
//! - Counters and controls are named after CuPy's: [`HostPool::used_bytes`],
//!   [`HostPool::free_bytes`], [`HostPool::total_bytes`], [`HostPool::free_all_blocks`],
//!   [`HostPool::set_limit`] and [`HostPool::get_limit`]. Bytes are counted in size classes.
//! - On Linux, buffers of [`HUGE_PAGE_MIN_BYTES`] and more are advised to use transparent huge
//!   pages before first touch, as NumPy does for its own large arrays: a streaming loop that
//!   writes them then walks 2 MiB pages instead of 4 KiB ones (on the 2-core build machine the
//!   fused `a - mean(a)` went from 0.80-0.86x to 0.92-0.94x the two-thread copy rate).

use std::alloc::{self, Layout};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// Buffers of this size and more are advised to use transparent huge pages (NumPy's threshold).
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Alignment of every buffer (a page: more than the 64 bytes that SIMD loads and NumPy want).
pub const ALIGNMENT: usize = 4096;
/// Requests are rounded up to a multiple of this many bytes (64 KiB); buffers are reused
/// only within one size class.
pub const SIZE_CLASS: usize = 64 * 1024;
/// The default limit on idle bytes a pool keeps (1 GiB).
pub const DEFAULT_LIMIT: usize = 1 << 30;
/// The environment variable that sets the process-wide pool's limit, in bytes.
pub const LIMIT_ENV: &str = "CUNUMPY_HOST_POOL_LIMIT";

/// Why a host buffer or a limit could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostPoolError {
    #[error(
        "out of host memory: cannot allocate {bytes} bytes (size class {class} bytes), \
         even after freeing the pool's idle buffers"
    )]
    OutOfMemory { bytes: usize, class: usize },
    #[error("a host buffer of {bytes} bytes is larger than this machine can address")]
    TooLarge { bytes: usize },
    #[error("{LIMIT_ENV}={value:?} is not a size in bytes (expected a non-negative integer)")]
    InvalidLimit { value: String },
}

/// The size class of a request of `bytes` bytes: `bytes` rounded up to a multiple of
/// [`SIZE_CLASS`] (a request of 0 bytes gets the smallest class); None when that cannot be
/// allocated at [`ALIGNMENT`] on this machine.
pub fn size_class(bytes: usize) -> Option<usize> {
    let class = bytes.max(1).checked_next_multiple_of(SIZE_CLASS)?;
    Layout::from_size_align(class, ALIGNMENT).ok()?;
    Some(class)
}

/// Reads a pool limit as given in [`LIMIT_ENV`]: a non-negative integer number of bytes
/// (surrounding spaces allowed).
pub fn parse_limit(value: &str) -> Result<usize, HostPoolError> {
    value
        .trim()
        .parse::<usize>()
        .map_err(|_| HostPoolError::InvalidLimit {
            value: value.to_string(),
        })
}

/// One allocation of `size` bytes at [`ALIGNMENT`], owned alone and freed on drop.
struct Block {
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: a `Block` is the only owner of its allocation (like a `Box<[u8]>`); the memory has no
// tie to the thread that allocated it, and the global allocator frees from any thread.
unsafe impl Send for Block {}
// SAFETY: a shared `&Block` gives out only the address and the size; nothing reads or writes
// the memory through it.
unsafe impl Sync for Block {}

impl Block {
    /// A new uninitialised block of `size` bytes (a size class); None when the allocator
    /// has no memory for it.
    fn alloc(size: usize) -> Option<Block> {
        let layout = Layout::from_size_align(size, ALIGNMENT).ok()?;
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: `layout` has a non-zero size (checked above) and a valid power-of-two
        // alignment (`from_size_align` checked it); a null result is handled below.
        let ptr = unsafe { alloc::alloc(layout) };
        let block = NonNull::new(ptr).map(|ptr| Block { ptr, size })?;
        if size >= HUGE_PAGE_MIN_BYTES {
            // a hint: where the kernel declines it, the block keeps ordinary pages
            block.advise_huge_pages();
        }
        Some(block)
    }

    /// Asks the kernel to back the block's whole 2 MiB pages with transparent huge pages
    /// (`madvise(MADV_HUGEPAGE)`); true when it accepted. Done before the first touch, so the
    /// pages are huge from their first fault.
    #[cfg(target_os = "linux")]
    fn advise_huge_pages(&self) -> bool {
        extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        const HUGE_PAGE: usize = 2 << 20;
        let first = self.ptr.as_ptr() as usize;
        let start = first.next_multiple_of(HUGE_PAGE);
        let end = (first + self.size) / HUGE_PAGE * HUGE_PAGE;
        if end <= start {
            return false;
        }
        // SAFETY: [start, end) is page-aligned and lies inside this block's allocation, which
        // the block owns alone; MADV_HUGEPAGE changes only how the kernel backs those pages,
        // never their contents or whether they are mapped.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) == 0 }
    }

    #[cfg(not(target_os = "linux"))]
    fn advise_huge_pages(&self) -> bool {
        false
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by `alloc::alloc` with exactly this layout (size `size`,
        // alignment `ALIGNMENT`; `Block::alloc` checked it was valid), and a `Block` is the
        // only owner of its allocation, so it is freed once, here.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.size, ALIGNMENT),
            )
        }
    }
}

/// The bookkeeping of a pool, behind its mutex.
struct State {
    /// Idle blocks per size class, oldest first, each with the sequence number of its return.
    idle: HashMap<usize, VecDeque<(u64, Block)>>,
    /// The idle blocks in the order they came back (sequence number -> size class).
    ages: BTreeMap<u64, usize>,
    next_seq: u64,
    used: usize,
    free: usize,
    limit: usize,
}

impl State {
    /// The idle block of `class` that came back last.
    fn pop_idle(&mut self, class: usize) -> Option<Block> {
        let queue = self.idle.get_mut(&class)?;
        let (seq, block) = queue.pop_back()?;
        if queue.is_empty() {
            self.idle.remove(&class);
        }
        self.ages.remove(&seq);
        self.free -= block.size;
        Some(block)
    }

    /// The idle block that came back first.
    fn pop_oldest(&mut self) -> Option<Block> {
        let (seq, class) = self.ages.pop_first()?;
        let queue = self.idle.get_mut(&class)?;
        // the oldest block overall is the oldest of its class
        let (front_seq, block) = queue.pop_front()?;
        debug_assert_eq!(front_seq, seq);
        if queue.is_empty() {
            self.idle.remove(&class);
        }
        self.free -= block.size;
        Some(block)
    }

    /// Takes idle blocks, oldest first, until at most `keep` idle bytes remain.
    fn evict_to(&mut self, keep: usize, evicted: &mut Vec<Block>) {
        while self.free > keep {
            match self.pop_oldest() {
                Some(block) => evicted.push(block),
                None => break,
            }
        }
    }

    fn push_idle(&mut self, block: Block) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.free += block.size;
        self.ages.insert(seq, block.size);
        self.idle
            .entry(block.size)
            .or_default()
            .push_back((seq, block));
    }

    fn take_all_idle(&mut self) -> Vec<Block> {
        self.ages.clear();
        self.free = 0;
        self.idle
            .drain()
            .flat_map(|(_, queue)| queue.into_iter().map(|(_, block)| block))
            .collect()
    }
}

/// What a pool and the buffers it handed out share.
struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer coming back: kept idle within the limit, or freed. Blocks are freed after the
    /// lock is released.
    fn give_back(&self, block: Block) {
        let mut evicted = Vec::new();
        {
            let mut state = self.lock();
            state.used -= block.size;
            if block.size > state.limit {
                evicted.push(block);
            } else {
                let keep = state.limit - block.size;
                state.evict_to(keep, &mut evicted);
                state.push_idle(block);
            }
        }
        drop(evicted);
    }
}

/// A thread-safe pool of host buffers (see the module documentation). Cloning gives another
/// handle to the same pool.
#[derive(Clone)]
pub struct HostPool {
    shared: Arc<Shared>,
}

impl Default for HostPool {
    fn default() -> Self {
        HostPool::new()
    }
}

impl fmt::Debug for HostPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("HostPool")
            .field("used_bytes", &state.used)
            .field("free_bytes", &state.free)
            .field("limit", &state.limit)
            .finish()
    }
}

impl HostPool {
    /// An empty pool that keeps up to [`DEFAULT_LIMIT`] idle bytes.
    pub fn new() -> HostPool {
        HostPool::with_limit(DEFAULT_LIMIT)
    }

    /// An empty pool that keeps up to `limit` idle bytes (0: keeps nothing).
    pub fn with_limit(limit: usize) -> HostPool {
        HostPool {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    idle: HashMap::new(),
                    ages: BTreeMap::new(),
                    next_seq: 0,
                    used: 0,
                    free: 0,
                    limit,
                }),
            }),
        }
    }

    /// A buffer of at least `bytes` bytes, uninitialised (or holding what its last user
    /// wrote): the idle buffer of the same size class that came back last, else a new one.
    /// When the allocator fails, the idle buffers are freed and the allocation tried once more.
    pub fn take(&self, bytes: usize) -> Result<HostBuffer, HostPoolError> {
        let class = size_class(bytes).ok_or(HostPoolError::TooLarge { bytes })?;
        let reused = {
            let mut state = self.shared.lock();
            let block = state.pop_idle(class);
            if block.is_some() {
                state.used += class;
            }
            block
        };
        let block = match reused {
            Some(block) => block,
            None => {
                let block = match Block::alloc(class) {
                    Some(block) => block,
                    None => {
                        self.free_all_blocks();
                        Block::alloc(class).ok_or(HostPoolError::OutOfMemory { bytes, class })?
                    }
                };
                self.shared.lock().used += class;
                block
            }
        };
        Ok(HostBuffer {
            block: Some(block),
            len: bytes,
            pool: Arc::clone(&self.shared),
        })
    }

    /// Bytes in buffers handed out and not yet returned (counted in size classes).
    pub fn used_bytes(&self) -> usize {
        self.shared.lock().used
    }

    /// Bytes in idle buffers kept for reuse.
    pub fn free_bytes(&self) -> usize {
        self.shared.lock().free
    }

    /// `used_bytes() + free_bytes()`: all the memory the pool accounts for.
    pub fn total_bytes(&self) -> usize {
        let state = self.shared.lock();
        state.used + state.free
    }

    /// How many idle buffers the pool keeps.
    pub fn n_free_blocks(&self) -> usize {
        self.shared.lock().ages.len()
    }

    /// Frees every idle buffer (buffers handed out are not affected).
    pub fn free_all_blocks(&self) {
        let blocks = self.shared.lock().take_all_idle();
        drop(blocks);
    }

    /// Sets the limit on idle bytes kept (0: keep nothing); idle buffers above it are freed,
    /// oldest first.
    pub fn set_limit(&self, limit: usize) {
        let mut evicted = Vec::new();
        {
            let mut state = self.shared.lock();
            state.limit = limit;
            state.evict_to(limit, &mut evicted);
        }
        drop(evicted);
    }

    /// The limit on idle bytes kept.
    pub fn get_limit(&self) -> usize {
        self.shared.lock().limit
    }
}

/// A buffer handed out by a [`HostPool`]; dropping it gives it back to the pool.
pub struct HostBuffer {
    /// Always `Some` until `drop` takes it.
    block: Option<Block>,
    len: usize,
    pool: Arc<Shared>,
}

impl fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBuffer")
            .field("addr", &self.addr())
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl HostBuffer {
    /// The start of the buffer, aligned to [`ALIGNMENT`].
    pub fn as_ptr(&self) -> *const u8 {
        self.block
            .as_ref()
            .map_or(NonNull::dangling().as_ptr(), |b| b.ptr.as_ptr())
    }

    /// The start of the buffer, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.block
            .as_mut()
            .map_or(NonNull::dangling().as_ptr(), |b| b.ptr.as_ptr())
    }

    /// The address of the buffer, as handed to other code (NumPy's array interface).
    pub fn addr(&self) -> usize {
        self.as_ptr() as usize
    }

    /// The bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes the buffer really has (its size class, at least `len()`).
    pub fn capacity(&self) -> usize {
        self.block.as_ref().map_or(0, |b| b.size)
    }

    /// The `len()` bytes asked for, as possibly uninitialised memory.
    pub fn as_uninit_slice_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        let len = self.len;
        match self.block.as_mut() {
            // SAFETY: the block's allocation is valid for `size >= len` bytes and is owned by
            // this buffer alone, so `&mut self` makes this the only access for the slice's
            // lifetime; `MaybeUninit<u8>` needs no initialisation and has alignment 1.
            Some(b) => unsafe {
                std::slice::from_raw_parts_mut(b.ptr.as_ptr().cast::<MaybeUninit<u8>>(), len)
            },
            None => &mut [],
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.pool.give_back(block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: usize = SIZE_CLASS;

    #[test]
    #[cfg(target_os = "linux")]
    fn large_blocks_are_advised_to_use_huge_pages_where_the_kernel_has_them() {
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
        let block = Block::alloc(16 << 20).expect("16 MiB");
        // the kernel accepts the advice exactly when it was built with transparent huge pages
        assert_eq!(block.advise_huge_pages(), thp.exists());
        // a block too small to hold one whole 2 MiB page is not advised
        assert!(!Block::alloc(1 << 20).expect("1 MiB").advise_huge_pages());
        // an advised block is ordinary memory to its owner
        let pool = HostPool::new();
        let mut buffer = pool.take(16 << 20).expect("16 MiB");
        fill(&mut buffer, 7);
        assert!(all_equal(&mut buffer, 7));
    }

    fn fill(buffer: &mut HostBuffer, value: u8) {
        let len = buffer.len();
        // SAFETY: the buffer is valid for `len()` bytes and `&mut` makes this the only access.
        unsafe { std::ptr::write_bytes(buffer.as_mut_ptr(), value, len) }
    }

    fn all_equal(buffer: &mut HostBuffer, value: u8) -> bool {
        let slice = buffer.as_uninit_slice_mut();
        // SAFETY: the tests call this only after `fill` wrote every byte of the slice, and
        // `MaybeUninit<u8>` has the layout of `u8`.
        let bytes: &[u8] =
            unsafe { std::slice::from_raw_parts(slice.as_ptr().cast(), slice.len()) };
        bytes.iter().all(|&b| b == value)
    }

    #[test]
    fn size_classes_round_up_to_64_kib() {
        assert_eq!(size_class(0), Some(K));
        assert_eq!(size_class(1), Some(K));
        assert_eq!(size_class(K), Some(K));
        assert_eq!(size_class(K + 1), Some(2 * K));
        assert_eq!(size_class(10 * K - 3), Some(10 * K));
        assert_eq!(size_class(usize::MAX), None);
        assert_eq!(size_class(isize::MAX as usize), None);
    }

    #[test]
    fn buffers_are_aligned_and_sized() {
        let pool = HostPool::new();
        for bytes in [0, 1, 100, K, K + 1, 3 * K + 17] {
            let b = pool.take(bytes).expect("take");
            assert_eq!(b.addr() % ALIGNMENT, 0);
            assert_eq!(b.len(), bytes);
            assert_eq!(b.is_empty(), bytes == 0);
            assert_eq!(b.capacity(), size_class(bytes).expect("class"));
        }
    }

    #[test]
    fn a_returned_buffer_is_reused_within_its_class() {
        let pool = HostPool::new();
        let mut a = pool.take(4 * K).expect("take");
        fill(&mut a, 7);
        let addr = a.addr();
        assert_eq!(pool.used_bytes(), 4 * K);
        assert_eq!(pool.free_bytes(), 0);
        drop(a);
        assert_eq!(pool.used_bytes(), 0);
        assert_eq!(pool.free_bytes(), 4 * K);
        assert_eq!(pool.n_free_blocks(), 1);
        // same class (3K+1 .. 4K rounds to 4K): the same memory, contents as left
        let mut b = pool.take(4 * K - 5).expect("take");
        assert_eq!(b.addr(), addr);
        assert_eq!(b.len(), 4 * K - 5);
        assert!(all_equal(&mut b, 7));
        assert_eq!(pool.used_bytes(), 4 * K);
        assert_eq!(pool.free_bytes(), 0);
        assert_eq!(pool.n_free_blocks(), 0);
    }

    #[test]
    fn other_classes_are_not_reused() {
        let pool = HostPool::new();
        let a = pool.take(4 * K).expect("take");
        let a_addr = a.addr();
        drop(a);
        // a smaller and a larger class both allocate; the idle 4K buffer stays
        let small = pool.take(2 * K).expect("take");
        let large = pool.take(5 * K).expect("take");
        assert_ne!(small.addr(), a_addr);
        assert_ne!(large.addr(), a_addr);
        assert_eq!(pool.free_bytes(), 4 * K);
        assert_eq!(pool.used_bytes(), 7 * K);
        assert_eq!(pool.total_bytes(), 11 * K);
    }

    #[test]
    fn the_last_returned_buffer_of_a_class_comes_back_first() {
        let pool = HostPool::new();
        let a = pool.take(K).expect("take");
        let b = pool.take(K).expect("take");
        let (a_addr, b_addr) = (a.addr(), b.addr());
        drop(a);
        drop(b);
        assert_eq!(pool.take(K).expect("take").addr(), b_addr);
        // (that one went back again when its temporary was dropped)
        let first = pool.take(K).expect("take");
        let second = pool.take(K).expect("take");
        assert_eq!(first.addr(), b_addr);
        assert_eq!(second.addr(), a_addr);
    }

    #[test]
    fn returns_above_the_limit_evict_the_oldest_idle_buffers() {
        let pool = HostPool::with_limit(3 * K);
        let buffers: Vec<HostBuffer> = (0..4).map(|_| pool.take(K).expect("take")).collect();
        let addrs: Vec<usize> = buffers.iter().map(HostBuffer::addr).collect();
        drop(buffers); // returned in order 0, 1, 2, 3: 0 is evicted
        assert_eq!(pool.free_bytes(), 3 * K);
        assert_eq!(pool.n_free_blocks(), 3);
        assert_eq!(pool.used_bytes(), 0);
        let again: Vec<HostBuffer> = (0..3).map(|_| pool.take(K).expect("take")).collect();
        let got: Vec<usize> = again.iter().map(HostBuffer::addr).collect();
        assert_eq!(got, vec![addrs[3], addrs[2], addrs[1]]);
        assert_eq!(pool.free_bytes(), 0);
    }

    #[test]
    fn eviction_crosses_size_classes_oldest_first() {
        let pool = HostPool::with_limit(4 * K);
        let big = pool.take(3 * K).expect("take");
        let small = pool.take(K).expect("take");
        let other = pool.take(2 * K).expect("take");
        let small_addr = small.addr();
        drop(big); // idle: big (3K)
        drop(small); // idle: big, small (4K)
        drop(other); // needs 2K: big goes (oldest), small stays
        assert_eq!(pool.free_bytes(), 3 * K);
        assert_eq!(pool.n_free_blocks(), 2);
        assert_eq!(pool.take(K).expect("take").addr(), small_addr);
    }

    #[test]
    fn a_buffer_larger_than_the_limit_is_freed_and_others_stay() {
        let pool = HostPool::with_limit(2 * K);
        let small = pool.take(K).expect("take");
        let huge = pool.take(8 * K).expect("take");
        drop(small);
        drop(huge);
        assert_eq!(pool.free_bytes(), K);
        assert_eq!(pool.n_free_blocks(), 1);
        assert_eq!(pool.used_bytes(), 0);
    }

    #[test]
    fn limit_zero_keeps_nothing() {
        let pool = HostPool::with_limit(0);
        for _ in 0..3 {
            let b = pool.take(2 * K).expect("take");
            assert_eq!(pool.used_bytes(), 2 * K);
            drop(b);
            assert_eq!(pool.free_bytes(), 0);
            assert_eq!(pool.used_bytes(), 0);
        }
        assert_eq!(pool.n_free_blocks(), 0);
    }

    #[test]
    fn lowering_the_limit_evicts_oldest_first() {
        let pool = HostPool::new();
        assert_eq!(pool.get_limit(), DEFAULT_LIMIT);
        let buffers: Vec<HostBuffer> = (1..=3).map(|n| pool.take(n * K).expect("take")).collect();
        let last = buffers[2].addr();
        drop(buffers); // idle: 1K, 2K, 3K (oldest first)
        assert_eq!(pool.free_bytes(), 6 * K);
        pool.set_limit(4 * K);
        assert_eq!(pool.get_limit(), 4 * K);
        assert_eq!(pool.free_bytes(), 3 * K);
        assert_eq!(pool.n_free_blocks(), 1);
        assert_eq!(pool.take(3 * K).expect("take").addr(), last);
        pool.set_limit(0);
        assert_eq!(pool.free_bytes(), 0);
    }

    #[test]
    fn free_all_blocks_frees_idle_buffers_only() {
        let pool = HostPool::new();
        let kept = pool.take(2 * K).expect("take");
        for n in 1..=4 {
            drop(pool.take(n * K).expect("take"));
        }
        assert_eq!(pool.free_bytes(), 10 * K); // `kept` is in use: its class allocated anew
        pool.free_all_blocks();
        assert_eq!(pool.free_bytes(), 0);
        assert_eq!(pool.n_free_blocks(), 0);
        assert_eq!(pool.used_bytes(), 2 * K);
        assert_eq!(pool.total_bytes(), 2 * K);
        drop(kept);
        assert_eq!(pool.free_bytes(), 2 * K);
    }

    #[test]
    fn buffers_outliving_their_pool_handle_are_accounted() {
        let pool = HostPool::new();
        let other = pool.clone();
        let b = pool.take(K).expect("take");
        drop(pool);
        assert_eq!(other.used_bytes(), K);
        drop(b);
        assert_eq!(other.free_bytes(), K);
        assert_eq!(other.used_bytes(), 0);
    }

    #[test]
    fn impossible_sizes_are_errors() {
        let pool = HostPool::new();
        assert_eq!(
            pool.take(usize::MAX).err(),
            Some(HostPoolError::TooLarge { bytes: usize::MAX })
        );
        // representable but far more than any machine has
        let bytes = 1usize << 62;
        assert_eq!(
            pool.take(bytes).err(),
            Some(HostPoolError::OutOfMemory {
                bytes,
                class: bytes
            })
        );
        assert_eq!(pool.used_bytes(), 0);
        assert!(pool
            .take(1usize << 62)
            .is_err_and(|e| e.to_string().contains("out of host memory")));
    }

    #[test]
    fn limits_parse_from_the_environment_format() {
        assert_eq!(parse_limit("0"), Ok(0));
        assert_eq!(parse_limit(" 1073741824\n"), Ok(1 << 30));
        for bad in ["", "-1", "1GiB", "1.5", "abc"] {
            let err = parse_limit(bad).expect_err(bad);
            assert_eq!(
                err,
                HostPoolError::InvalidLimit {
                    value: bad.to_string()
                }
            );
            assert!(err.to_string().contains(LIMIT_ENV));
        }
    }

    #[test]
    fn concurrent_take_and_drop_from_8_threads() {
        let pool = HostPool::with_limit(24 * K);
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let pool = pool.clone();
                s.spawn(move || {
                    for i in 0..300usize {
                        let bytes = (1 + (i + t as usize) % 5) * K - i % 3;
                        let mut b = pool.take(bytes).expect("take");
                        assert_eq!(b.addr() % ALIGNMENT, 0);
                        let mark = t.wrapping_mul(31).wrapping_add(i as u8);
                        fill(&mut b, mark);
                        std::thread::yield_now();
                        // nobody else wrote into it meanwhile
                        assert!(all_equal(&mut b, mark));
                    }
                });
            }
        });
        assert_eq!(pool.used_bytes(), 0);
        assert!(pool.free_bytes() <= 24 * K);
        assert_eq!(pool.total_bytes(), pool.free_bytes());
        pool.free_all_blocks();
        assert_eq!(pool.total_bytes(), 0);
    }
}
