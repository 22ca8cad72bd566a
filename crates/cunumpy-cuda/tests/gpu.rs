//! Driver and NVRTC tests. The ones marked `ignore` need a CUDA GPU with a driver and NVRTC:
//! run them with `cargo test -p cunumpy-cuda -- --ignored` on the GPU machine. NVRTC is found
//! by the standard search; extra Python `site-packages` folders can be given in
//! `CUNUMPY_TEST_PYTHON_PATHS` (colon-separated).

#![allow(clippy::unwrap_used)]

use std::ffi::c_void;
use std::path::PathBuf;
use std::time::Instant;

use cunumpy_core::launch::LaunchShape;
use cunumpy_cuda::cache::{compile_cached, CompileRequest, KernelCache};
use cunumpy_cuda::driver::{DeviceBuffer, Driver, Event, Module, StreamHandle};
use cunumpy_cuda::nvrtc::{ImageKind, Nvrtc};
use cunumpy_cuda::{backend_info, CudaError};

fn python_paths() -> Vec<PathBuf> {
    std::env::var("CUNUMPY_TEST_PYTHON_PATHS")
        .map(|v| {
            v.split(':')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

fn nvrtc() -> &'static Nvrtc {
    Nvrtc::get_or_load(&python_paths()).unwrap()
}

/// The driver, device 0's primary context made current, and device 0's architecture.
fn setup() -> (&'static Driver, (u32, u32)) {
    let driver = Driver::get().unwrap();
    driver.ensure_context(0).unwrap();
    let info = driver.device_info(0).unwrap();
    (driver, info.compute_capability)
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn run_saxpy(module: &Module, name: &str) {
    let func = module.function(name).unwrap();
    let n: i32 = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = vec![1.0; n as usize];
    let dx = DeviceBuffer::from_slice(&x).unwrap();
    let dy = DeviceBuffer::from_slice(&y).unwrap();
    let mut a: f32 = 2.0;
    let mut px = dx.device_ptr();
    let mut py = dy.device_ptr();
    let mut nn = n;
    let mut params: [*mut c_void; 4] = [
        (&mut a as *mut f32).cast(),
        (&mut px as *mut u64).cast(),
        (&mut py as *mut u64).cast(),
        (&mut nn as *mut i32).cast(),
    ];
    // SAFETY: four parameters of the right types; both buffers hold `n` floats and outlive the
    // synchronize below; legacy default stream; the primary context is current.
    unsafe {
        func.launch(
            &LaunchShape {
                grid: [(n as u32).div_ceil(128), 1, 1],
                block: [128, 1, 1],
            },
            0,
            StreamHandle::LEGACY_DEFAULT,
            params.as_mut_ptr(),
        )
    }
    .unwrap();
    Driver::get()
        .unwrap()
        .synchronize_stream(StreamHandle::LEGACY_DEFAULT)
        .unwrap();
    let out: Vec<f32> = dy.to_vec(n as usize).unwrap();
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32 + 1.0);
    }
}

#[test]
fn without_a_gpu_loading_fails_cleanly() {
    // On a machine without CUDA this is an error naming what was tried, never a panic; on a
    // GPU machine it succeeds. Either way `backend_info` describes it.
    match Driver::get() {
        Ok(driver) => assert!(driver.version() > 0),
        Err(err) => {
            let text = err.to_string();
            assert!(text.contains("libcuda"), "{text}");
            // The failure is kept: a second call gives the same error.
            assert_eq!(Driver::get().err().map(|e| e.to_string()), Some(text));
        }
    }
    let info = backend_info(&python_paths());
    let text = info.to_string();
    assert!(text.contains("CUDA driver:"), "{text}");
    assert!(text.contains("NVRTC:"), "{text}");
    if let Err(e) = &info.nvrtc {
        assert!(e.contains("libnvrtc"), "{e}");
        assert!(Nvrtc::load_failure().is_some());
    }
}

#[test]
#[ignore = "needs a GPU"]
fn device_info_and_primary_context() {
    let driver = Driver::get().unwrap();
    assert!(driver.device_count().unwrap() >= 1);
    let info = driver.device_info(0).unwrap();
    assert!(!info.name.is_empty());
    assert!(info.compute_capability.0 >= 5);
    assert!(info.sm_count > 0);
    assert!(info.max_threads_per_block >= 512);
    assert!(info.max_block_dims[0] >= 512);
    assert!(info.max_grid_dims[0] >= 65535);
    assert!(info.shared_mem_per_block >= 48 * 1024);
    assert!(info.shared_mem_per_block_optin >= info.shared_mem_per_block);
    assert!(info.total_memory > 0);
    println!("{info:?}");

    // A fresh thread has no context; ensure_context makes the primary one current, and every
    // thread gets the same one.
    let main_ctx = std::thread::spawn(|| {
        let d = Driver::get().unwrap();
        assert!(d.current_context().unwrap().is_none());
        let ctx = d.ensure_context(0).unwrap();
        assert!(ctx.made_current);
        let again = d.ensure_context(0).unwrap();
        assert!(!again.made_current);
        assert_eq!(d.current_device().unwrap(), 0);
        ctx.as_raw() as usize
    })
    .join()
    .unwrap();
    let other =
        std::thread::spawn(|| Driver::get().unwrap().ensure_context(0).unwrap().as_raw() as usize)
            .join()
            .unwrap();
    assert_eq!(main_ctx, other);
    let (free, total) = {
        driver.ensure_context(0).unwrap();
        driver.mem_info().unwrap()
    };
    assert!(free <= total && total > 0);
}

#[test]
#[ignore = "needs a GPU"]
fn compile_load_and_launch_cubin() {
    let (_, arch) = setup();
    let nvrtc = nvrtc();
    println!(
        "NVRTC {:?} from {} (builtins {:?}); archs {:?}",
        nvrtc.version(),
        nvrtc.library_path(),
        nvrtc.builtins_path(),
        nvrtc.supported_archs()
    );
    let compiled = nvrtc
        .compile(SAXPY, "saxpy", &["-std=c++17".to_string()], &[], arch)
        .unwrap();
    assert_eq!(compiled.kind, ImageKind::Cubin);
    assert_eq!(compiled.arch, arch);
    assert!(compiled.image.starts_with(b"\x7fELF"));
    let module = Module::load(&compiled.image).unwrap();
    run_saxpy(&module, "saxpy");
    let attrs = module.function("saxpy").unwrap().attributes().unwrap();
    assert!(attrs.max_threads_per_block >= 128);
    assert!(attrs.num_regs > 0);
}

#[test]
#[ignore = "needs a GPU"]
fn ptx_for_an_unknown_arch_loads() {
    let (_, arch) = setup();
    let nvrtc = nvrtc();
    // An architecture NVRTC does not list, just above the device's: PTX for the highest
    // supported one at or below it, which is the device's own.
    let compiled = nvrtc
        .compile(SAXPY, "saxpy", &[], &[], (arch.0, 9))
        .unwrap();
    if arch.1 != 9 {
        assert_eq!(compiled.kind, ImageKind::Ptx);
        assert!(compiled.arch <= (arch.0, 9));
        // PTX for an architecture above the device's would not load; only test when it is not.
        if compiled.arch <= arch {
            let module = Module::load(&compiled.image).unwrap();
            run_saxpy(&module, "saxpy");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn templates_and_name_expressions() {
    let (_, arch) = setup();
    let src = r#"
template <typename T, int K>
__global__ void scale(T* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * T(K);
}
"#;
    let names = vec![
        "scale<float, 3>".to_string(),
        "scale<double, 2>".to_string(),
    ];
    let compiled = nvrtc().compile(src, "scale", &[], &names, arch).unwrap();
    assert_eq!(compiled.lowered_names.len(), 2);
    let lowered = compiled
        .lowered_name("scale<float, 3>")
        .unwrap()
        .to_string();
    assert!(lowered.starts_with("_Z"), "{lowered}");
    let module = Module::load(&compiled.image).unwrap();
    let func = module.function(&lowered).unwrap();
    let data: Vec<f32> = vec![1.0, 2.0, 3.0];
    let buf = DeviceBuffer::from_slice(&data).unwrap();
    let mut ptr = buf.device_ptr();
    let mut n: i32 = 3;
    let mut params: [*mut c_void; 2] = [(&mut ptr as *mut u64).cast(), (&mut n as *mut i32).cast()];
    // SAFETY: (float*, int) parameters; the buffer holds 3 floats; the context is current.
    unsafe {
        func.launch(
            &LaunchShape {
                grid: [1, 1, 1],
                block: [32, 1, 1],
            },
            0,
            StreamHandle::LEGACY_DEFAULT,
            params.as_mut_ptr(),
        )
    }
    .unwrap();
    assert_eq!(buf.to_vec::<f32>(3).unwrap(), vec![3.0, 6.0, 9.0]);
}

#[test]
#[ignore = "needs a GPU"]
fn compile_error_carries_log_options_and_source() {
    let (_, arch) = setup();
    let src = "__global__ void broken(float* x) {\n    x[0] = undefined_name;\n}\n";
    let err = nvrtc()
        .compile(src, "broken", &["-DFOO=1".to_string()], &[], arch)
        .unwrap_err();
    let compile = err.as_compile_error().unwrap();
    assert_eq!(compile.program_name, "broken");
    assert!(compile.log.contains("undefined_name"), "{}", compile.log);
    assert!(compile.options.iter().any(|o| o == "-DFOO=1"));
    assert!(compile
        .options
        .iter()
        .any(|o| o.starts_with("--gpu-architecture=")));
    assert!(compile
        .numbered_source
        .contains("   2 |     x[0] = undefined_name;"));
    let text = err.to_string();
    assert!(
        text.contains("`broken`") && text.contains("undefined_name"),
        "{text}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn headers_from_include_dirs_and_the_disk_cache() {
    let (_, arch) = setup();
    let dir = tempfile::tempdir().unwrap();
    let inc = dir.path().join("inc");
    std::fs::create_dir_all(inc.join("mylib")).unwrap();
    let header = inc.join("mylib/twice.cuh");
    std::fs::write(
        &header,
        "__device__ inline float twice(float v) { return 2.0f * v; }\n",
    )
    .unwrap();
    let src = "#include <mylib/twice.cuh>\nextern \"C\" __global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n";
    let headers =
        cunumpy_core::includes::resolve_includes(src, None, std::slice::from_ref(&inc), &[]);
    assert_eq!(headers.len(), 1);
    let options = vec![format!("-I{}", inc.display())];
    let cache = KernelCache::new(dir.path().join("cache"));
    let request = CompileRequest {
        source: src,
        program_name: "k",
        options: &options,
        name_expressions: &[],
        headers: &headers,
        arch,
    };
    let first = compile_cached(nvrtc(), Some(&cache), &request).unwrap();
    assert!(!first.hit);
    assert!(first.store_error.is_none(), "{:?}", first.store_error);
    let second = compile_cached(nvrtc(), Some(&cache), &request).unwrap();
    assert!(second.hit);
    assert_eq!(first.compiled, second.compiled);
    Module::load(&second.compiled.image)
        .unwrap()
        .function("k")
        .unwrap();

    // Editing the header changes the key: a miss.
    std::fs::write(
        &header,
        "__device__ inline float twice(float v) { return v + v; }\n",
    )
    .unwrap();
    let third = compile_cached(nvrtc(), Some(&cache), &request).unwrap();
    assert!(!third.hit);
    assert_ne!(third.key, first.key);

    // A corrupted entry is recompiled, never loaded.
    let path = cache.path_for(&third.key).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let fourth = compile_cached(nvrtc(), Some(&cache), &request).unwrap();
    assert!(!fourth.hit);
    assert_eq!(fourth.compiled.image, third.compiled.image);
}

#[test]
#[ignore = "needs a GPU"]
fn dynamic_shared_memory_opt_in() {
    let (driver, arch) = setup();
    let info = driver.device_info(0).unwrap();
    let src = r#"
extern "C" __global__ void smem(float* out) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
"#;
    let compiled = nvrtc().compile(src, "smem", &[], &[], arch).unwrap();
    let module = Module::load(&compiled.image).unwrap();
    let func = module.function("smem").unwrap();
    let big = info.shared_mem_per_block_optin - func.attributes().unwrap().static_shared_bytes;
    let out = DeviceBuffer::alloc(256 * 4).unwrap();
    let mut ptr = out.device_ptr();
    let mut params: [*mut c_void; 1] = [(&mut ptr as *mut u64).cast()];
    if big > info.shared_mem_per_block {
        // Above the default limit the launch fails until the kernel opts in.
        // SAFETY: one float* parameter; the buffer holds 256 floats; the context is current.
        let refused = unsafe {
            func.launch(
                &LaunchShape {
                    grid: [1, 1, 1],
                    block: [256, 1, 1],
                },
                big,
                StreamHandle::LEGACY_DEFAULT,
                params.as_mut_ptr(),
            )
        };
        assert!(
            matches!(refused, Err(CudaError::Launch { .. })),
            "{refused:?}"
        );
    }
    func.set_max_dynamic_shared(big).unwrap();
    assert_eq!(func.attributes().unwrap().max_dynamic_shared_bytes, big);
    // SAFETY: as above.
    unsafe {
        func.launch(
            &LaunchShape {
                grid: [1, 1, 1],
                block: [256, 1, 1],
            },
            big,
            StreamHandle::LEGACY_DEFAULT,
            params.as_mut_ptr(),
        )
    }
    .unwrap();
    let v: Vec<f32> = out.to_vec(256).unwrap();
    assert_eq!(v[0], 255.0);
    assert_eq!(v[255], 0.0);
}

#[test]
#[ignore = "needs a GPU"]
fn launch_errors_name_the_kernel() {
    let (_, arch) = setup();
    let compiled = nvrtc().compile(SAXPY, "saxpy", &[], &[], arch).unwrap();
    let module = Module::load(&compiled.image).unwrap();
    let func = module.function("saxpy").unwrap();
    let mut a: f32 = 0.0;
    let mut p: u64 = 0;
    let mut q: u64 = 0;
    let mut n: i32 = 0;
    let mut params: [*mut c_void; 4] = [
        (&mut a as *mut f32).cast(),
        (&mut p as *mut u64).cast(),
        (&mut q as *mut u64).cast(),
        (&mut n as *mut i32).cast(),
    ];
    // SAFETY: n = 0, so the kernel touches no memory; the launch itself is refused (block
    // too large) before running.
    let err = unsafe {
        func.launch(
            &LaunchShape {
                grid: [1, 1, 1],
                block: [4096, 1, 1],
            },
            0,
            StreamHandle::LEGACY_DEFAULT,
            params.as_mut_ptr(),
        )
    }
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`saxpy`") && text.contains("[4096, 1, 1]"),
        "{text}"
    );
    assert!(module.function("no_such_kernel").is_err());
    assert!(matches!(
        Module::load(b"\x7fELF garbage"),
        Err(CudaError::InvalidArgument(_))
    ));
    assert!(matches!(
        Module::load(b".version 99.0\n.target sm_90\nthis is not ptx\n"),
        Err(CudaError::ModuleLoad { .. })
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn raw_launch_floor_and_events() {
    let (_, arch) = setup();
    let src = "extern \"C\" __global__ void empty(int x) {}\n";
    let compiled = nvrtc().compile(src, "empty", &[], &[], arch).unwrap();
    let module = Module::load(&compiled.image).unwrap();
    let func = module.function("empty").unwrap();
    let mut x: i32 = 0;
    let mut params: [*mut c_void; 1] = [(&mut x as *mut i32).cast()];
    let start = Event::new().unwrap();
    let end = Event::new().unwrap();
    start.record(StreamHandle::LEGACY_DEFAULT).unwrap();
    let one = LaunchShape {
        grid: [1, 1, 1],
        block: [1, 1, 1],
    };
    let t0 = Instant::now();
    for _ in 0..10_000 {
        // SAFETY: one int parameter; the kernel touches no memory; the context is current.
        unsafe { func.launch(&one, 0, StreamHandle::LEGACY_DEFAULT, params.as_mut_ptr()) }.unwrap();
    }
    Driver::get()
        .unwrap()
        .synchronize_stream(StreamHandle::LEGACY_DEFAULT)
        .unwrap();
    let elapsed = t0.elapsed();
    end.record(StreamHandle::LEGACY_DEFAULT).unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    println!(
        "raw cuLaunchKernel floor: {:.2} us per launch (events: {:.2} us)",
        elapsed.as_secs_f64() * 1e6 / 10_000.0,
        ms as f64 * 1e3 / 10_000.0
    );
    assert!(ms > 0.0);
    let driver = Driver::get().unwrap();
    assert!(driver.stream_is_idle(StreamHandle::LEGACY_DEFAULT).unwrap());
    driver.synchronize_context().unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn parallel_compiles() {
    let (_, arch) = setup();
    let t0 = Instant::now();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let src = format!(
                    "extern \"C\" __global__ void k{i}(float* x) {{ x[threadIdx.x] += {i}.0f; }}\n"
                );
                nvrtc()
                    .compile(&src, &format!("k{i}"), &[], &[], arch)
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        assert!(!h.join().unwrap().image.is_empty());
    }
    println!("8 parallel compiles: {:?}", t0.elapsed());
}
