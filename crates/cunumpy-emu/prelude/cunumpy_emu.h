// cunumpy-emu prelude: CUDA C compiled as host C++ and run on the CPU.
//
// This header is prepended (by the cunumpy-emu crate) to a kernel's source. It is ONE translation
// unit: everything here is defined in the header.
//
// Execution model
// - A launch walks the grid block by block. One block runs entirely on one host thread (a
//   "worker"); blocks may run on several workers at once (opt-in, `workers > 1`).
// - Loop mode (kernels with no barrier and no warp intrinsic): the threads of a block run one
//   after the other in plain nested loops; the kernel is called directly and can be inlined.
// - Fiber mode (kernels that use __syncthreads, __syncwarp, shuffles, votes, ...; or any kernel
//   under a shuffle seed): every thread of the block is a fiber with its own stack. A scheduler
//   on the worker's own stack switches between them. Barriers and warp operations are rendezvous
//   points: a fiber that arrives parks itself; the last one to arrive releases the others.
// - Context switch: a hand-written switch on x86-64 (callee-saved registers, MXCSR and the x87
//   control word; no signal-mask system call), ucontext elsewhere.
// - `__shared__` is `static thread_local`: all fibers of a block run on the same host thread and
//   so see one instance; blocks running at the same time run on different host threads and so
//   see different instances. `extern __shared__` arrays are rewritten (by the crate) to point into
//   a per-worker buffer of `shared_mem` bytes. Shared memory is not cleared between blocks.
// - Errors (__trap, failed assert, out-of-bounds access, deadlock) end the launch with a message;
//   they never end the process.
#pragma once
#ifndef CUNUMPY_EMU_PRELUDE
#define CUNUMPY_EMU_PRELUDE 1
#define CUNUMPY_EMULATION 1

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>

#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <ctime>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <limits>
#include <math.h>
#include <new>
#include <string>
#include <pthread.h>
#include <signal.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
// Generated kernels inline their helpers on the GPU (CUNUMPY_PORT_HELPER, cunumpy-port); here
// the C++ compiler chooses, which builds them several times faster and computes the same.
#define CUNUMPY_PORT_HELPER
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
#define __grid_constant__
#define CUNUMPY_EMU_HIDDEN __attribute__((visibility("hidden")))

// ---------------------------------------------------------------- vector types
#define CNE_V1(N, T, A) struct __attribute__((aligned(A))) N { T x; }; \
  inline N make_##N(T x) { N r; r.x = x; return r; }
#define CNE_V2(N, T, A) struct __attribute__((aligned(A))) N { T x, y; }; \
  inline N make_##N(T x, T y) { N r; r.x = x; r.y = y; return r; }
#define CNE_V3(N, T) struct N { T x, y, z; }; \
  inline N make_##N(T x, T y, T z) { N r; r.x = x; r.y = y; r.z = z; return r; }
#define CNE_V4(N, T, A) struct __attribute__((aligned(A))) N { T x, y, z, w; }; \
  inline N make_##N(T x, T y, T z, T w) { N r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
#define CNE_VEC(P, T) CNE_V1(P##1, T, sizeof(T)) CNE_V2(P##2, T, 2 * sizeof(T)) CNE_V3(P##3, T) \
  CNE_V4(P##4, T, (4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)))
CNE_VEC(char, signed char)
CNE_VEC(uchar, unsigned char)
CNE_VEC(short, short)
CNE_VEC(ushort, unsigned short)
CNE_VEC(int, int)
CNE_VEC(uint, unsigned int)
CNE_VEC(long, long)
CNE_VEC(ulong, unsigned long)
CNE_VEC(longlong, long long)
CNE_VEC(ulonglong, unsigned long long)
CNE_VEC(float, float)
CNE_VEC(double, double)
#undef CNE_VEC
#undef CNE_V1
#undef CNE_V2
#undef CNE_V3
#undef CNE_V4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------- built-in variables
// Per host thread; in fiber mode the scheduler writes them before it switches into a fiber.
thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;
static constexpr int warpSize = 32;

namespace cunumpy_emu {

// ---------------------------------------------------------------- errors
enum fault_code : int { ok = 0, fault_trap = 1, fault_bounds = 2, fault_assert = 3, fault_deadlock = 4, fault_other = 5, fault_invalid = 6, fault_race = 7 };

struct kernel_error {
  int code;
  std::string message;
};

thread_local const char* tl_kernel = "?";
thread_local std::string tl_last_print;   // the last line printf wrote on this host thread
thread_local std::jmp_buf* tl_jump = nullptr;  // where a failed assert lands
thread_local kernel_error tl_pending;          // the error carried by that jump

inline std::string where() {
  char buf[160];
  std::snprintf(buf, sizeof buf, "thread (%u,%u,%u) of block (%u,%u,%u)", threadIdx.x, threadIdx.y,
                threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z);
  return buf;
}

[[noreturn]] inline void raise(int code, const std::string& what) {
  std::string msg = std::string("kernel '") + tl_kernel + "': " + what + " in " + where();
  if (!tl_last_print.empty()) msg += "; its last printf output: \"" + tl_last_print + "\"";
  throw kernel_error{code, msg};
}

// ---------------------------------------------------------------- hardware faults
// A kernel that reads or writes through NULL or a pointer into no mapped memory, overflows a
// fiber stack, or divides by zero where the source was not rewritten (a #define body, a
// header) raises SIGSEGV, SIGBUS or SIGFPE. While a host thread runs a launch it is "armed":
// the handler records the fault (plain values only) and jumps back to the thread's landing
// point, as a failed assert does; the launch fails with a message and the process lives on.
// A signal on any other thread goes to the handler that was installed before ours.
thread_local volatile int tl_signal = 0;        // the signal that ended the current thread
thread_local const void* volatile tl_signal_addr = nullptr;
constexpr int kArmedSlots = 256;
inline std::atomic<unsigned long> g_armed[kArmedSlots];  // pthread_self() of armed threads (0: free)
inline struct sigaction g_previous[4];
inline std::atomic<int> g_installed_mask{0};
inline const int kFaultSignals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
inline bool in_guard_page(const void* addr);  // defined with the fiber stacks

inline int arm_slot() {
  unsigned long me = (unsigned long)pthread_self();
  for (int i = 0; i < kArmedSlots; i++) {
    unsigned long free_slot = 0;
    if (g_armed[i].load(std::memory_order_relaxed) == me) return i;
    if (g_armed[i].compare_exchange_strong(free_slot, me)) return i;
  }
  return -1;  // more than 256 host threads in launches at once: those run unprotected
}
inline void disarm(int slot) {
  if (slot >= 0) g_armed[slot].store(0, std::memory_order_release);
}
inline bool armed_thread() {
  unsigned long me = (unsigned long)pthread_self();
  for (int i = 0; i < kArmedSlots; i++)
    if (g_armed[i].load(std::memory_order_acquire) == me) return true;
  return false;
}

static void on_fault(int sig, siginfo_t* info, void* uctx) {
  if (armed_thread() && tl_jump) {
    tl_signal = sig;
    tl_signal_addr = info ? info->si_addr : nullptr;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    std::longjmp(*tl_jump, 2);
  }
  for (int k = 0; k < 4; k++) {
    if (kFaultSignals[k] != sig) continue;
    struct sigaction& prev = g_previous[k];
    if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
      prev.sa_sigaction(sig, info, uctx);
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
    } else {
      signal(sig, SIG_DFL);  // returning re-runs the faulting instruction, which then ends the process
    }
    return;
  }
}

// Puts the handler in place (again, when someone replaced it since) and gives this host thread
// an alternate signal stack, so that a fiber stack overflow can be reported too.
inline void install_fault_handlers() {
  static std::atomic_flag busy = ATOMIC_FLAG_INIT;
  while (busy.test_and_set(std::memory_order_acquire)) {}
  for (int k = 0; k < 4; k++) {
    struct sigaction cur;
    if (sigaction(kFaultSignals[k], nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == &on_fault) continue;
    struct sigaction mine;
    std::memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = &on_fault;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&mine.sa_mask);
    if (sigaction(kFaultSignals[k], &mine, &g_previous[k]) == 0) g_installed_mask |= 1 << k;
  }
  busy.clear(std::memory_order_release);
  stack_t ss;
  if (sigaltstack(nullptr, &ss) == 0 && (ss.ss_flags & SS_DISABLE)) {
    static thread_local std::vector<char> alt;
    alt.resize(128 * 1024);
    stack_t mine;
    mine.ss_sp = alt.data();
    mine.ss_size = alt.size();
    mine.ss_flags = 0;
    sigaltstack(&mine, nullptr);
  }
}

// The error a jump to a landing point carries: a recorded signal, else `tl_pending`.
inline kernel_error landed_error() {
  int sig = tl_signal;
  if (!sig) return tl_pending;
  tl_signal = 0;
  const void* addr = tl_signal_addr;
  char buf[400];
  int code = fault_bounds;
  if (sig == SIGILL) {
    code = fault_other;
    std::snprintf(buf, sizeof buf,
                  "illegal instruction (SIGILL): undefined behaviour the host compiler turned into a trap, such "
                  "as a function that returns a value without a return statement");
  } else if (sig == SIGFPE) {
    code = fault_other;
    std::snprintf(buf, sizeof buf,
                  "arithmetic fault (SIGFPE): an integer division by zero or MIN / -1 that the emulator could "
                  "not rewrite (inside a #define body or an included header)");
  } else if (in_guard_page(addr)) {
    code = fault_other;
    std::snprintf(buf, sizeof buf,
                  "stack overflow: the thread used more than its fiber stack (deep recursion or a large local "
                  "array; the emulator's stack_size option sets the size)");
  } else if ((uintptr_t)addr < 65536) {
    std::snprintf(buf, sizeof buf,
                  "invalid memory access at address %p: through a NULL pointer (a pointer parameter given None, "
                  "or a pointer never set)", addr);
  } else {
    std::snprintf(buf, sizeof buf,
                  "invalid memory access at address %p (%s): through a pointer that points into no array "
                  "of the launch (not from a known allocation, or far outside one)",
                  addr, sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
  }
  std::string msg = std::string("kernel '") + tl_kernel + "': " + buf + " in " + where();
  if (!tl_last_print.empty()) msg += "; its last printf output: \"" + tl_last_print + "\"";
  return kernel_error{code, msg};
}

inline void race_settle();  // see "races" below

// ---------------------------------------------------------------- fibers
#if defined(__x86_64__)
extern "C" CUNUMPY_EMU_HIDDEN void cunumpy_emu_switch(void** save_sp, void* to_sp);
extern "C" CUNUMPY_EMU_HIDDEN void cunumpy_emu_fiber_start();
__asm__(R"(
.text
.p2align 4
.globl cunumpy_emu_switch
.hidden cunumpy_emu_switch
.type cunumpy_emu_switch,@function
cunumpy_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size cunumpy_emu_switch, .-cunumpy_emu_switch
.p2align 4
.globl cunumpy_emu_fiber_start
.hidden cunumpy_emu_fiber_start
.type cunumpy_emu_fiber_start,@function
cunumpy_emu_fiber_start:
    movq %r12, %rdi
    callq *%r13
    ud2
.size cunumpy_emu_fiber_start, .-cunumpy_emu_fiber_start
)");
#endif

enum class fstate : unsigned char { runnable, at_barrier, at_warp, done };

struct fiber {
  void* sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t uc;
#endif
  uint3 tid{};
  unsigned lin = 0;
  fstate st = fstate::runnable;
  unsigned long long result = 0;
  int bad_src = -1;  // a shuffle of this lane read an inactive lane or one outside its mask
  unsigned bad_mask = 0;
  std::jmp_buf jump;
};

enum warp_op : int { op_sync, op_shfl, op_up, op_down, op_xor, op_ballot, op_match_any, op_reduce_add,
                     op_reduce_min_u, op_reduce_max_u, op_reduce_min_s, op_reduce_max_s, op_reduce_and,
                     op_reduce_or, op_reduce_xor };

struct warp_group {
  unsigned mask = 0, arrived = 0;
  int op = 0, width = 32;
  unsigned long long vals[32];
  int args[32];
};

struct warp_state {
  unsigned live = 0;  // lanes that exist and have not returned
  unsigned epoch = 0;  // completed warp operations (orders the lanes' accesses, for races)
  std::vector<warp_group> open;
};

// Fiber stacks: one mapping, one guard page below each stack. Kept per host thread.
struct stack_pool {
  char* base = nullptr;
  size_t each = 0, count = 0, mapped = 0;
  ~stack_pool() { release(); }
  void release() {
    if (base) munmap(base, mapped);
    base = nullptr;
    count = 0;
  }
  bool ensure(size_t n, size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    if (base && n <= count && size == each - page) return true;
    release();
    each = size + page;
    mapped = each * n;
    void* m = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return false;
    base = static_cast<char*>(m);
    count = n;
    for (size_t i = 0; i < n; i++) mprotect(base + i * each, page, PROT_NONE);
    return true;
  }
  char* top(size_t i) const { return base + (i + 1) * each; }
};

struct sched;
thread_local sched* tl_sched = nullptr;  // null in loop mode

struct sched {
  std::vector<fiber> fibers;
  std::vector<unsigned> queue;  // ring buffer of runnable fibers
  size_t q_head = 0, q_len = 0;
  std::vector<warp_state> warps;
  fiber* cur = nullptr;
  void* main_sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t main_uc;
#endif
  unsigned n_live = 0, n_at_barrier = 0, n_at_warp = 0;
  int barrier_acc = 0, barrier_result = 0, barrier_kind = 0;
  unsigned barrier_epoch = 0;  // completed __syncthreads() of this block (for races)
  bool shuffle = false;
  unsigned long long rng = 0;
  bool failed = false;
  kernel_error error;
  void (*body)(void*) = nullptr;
  void* ctx = nullptr;

  unsigned long long next_random() {
    unsigned long long z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  void push(unsigned i) {
    queue[(q_head + q_len) % queue.size()] = i;
    q_len++;
  }
  unsigned pop() {
    if (shuffle && q_len > 1) {
      size_t k = next_random() % q_len;
      size_t at = (q_head + k) % queue.size();
      std::swap(queue[at], queue[q_head]);
    }
    unsigned i = queue[q_head];
    q_head = (q_head + 1) % queue.size();
    q_len--;
    return i;
  }
  void fail(const kernel_error& e) {
    if (!failed) {
      failed = true;
      error = e;
    }
  }
  // Leave the current fiber and run the scheduler.
  void to_scheduler() {
#if defined(__x86_64__)
    cunumpy_emu_switch(&cur->sp, main_sp);
#else
    swapcontext(&cur->uc, &main_uc);
#endif
  }
  void wake(unsigned i) {
    fibers[i].st = fstate::runnable;
    push(i);
  }
};

inline void fiber_finish(sched* s);

inline void fiber_main(void* arg) {
  sched* s = static_cast<sched*>(arg);
  fiber* f = s->cur;
  if (setjmp(f->jump) == 0) {
    try {
      s->body(s->ctx);
    } catch (const kernel_error& e) {
      s->fail(e);
    } catch (const std::exception& e) {
      s->fail(kernel_error{fault_other, std::string("kernel '") + tl_kernel + "': C++ exception: " + e.what()});
    } catch (...) {
      s->fail(kernel_error{fault_other, std::string("kernel '") + tl_kernel + "': unknown C++ exception"});
    }
  } else {
    s->fail(landed_error());
  }
  fiber_finish(s);
  for (;;) s->to_scheduler();  // never resumed
}

#if !defined(__x86_64__)
inline void fiber_entry_uc(unsigned hi, unsigned lo) {
  fiber_main(reinterpret_cast<void*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
#endif

// Warp operations: a lane deposits its value; the last lane of the group computes every lane's
// result and wakes the others.
inline void complete_group(sched* s, unsigned w, warp_group& g) {
  s->warps[w].epoch++;
  const unsigned long long* v = g.vals;
  unsigned long long ballot = 0;
  for (unsigned l = 0; l < 32; l++)
    if ((g.arrived >> l & 1u) && v[l] != 0) ballot |= 1ull << l;
  for (unsigned l = 0; l < 32; l++) {
    if (!(g.arrived >> l & 1u)) continue;
    unsigned wd = (unsigned)g.width, a = (unsigned)g.args[l];
    long src = l;
    unsigned long long r = v[l];
    switch (g.op) {
      case op_sync: r = 0; break;
      case op_shfl: src = (long)((l & ~(wd - 1)) + (a & (wd - 1))); break;
      case op_up: src = ((l & (wd - 1)) < a) ? (long)l : (long)l - (long)a; break;
      case op_down: src = ((l & (wd - 1)) + a >= wd) ? (long)l : (long)(l + a); break;
      case op_xor: {
        unsigned t = l ^ a;
        src = (t >= (l / wd + 1) * wd || t > 31) ? (long)l : (long)t;
        break;
      }
      case op_ballot: r = ballot; break;
      case op_match_any: {
        unsigned m = 0;
        for (unsigned k = 0; k < 32; k++)
          if ((g.arrived >> k & 1u) && v[k] == v[l]) m |= 1u << k;
        r = m;
        break;
      }
      default: {
        unsigned long long acc = 0;
        bool first = true;
        for (unsigned k = 0; k < 32; k++) {
          if (!(g.arrived >> k & 1u)) continue;
          unsigned long long x = v[k];
          if (first) { acc = x; first = false; continue; }
          switch (g.op) {
            case op_reduce_add: acc = (unsigned)(acc + x); break;
            case op_reduce_min_u: acc = std::min((unsigned)acc, (unsigned)x); break;
            case op_reduce_max_u: acc = std::max((unsigned)acc, (unsigned)x); break;
            case op_reduce_min_s: acc = (unsigned)std::min((int)acc, (int)x); break;
            case op_reduce_max_s: acc = (unsigned)std::max((int)acc, (int)x); break;
            case op_reduce_and: acc &= x; break;
            case op_reduce_or: acc |= x; break;
            default: acc ^= x; break;
          }
        }
        r = acc;
        break;
      }
    }
    fiber& f = s->fibers[w * 32 + l];
    if (g.op >= op_shfl && g.op <= op_xor) {
      bool defined = src >= 0 && src < 32 && (g.arrived >> src & 1u);
      r = defined ? v[src] : v[l];
      if (!defined) {
        f.bad_src = (int)src;
        f.bad_mask = g.mask;
      }
    }
    f.result = r;
    if (f.st == fstate::at_warp) {
      s->n_at_warp--;
      // The lane that completes the group is running: it goes on without being queued (a
      // queued copy of a running fiber would fill the run queue of a warp-heavy kernel).
      if (&f == s->cur) f.st = fstate::runnable;
      else s->wake(w * 32 + l);
    }
  }
}

inline void check_groups(sched* s, unsigned w) {
  warp_state& ws = s->warps[w];
  for (size_t i = 0; i < ws.open.size();) {
    warp_group& g = ws.open[i];
    unsigned expected = g.mask & ws.live;
    if ((g.arrived & expected) == expected) {
      warp_group done = g;
      ws.open.erase(ws.open.begin() + (long)i);
      complete_group(s, w, done);
    } else {
      i++;
    }
  }
}

inline void fiber_finish(sched* s) {
  fiber* f = s->cur;
  f->st = fstate::done;
  s->n_live--;
  unsigned w = f->lin / 32, l = f->lin % 32;
  s->warps[w].live &= ~(1u << l);
  check_groups(s, w);
}

[[noreturn]] inline void no_scheduler(const char* what) {
  raise(fault_other, std::string("it called ") + what +
                         " but runs in loop mode (cunumpy-emu found no barrier or warp intrinsic in its "
                         "source; launch with force_fibers)");
}

inline unsigned long long warp_exchange(int op, unsigned mask, unsigned long long value, int arg, int width) {
  race_settle();
  sched* s = tl_sched;
  if (!s) {
    if (blockDim.x * blockDim.y * blockDim.z == 1 && (mask & 1u)) {
      warp_group g;
      g.mask = g.arrived = 1u;
      g.op = op;
      g.width = width;
      g.vals[0] = value;
      g.args[0] = arg;
      // A one-thread block: compute the result directly.
      unsigned long long ballot = value != 0;
      if (op == op_ballot) return ballot;
      if (op == op_match_any) return 1;
      if (op >= op_shfl && op <= op_xor) return value;
      return op == op_sync ? 0 : value;
    }
    no_scheduler("a warp intrinsic");
  }
  fiber* f = s->cur;
  unsigned w = f->lin / 32, l = f->lin % 32, bit = 1u << l;
  if (!(mask & bit)) raise(fault_invalid, "a warp intrinsic was called with a mask that does not contain the calling lane");
  if (width <= 0 || width > 32 || (width & (width - 1))) raise(fault_invalid, "a shuffle width must be a power of two up to 32");
  warp_state& ws = s->warps[w];
  warp_group* g = nullptr;
  for (auto& o : ws.open)
    if (o.mask == mask && !(o.arrived & bit)) { g = &o; break; }
  if (!g) {
    ws.open.emplace_back();
    g = &ws.open.back();
    g->mask = mask;
    g->op = op;
    g->width = width;
  } else if (g->op != op || g->width != width) {
    raise(fault_invalid, "lanes of one warp met at different warp intrinsics with the same mask");
  }
  g->vals[l] = value;
  g->args[l] = arg;
  g->arrived |= bit;
  f->st = fstate::at_warp;
  s->n_at_warp++;
  check_groups(s, w);  // completes the group when this lane is the last one
  if (f->st == fstate::at_warp) s->to_scheduler();
  if (f->bad_src >= 0) {
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "a shuffle read lane %d of warp %u, which is %s (mask 0x%08x): the value it returns is "
                  "undefined on a GPU",
                  f->bad_src, w, (f->bad_mask >> f->bad_src & 1u) ? "inactive (it has returned)" : "not in the mask",
                  f->bad_mask);
    f->bad_src = -1;
    raise(fault_invalid, buf);
  }
  return f->result;
}

inline int block_barrier(int kind, int pred) {
  race_settle();
  sched* s = tl_sched;
  if (!s) {
    if (blockDim.x * blockDim.y * blockDim.z == 1) return kind == 1 ? (pred != 0) : (pred != 0);
    no_scheduler("__syncthreads()");
  }
  fiber* f = s->cur;
  s->barrier_acc += pred != 0;
  s->barrier_kind = kind;
  f->st = fstate::at_barrier;
  s->n_at_barrier++;
  s->to_scheduler();
  return s->barrier_result;
}

// In shuffle mode: a chance to let another thread of the block run (called at accesses through
// pointer parameters), so read-modify-write races between threads show up.
inline void maybe_yield() {
  race_settle();
  sched* s = tl_sched;
  if (s && s->shuffle && (s->next_random() & 1u)) {
    s->cur->st = fstate::runnable;
    s->push((unsigned)(s->cur - s->fibers.data()));
    s->to_scheduler();
  }
}

// ---------------------------------------------------------------- checked pointer parameters
struct param_info {
  const char* kernel;
  const char* name;
  int index;
  bool bounded;
  unsigned long long bytes;
  const char* base;
};

[[noreturn]] inline void out_of_bounds(const param_info* info, long long byte_off, size_t elem) {
  char buf[400];
  long long idx = byte_off >= 0 ? byte_off / (long long)elem : -((-byte_off + (long long)elem - 1) / (long long)elem);
  if (!info->base) {
    std::snprintf(buf, sizeof buf,
                  "access through pointer parameter %d '%s', which is NULL (None was passed, or a null "
                  "pointer): element index %lld",
                  info->index, info->name, idx);
    raise(fault_bounds, buf);
  }
  std::snprintf(buf, sizeof buf,
                "out-of-bounds access through pointer parameter %d '%s': element index %lld (byte offset %lld, "
                "element size %zu) but the buffer has %llu bytes (%llu elements)",
                info->index, info->name, idx, byte_off, elem, info->bytes, info->bytes / (unsigned long long)elem);
  raise(fault_bounds, buf);
}


// ---------------------------------------------------------------- races
// With race detection on (checked builds, `detect_races`), every access through a pointer
// parameter to a scalar element is remembered until the thread's next access, barrier, warp
// operation or end: if the element's bytes changed meanwhile, the thread wrote it. A write to
// an element that another thread wrote in the same launch is a race unless the two are ordered:
// the same block and a __syncthreads() between them, or the same warp and a warp operation
// between them. Atomics are not writes here. A store of the value already there is not seen,
// and neither is an access through a pointer copied out of a parameter (documented).
struct write_rec {
  unsigned long long block;
  unsigned thread, barrier_epoch, warp_epoch;
  const param_info* info;
  unsigned elem;
};
struct race_detector {
  std::mutex lock;
  std::unordered_map<uintptr_t, write_rec> writes;
  size_t cap = size_t(1) << 20;  // addresses remembered at most (about 64 MiB)
};
thread_local race_detector* tl_race = nullptr;
struct pending_access {
  const void* addr = nullptr;
  const param_info* info = nullptr;
  unsigned size = 0;
  unsigned char before[8];
};
thread_local pending_access tl_access;

inline unsigned long long block_linear() {
  return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
}
inline unsigned thread_linear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

inline std::string thread_name(unsigned long long b, unsigned t) {
  unsigned bx = blockDim.x, by = blockDim.y;
  unsigned long long gx = gridDim.x, gy = gridDim.y;
  char buf[120];
  std::snprintf(buf, sizeof buf, "thread (%u,%u,%u) of block (%llu,%llu,%llu)", t % bx, (t / bx) % by, t / (bx * by),
                b % gx, (b / gx) % gy, b / (gx * gy));
  return buf;
}

inline void race_found(const write_rec& first, const void* addr) {
  const param_info* info = first.info;
  long long idx = (long long)((const char*)addr - info->base) / (long long)first.elem;
  std::string msg = std::string("kernel '") + tl_kernel + "': data race on " + info->name + "[" + std::to_string(idx) +
                    "] (pointer parameter " + std::to_string(info->index) + " '" + info->name +
                    "'): written by " + thread_name(first.block, first.thread) + " and by " +
                    thread_name(block_linear(), thread_linear()) +
                    " with no __syncthreads() or warp operation between them; on a GPU one of the two "
                    "updates can be lost (a read-modify-write such as `a[i] += v` needs atomicAdd, or one "
                    "writer per element)";
  throw kernel_error{fault_race, msg};
}

// Ends the current thread's pending access: a write when the element's bytes changed.
inline void race_settle() {
  pending_access& p = tl_access;
  if (!p.addr) return;
  const void* addr = p.addr;
  p.addr = nullptr;
  race_detector* r = tl_race;
  if (!r || std::memcmp(addr, p.before, p.size) == 0) return;
  sched* s = tl_sched;
  unsigned t = thread_linear();
  write_rec me{block_linear(), t, s ? s->barrier_epoch : 0u, s ? s->warps[t / 32].epoch : 0u, p.info, p.size};
  std::lock_guard<std::mutex> g(r->lock);
  auto it = r->writes.find((uintptr_t)addr);
  if (it == r->writes.end()) {
    if (r->writes.size() < r->cap) r->writes.emplace((uintptr_t)addr, me);
    return;
  }
  write_rec& w = it->second;
  bool same_thread = w.block == me.block && w.thread == me.thread;
  bool ordered = w.block == me.block &&
                 (w.barrier_epoch != me.barrier_epoch || (w.thread / 32 == t / 32 && w.warp_epoch != me.warp_epoch));
  if (!same_thread && !ordered) race_found(w, addr);
  w = me;
}

// Called by an access through a pointer parameter, after the bounds check.
template <class T>
inline void race_note(T* q, const param_info* info) {
  if constexpr ((std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) && !std::is_const_v<T> &&
                sizeof(T) <= 8) {
    if (tl_race && info && info->base) {
      pending_access& p = tl_access;
      p.addr = q;
      p.info = info;
      p.size = sizeof(T);
      std::memcpy(p.before, (const void*)q, sizeof(T));
    }
  }
}

// An atomic on `a`: the pending access (its address taken for the atomic) is not a write.
inline void race_atomic(const void* a) {
  if (tl_access.addr == a) tl_access.addr = nullptr;
}

template <class T>
struct ptr {
  T* p;
  const param_info* info;
  using element_type = T;

  T* check(long long i) const {
    T* q = p + i;
    if (info && (info->bounded || !info->base)) {
      long long off = (long long)(reinterpret_cast<const char*>(q) - info->base);
      if (off < 0 || (unsigned long long)off + sizeof(T) > info->bytes) out_of_bounds(info, off, sizeof(T));
    }
    return q;
  }
  T* raw() const { return p; }
  operator T*() const { return p; }
  template <class U, class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<U>, std::remove_cv_t<T>>>>
  explicit operator U*() const { return (U*)p; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
  T& operator[](I i) const {
    maybe_yield();
    T* q = check((long long)i);
    race_note(q, info);
    return *q;
  }
  T& operator*() const {
    maybe_yield();
    T* q = check(0);
    race_note(q, info);
    return *q;
  }
  T* operator->() const { return check(0); }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  ptr operator+(I i) const { return ptr{p + (long long)i, info}; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  friend ptr operator+(I i, const ptr& q) { return ptr{q.p + (long long)i, q.info}; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  ptr operator-(I i) const { return ptr{p - (long long)i, info}; }
  friend std::ptrdiff_t operator-(const ptr& a, const ptr& b) { return a.p - b.p; }
  friend std::ptrdiff_t operator-(const ptr& a, const T* b) { return a.p - b; }
  friend std::ptrdiff_t operator-(const T* a, const ptr& b) { return a - b.p; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  ptr& operator+=(I i) { p += (long long)i; return *this; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  ptr& operator-=(I i) { p -= (long long)i; return *this; }
  ptr& operator++() { ++p; return *this; }
  ptr operator++(int) { ptr r = *this; ++p; return r; }
  ptr& operator--() { --p; return *this; }
  ptr operator--(int) { ptr r = *this; --p; return r; }
  template <class U>
  ptr<U> as() const { return ptr<U>{reinterpret_cast<U*>(p), info}; }
};

template <class T> struct is_ptr : std::false_type {};
template <class T> struct is_ptr<ptr<T>> : std::true_type {};

// A pointer parameter in a checked build: `ptr<T>`, or `void*` unchanged.
template <class T>
using checked_param_t = std::conditional_t<std::is_void_v<T>, T*, ptr<T>>;

// `reinterpret_cast` in a checked build: a checked pointer cast to another pointer type stays
// checked against the same buffer.
template <class To, class From>
inline decltype(auto) reinterpret_cast_(From&& f) {
  using F = std::remove_cv_t<std::remove_reference_t<From>>;
  if constexpr (is_ptr<F>::value) {
    if constexpr (std::is_pointer_v<To> && !std::is_void_v<std::remove_pointer_t<To>>) {
      return f.template as<std::remove_pointer_t<To>>();
    } else {
      return reinterpret_cast<To>(f.p);
    }
  } else {
    return reinterpret_cast<To>(std::forward<From>(f));
  }
}

// ---------------------------------------------------------------- integer division
// The rewriter turns `a / b` into `a *::cunumpy_emu::div_v/ b` (and `%`, `/=`, `%=` alike):
// `*` binds as tightly as `/` and associates to the left, so `a * div_v` takes exactly the left
// operand and the following `/` exactly the right one. Integer operands then divide without the
// host's SIGFPE and give what the GPU gives (docs/testing-without-a-gpu.md has the table):
// - 32-bit (and narrower, promoted) operands: a zero divisor gives all bits set, quotient and
//   remainder (0xFFFFFFFF), as the GPU's 32-bit division sequence does;
// - 64-bit operands: the CUDA compiler divides two 64-bit values whose upper halves are both
//   zero with the 32-bit sequence ("bypass slow division"), so such an x / 0 and x % 0 give
//   0xFFFFFFFF zero-extended; other 64-bit operands go through the 64-bit routine, whose zero
//   divisor gives all 64 bits set;
// - MIN / -1 wraps to MIN, MIN % -1 is 0.
// Anything else (floats, user types with their own operators) is forwarded unchanged.
struct div_tag {};
struct mod_tag {};
inline constexpr div_tag div_v{};
inline constexpr mod_tag mod_v{};
template <class T>
struct div_lhs { T&& a; };
template <class T>
struct mod_lhs { T&& a; };
template <class T>
constexpr div_lhs<T> operator*(T&& a, div_tag) { return {static_cast<T&&>(a)}; }
template <class T>
constexpr mod_lhs<T> operator*(T&& a, mod_tag) { return {static_cast<T&&>(a)}; }

// Integers and unscoped enums (a scoped enum with its own operator/ is forwarded unchanged).
template <class T, class D = std::remove_cv_t<std::remove_reference_t<T>>>
inline constexpr bool int_like_v =
    std::is_integral_v<D> || (std::is_enum_v<D> && std::is_convertible_v<D, long long>);

// The value of x / 0 and x % 0 on the GPU (see above).
template <class R>
constexpr R by_zero(R x) {
  if constexpr (sizeof(R) == 8) {
    if ((static_cast<unsigned long long>(x) >> 32) == 0) return static_cast<R>(0xFFFFFFFFull);
  }
  return static_cast<R>(~static_cast<R>(0));
}
template <class A, class B>
constexpr auto int_divide(A a, B b) {
  using R = decltype(a / b);
  R x = static_cast<R>(a), y = static_cast<R>(b);
  if (y == 0) return by_zero(x);
  if constexpr (std::is_signed_v<R>) {
    if (y == static_cast<R>(-1) && x == std::numeric_limits<R>::min()) return x;
  }
  return static_cast<R>(x / y);
}
template <class A, class B>
constexpr auto int_remainder(A a, B b) {
  using R = decltype(a % b);
  R x = static_cast<R>(a), y = static_cast<R>(b);
  if (y == 0) return by_zero(x);
  if constexpr (std::is_signed_v<R>) {
    if (y == static_cast<R>(-1)) return static_cast<R>(0);
  }
  return static_cast<R>(x % y);
}
template <class T, class U>
constexpr decltype(auto) operator/(div_lhs<T> l, U&& b) {
  if constexpr (int_like_v<T> && int_like_v<U>) {
    return int_divide(+l.a, +b);
  } else {
    return static_cast<T&&>(l.a) / static_cast<U&&>(b);
  }
}
template <class T, class U>
constexpr decltype(auto) operator%(mod_lhs<T> l, U&& b) {
  if constexpr (int_like_v<T> && int_like_v<U>) {
    return int_remainder(+l.a, +b);
  } else {
    return static_cast<T&&>(l.a) % static_cast<U&&>(b);
  }
}
template <class T, class U>
constexpr decltype(auto) operator/=(div_lhs<T> l, U&& b) {
  if constexpr (int_like_v<T> && int_like_v<U> && !std::is_enum_v<std::remove_cv_t<std::remove_reference_t<T>>>) {
    l.a = static_cast<std::remove_cv_t<std::remove_reference_t<T>>>(int_divide(+l.a, +b));
    return static_cast<T&&>(l.a);
  } else {
    return static_cast<T&&>(l.a) /= static_cast<U&&>(b);
  }
}
template <class T, class U>
constexpr decltype(auto) operator%=(mod_lhs<T> l, U&& b) {
  if constexpr (int_like_v<T> && int_like_v<U> && !std::is_enum_v<std::remove_cv_t<std::remove_reference_t<T>>>) {
    l.a = static_cast<std::remove_cv_t<std::remove_reference_t<T>>>(int_remainder(+l.a, +b));
    return static_cast<T&&>(l.a);
  } else {
    return static_cast<T&&>(l.a) %= static_cast<U&&>(b);
  }
}

// ---------------------------------------------------------------- dynamic shared memory
thread_local unsigned char* tl_dyn_shared = nullptr;
template <class T>
inline T* dynamic_shared() { return reinterpret_cast<T*>(tl_dyn_shared); }
// `extern __shared__ T name[];` at namespace scope becomes one of these.
template <class T>
struct dynamic_shared_ref {
  operator T*() const { return dynamic_shared<T>(); }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  T& operator[](I i) const { return dynamic_shared<T>()[i]; }
};

}  // namespace cunumpy_emu

// ---------------------------------------------------------------- synchronization
inline void __syncthreads() { cunumpy_emu::block_barrier(0, 0); }
inline int __syncthreads_count(int p) { return cunumpy_emu::block_barrier(1, p); }
inline int __syncthreads_and(int p) { return cunumpy_emu::block_barrier(2, p); }
inline int __syncthreads_or(int p) { return cunumpy_emu::block_barrier(3, p); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { cunumpy_emu::warp_exchange(cunumpy_emu::op_sync, mask, 0, 0, 32); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned) {}
inline unsigned __activemask() {
  cunumpy_emu::sched* s = cunumpy_emu::tl_sched;
  if (!s) return 1u;
  return s->warps[s->cur->lin / 32].live;
}
inline unsigned __lanemask_lt() {
  unsigned l = cunumpy_emu::tl_sched ? cunumpy_emu::tl_sched->cur->lin % 32 : 0;
  return (1u << l) - 1u;
}

namespace cunumpy_emu {
template <class T>
inline unsigned long long to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move values of up to 8 bytes");
  unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace cunumpy_emu

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  return cunumpy_emu::from_bits<T>(cunumpy_emu::warp_exchange(cunumpy_emu::op_shfl, mask, cunumpy_emu::to_bits(var), src, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return cunumpy_emu::from_bits<T>(cunumpy_emu::warp_exchange(cunumpy_emu::op_up, mask, cunumpy_emu::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return cunumpy_emu::from_bits<T>(cunumpy_emu::warp_exchange(cunumpy_emu::op_down, mask, cunumpy_emu::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return cunumpy_emu::from_bits<T>(cunumpy_emu::warp_exchange(cunumpy_emu::op_xor, mask, cunumpy_emu::to_bits(var), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return (unsigned)cunumpy_emu::warp_exchange(cunumpy_emu::op_ballot, mask, pred != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  unsigned b = __ballot_sync(mask, 1);  // which lanes take part
  return __ballot_sync(mask, pred) == b;
}
inline int __uni_sync(unsigned mask, int pred) {
  unsigned b = __ballot_sync(mask, pred);
  return b == 0 || b == __ballot_sync(mask, 1);
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value) {
  return (unsigned)cunumpy_emu::warp_exchange(cunumpy_emu::op_match_any, mask, cunumpy_emu::to_bits(value), 0, 32);
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  unsigned same = __match_any_sync(mask, value);
  unsigned all = __ballot_sync(mask, 1);
  *pred = same == all;
  return same == all ? all : 0u;
}
#define CNE_REDUCE(NAME, T, OP) \
  inline T NAME(unsigned mask, T value) { \
    return (T)(unsigned)cunumpy_emu::warp_exchange(cunumpy_emu::OP, mask, (unsigned)value, 0, 32); }
CNE_REDUCE(__reduce_add_sync, unsigned, op_reduce_add)
CNE_REDUCE(__reduce_add_sync, int, op_reduce_add)
CNE_REDUCE(__reduce_min_sync, unsigned, op_reduce_min_u)
CNE_REDUCE(__reduce_min_sync, int, op_reduce_min_s)
CNE_REDUCE(__reduce_max_sync, unsigned, op_reduce_max_u)
CNE_REDUCE(__reduce_max_sync, int, op_reduce_max_s)
CNE_REDUCE(__reduce_and_sync, unsigned, op_reduce_and)
CNE_REDUCE(__reduce_or_sync, unsigned, op_reduce_or)
CNE_REDUCE(__reduce_xor_sync, unsigned, op_reduce_xor)
#undef CNE_REDUCE


// ---------------------------------------------------------------- cooperative groups
// The block-level part of <cooperative_groups.h> (its include is an empty stand-in): the
// block, tiles of 1..32 threads with their shuffles, votes and sync, and cg::reduce.
namespace cooperative_groups {
namespace detail {
inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
}  // namespace detail
class thread_block {
 public:
  void sync() const { __syncthreads(); }
  static unsigned thread_rank() { return detail::block_rank(); }
  static unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static unsigned num_threads() { return size(); }
  static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  static dim3 group_dim() { return blockDim; }
  static dim3 dim_threads() { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }
inline void sync(const thread_block& g) { g.sync(); }

template <unsigned N>
class thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "a tile has a power-of-two size up to 32");

 public:
  static unsigned lane() { return detail::block_rank() % 32; }
  static unsigned mask() {
    unsigned bits = N == 32 ? 0xffffffffu : ((1u << N) - 1u);
    return N == 32 ? bits : bits << (lane() / N * N);
  }
  void sync() const { __syncwarp(mask()); }
  static unsigned thread_rank() { return detail::block_rank() % N; }
  static constexpr unsigned size() { return N; }
  static constexpr unsigned num_threads() { return N; }
  static unsigned meta_group_rank() { return detail::block_rank() / N; }
  static unsigned meta_group_size() { return (thread_block::size() + N - 1) / N; }
  template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, (int)N); }
  template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, (int)N); }
  template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, (int)N); }
  template <class T> T shfl_xor(T v, int m) const { return __shfl_xor_sync(mask(), v, m, (int)N); }
  unsigned ballot(int pred) const {
    unsigned b = __ballot_sync(mask(), pred);
    return N == 32 ? b : (b >> (lane() / N * N)) & ((1u << N) - 1u);
  }
  int any(int pred) const { return ballot(pred) != 0; }
  int all(int pred) const { return ballot(pred) == (N == 32 ? 0xffffffffu : ((1u << N) - 1u)); }
};
template <unsigned N>
inline thread_block_tile<N> tiled_partition(const thread_block&) { return thread_block_tile<N>(); }
template <unsigned N, unsigned M>
inline thread_block_tile<N> tiled_partition(const thread_block_tile<M>&) {
  static_assert(N <= M, "a tile is partitioned into smaller tiles");
  return thread_block_tile<N>();
}
template <unsigned N>
inline void sync(const thread_block_tile<N>& g) { g.sync(); }

template <class T = void> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T = void> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T = void> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T = void> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T = void> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T = void> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };
// Every lane of the tile gets op applied over the tile's values (a butterfly of shfl_xor).
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& g, T value, Op op) {
  for (unsigned offset = N / 2; offset > 0; offset /= 2) value = op(value, g.shfl_xor(value, (int)offset));
  return value;
}
}  // namespace cooperative_groups

// ---------------------------------------------------------------- atomics
// GCC atomic built-ins on the target address: atomic with respect to other host threads.
#define CNE_RMW(NAME, T, BUILTIN) \
  inline T NAME(T* a, T v) { cunumpy_emu::race_atomic(a); return BUILTIN(a, v, __ATOMIC_RELAXED); }
#define CNE_INT_ATOMICS(T) \
  CNE_RMW(atomicAdd, T, __atomic_fetch_add) \
  CNE_RMW(atomicSub, T, __atomic_fetch_sub) \
  CNE_RMW(atomicAnd, T, __atomic_fetch_and) \
  CNE_RMW(atomicOr, T, __atomic_fetch_or) \
  CNE_RMW(atomicXor, T, __atomic_fetch_xor) \
  CNE_RMW(atomicExch, T, __atomic_exchange_n) \
  inline T atomicCAS(T* a, T compare, T v) { \
    cunumpy_emu::race_atomic(a); \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return compare; } \
  inline T atomicMin(T* a, T v) { \
    cunumpy_emu::race_atomic(a); \
    T old = __atomic_load_n(a, __ATOMIC_RELAXED); \
    while (v < old && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} \
    return old; } \
  inline T atomicMax(T* a, T v) { \
    cunumpy_emu::race_atomic(a); \
    T old = __atomic_load_n(a, __ATOMIC_RELAXED); \
    while (v > old && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} \
    return old; }
CNE_INT_ATOMICS(int)
CNE_INT_ATOMICS(unsigned int)
CNE_INT_ATOMICS(unsigned long long)
CNE_INT_ATOMICS(long long)
CNE_INT_ATOMICS(unsigned long)
CNE_INT_ATOMICS(long)
#undef CNE_INT_ATOMICS
#undef CNE_RMW
inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  cunumpy_emu::race_atomic(a);
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  cunumpy_emu::race_atomic(a);
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, old >= limit ? 0u : old + 1u, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return old;
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  cunumpy_emu::race_atomic(a);
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, (old == 0 || old > limit) ? limit : old - 1u, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return old;
}
namespace cunumpy_emu {
template <class F, class U, class Op>
inline F float_rmw(F* a, F v, Op op) {
  race_atomic(a);
  U* ua = reinterpret_cast<U*>(a);
  U old = __atomic_load_n(ua, __ATOMIC_RELAXED);
  for (;;) {
    F f;
    std::memcpy(&f, &old, sizeof f);
    F n = op(f, v);
    U nu;
    std::memcpy(&nu, &n, sizeof nu);
    if (__atomic_compare_exchange_n(ua, &old, nu, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return f;
  }
}
}  // namespace cunumpy_emu
inline float atomicAdd(float* a, float v) { return cunumpy_emu::float_rmw<float, unsigned>(a, v, [](float x, float y) { return x + y; }); }
inline double atomicAdd(double* a, double v) { return cunumpy_emu::float_rmw<double, unsigned long long>(a, v, [](double x, double y) { return x + y; }); }
inline float atomicSub(float* a, float v) { return cunumpy_emu::float_rmw<float, unsigned>(a, v, [](float x, float y) { return x - y; }); }
inline double atomicSub(double* a, double v) { return cunumpy_emu::float_rmw<double, unsigned long long>(a, v, [](double x, double y) { return x - y; }); }
inline float atomicMin(float* a, float v) { return cunumpy_emu::float_rmw<float, unsigned>(a, v, [](float x, float y) { return std::fmin(x, y); }); }
inline float atomicMax(float* a, float v) { return cunumpy_emu::float_rmw<float, unsigned>(a, v, [](float x, float y) { return std::fmax(x, y); }); }
inline double atomicMin(double* a, double v) { return cunumpy_emu::float_rmw<double, unsigned long long>(a, v, [](double x, double y) { return std::fmin(x, y); }); }
inline double atomicMax(double* a, double v) { return cunumpy_emu::float_rmw<double, unsigned long long>(a, v, [](double x, double y) { return std::fmax(x, y); }); }
inline float atomicExch(float* a, float v) { return cunumpy_emu::float_rmw<float, unsigned>(a, v, [](float, float y) { return y; }); }
inline double atomicExch(double* a, double v) { return cunumpy_emu::float_rmw<double, unsigned long long>(a, v, [](double, double y) { return y; }); }
// Atomics through a checked pointer parameter (`atomicAdd(p + i, v)`): check, then the plain one.
#define CNE_CHECKED_ATOMIC(NAME) \
  template <class T, class... R> \
  inline auto NAME(const cunumpy_emu::ptr<T>& p, R... r) -> decltype(NAME(p.raw(), r...)) { \
    return NAME(p.check(0), r...); }
CNE_CHECKED_ATOMIC(atomicAdd)
CNE_CHECKED_ATOMIC(atomicSub)
CNE_CHECKED_ATOMIC(atomicAnd)
CNE_CHECKED_ATOMIC(atomicOr)
CNE_CHECKED_ATOMIC(atomicXor)
CNE_CHECKED_ATOMIC(atomicExch)
CNE_CHECKED_ATOMIC(atomicCAS)
CNE_CHECKED_ATOMIC(atomicMin)
CNE_CHECKED_ATOMIC(atomicMax)
CNE_CHECKED_ATOMIC(atomicInc)
CNE_CHECKED_ATOMIC(atomicDec)
#undef CNE_CHECKED_ATOMIC

// ---------------------------------------------------------------- loads, bits, conversions
template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldg(const cunumpy_emu::ptr<T>& p) { return *p; }
#define CNE_LOADS(NAME) \
  template <class T> inline T NAME(const T* p) { return *p; } \
  template <class T> inline T NAME(const cunumpy_emu::ptr<T>& p) { return *p; }
CNE_LOADS(__ldcg)
CNE_LOADS(__ldca)
CNE_LOADS(__ldcs)
CNE_LOADS(__ldlu)
CNE_LOADS(__ldcv)
#undef CNE_LOADS
template <class T>
inline void __stcg(T* p, T v) { *p = v; }
template <class T>
inline void __stcs(T* p, T v) { *p = v; }
template <class T>
inline void __stwt(T* p, T v) { *p = v; }

namespace cunumpy_emu {
template <class To, class From>
inline To bits(From f) {
  static_assert(sizeof(To) == sizeof(From), "bit cast of different sizes");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
}  // namespace cunumpy_emu
inline int __float_as_int(float x) { return cunumpy_emu::bits<int>(x); }
inline unsigned __float_as_uint(float x) { return cunumpy_emu::bits<unsigned>(x); }
inline float __int_as_float(int x) { return cunumpy_emu::bits<float>(x); }
inline float __uint_as_float(unsigned x) { return cunumpy_emu::bits<float>(x); }
inline long long __double_as_longlong(double x) { return cunumpy_emu::bits<long long>(x); }
inline double __longlong_as_double(long long x) { return cunumpy_emu::bits<double>(x); }
inline int __double2hiint(double x) { return (int)(cunumpy_emu::bits<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return (int)(unsigned)cunumpy_emu::bits<unsigned long long>(x); }
inline double __hiloint2double(int hi, int lo) {
  return cunumpy_emu::bits<double>(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (s & 31));
}
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)std::floor(x); }
inline int __float2int_ru(float x) { return (int)std::ceil(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)std::nearbyint(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline int __double2int_rz(double x) { return (int)x; }
inline int __double2int_rd(double x) { return (int)std::floor(x); }
inline int __double2int_ru(double x) { return (int)std::ceil(x); }
inline long long __double2ll_rn(double x) { return (long long)std::nearbyint(x); }
inline long long __double2ll_rz(double x) { return (long long)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline float __ll2float_rn(long long x) { return (float)x; }

// ---------------------------------------------------------------- math
// <math.h> (the C++ one) already brings the float overloads of std:: into the global namespace.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
namespace cunumpy_emu {
template <class F>
inline F sinpi_(F x) {
  if (!std::isfinite(x)) return x - x;
  F n = std::nearbyint(x * 2);  // x = n/2 + y with |y| <= 1/4
  F y = x - n / 2;
  long long q = (long long)std::fmod(n, (F)4);
  if (q < 0) q += 4;
  F pi = (F)3.141592653589793238462643383279502884L;
  F r;
  switch (q) {
    case 0: r = std::sin(pi * y); break;
    case 1: r = std::cos(pi * y); break;
    case 2: r = -std::sin(pi * y); break;
    default: r = -std::cos(pi * y); break;
  }
  if (r == 0) r = std::copysign((F)0, x);
  return r;
}
template <class F>
inline F cospi_(F x) {
  if (!std::isfinite(x)) return x - x;
  return sinpi_<F>(std::fabs(x) + (F)0.5);
}
}  // namespace cunumpy_emu
inline double sinpi(double x) { return cunumpy_emu::sinpi_(x); }
inline float sinpif(float x) { return cunumpy_emu::sinpi_(x); }
inline double cospi(double x) { return cunumpy_emu::cospi_(x); }
inline float cospif(float x) { return cunumpy_emu::cospi_(x); }
inline float sinpi(float x) { return sinpif(x); }
inline float cospi(float x) { return cospif(x); }
inline float rsqrt(float x) { return rsqrtf(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x / std::sqrt(2.0f)); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __saturatef(float x) { return x != x ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __dsqrt_rn(double x) { return std::sqrt(x); }
inline double __drcp_rn(double x) { return 1.0 / x; }

// min/max as CUDA's overload set: the usual arithmetic conversions, and fmin/fmax semantics
// (NaN-ignoring) for floating-point operands.
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) return std::fmin((C)a, (C)b);
  else return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) return std::fmax((C)a, (C)b);
  else return (C)a < (C)b ? (C)b : (C)a;
}
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

// ---------------------------------------------------------------- trap, printf, assert, clock
[[noreturn]] inline void __trap() { cunumpy_emu::raise(cunumpy_emu::fault_trap, "it called __trap()"); }
[[noreturn]] inline void __brkpt() { cunumpy_emu::raise(cunumpy_emu::fault_trap, "it called __brkpt()"); }
// Inline PTX: the one-instruction idioms `asm("trap;")` and `asm("brkpt;")` (CUDA codes use them
// to stop on a bad value) fault as __trap() does; any other PTX text faults naming it, since
// the host cannot run PTX. `asm` is a function-like macro here, so the prelude itself writes
// __asm__; `asm volatile(...)` and operand lists stay C++'s own asm and fail to assemble.
[[noreturn]] inline void cunumpy_emu_inline_ptx(const char* text) {
  std::string ptx(text);
  while (!ptx.empty() && std::isspace(static_cast<unsigned char>(ptx.back()))) ptx.pop_back();
  while (!ptx.empty() && std::isspace(static_cast<unsigned char>(ptx.front()))) ptx.erase(0, 1);
  if (ptx == "trap;" || ptx == "trap") cunumpy_emu::raise(cunumpy_emu::fault_trap, "it ran asm(\"trap;\")");
  if (ptx == "brkpt;" || ptx == "brkpt") cunumpy_emu::raise(cunumpy_emu::fault_trap, "it ran asm(\"brkpt;\")");
  cunumpy_emu::raise(cunumpy_emu::fault_other, "it ran inline PTX the emulator cannot run: " + ptx);
}
#ifndef asm  // a kernel's own -Dasm(...) wins
#define asm(text) cunumpy_emu_inline_ptx(text)
#endif

__attribute__((format(printf, 1, 2))) inline int cunumpy_emu_device_printf(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fputs(buf, stdout);
  std::string line(buf);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (!line.empty()) cunumpy_emu::tl_last_print = line;
  return n;
}
#define printf cunumpy_emu_device_printf

// A failed assert() calls glibc's __assert_fail, declared noexcept: this hidden definition
// jumps back to the launcher instead of aborting the process.
extern "C" CUNUMPY_EMU_HIDDEN void __assert_fail(const char* expr, const char* file, unsigned line, const char* fn) noexcept {
  char buf[600];
  std::snprintf(buf, sizeof buf, "assertion `%s` failed at %s:%u (%s)", expr, file, line, fn);
  std::string msg = std::string("kernel '") + cunumpy_emu::tl_kernel + "': " + buf + " in " + cunumpy_emu::where();
  cunumpy_emu::tl_pending = cunumpy_emu::kernel_error{cunumpy_emu::fault_assert, msg};
  if (cunumpy_emu::tl_jump) std::longjmp(*cunumpy_emu::tl_jump, 1);
  std::abort();
}

inline long long clock64() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
inline unsigned long long __globaltimer() { return (unsigned long long)clock64(); }

// ---------------------------------------------------------------- the launcher
namespace cunumpy_emu {

static constexpr unsigned long long ABI = 2;

// Must match `LaunchConfig` in the cunumpy-emu crate (src/library.rs).
struct launch_config {
  unsigned long long abi;
  const unsigned long long* bounds;  // byte length per parameter; ~0 = not checked
  size_t n_bounds;
  unsigned long long seed;
  int shuffle;
  int force_fibers;
  unsigned workers;
  size_t stack_size;
  int detect_races;
};

struct launch_state {
  const char* kernel;
  dim3 grid, block;
  size_t shared_mem;
  const launch_config* cfg;
  bool fibers;
  void (*loop_block)(void*);  // runs every thread of the current block in order
  void (*fiber_body)(void*);  // runs one thread
  void* args;
  race_detector* race = nullptr;  // race detection on
  std::atomic<unsigned long long> next_block{0};
  std::atomic<bool> stop{false};
  std::atomic_flag err_lock = ATOMIC_FLAG_INIT;
  bool failed = false;
  kernel_error error;
  void fail(const kernel_error& e) {
    while (err_lock.test_and_set(std::memory_order_acquire)) {}
    if (!failed) {
      failed = true;
      error = e;
    }
    err_lock.clear(std::memory_order_release);
    stop = true;
  }
};

thread_local stack_pool tl_stacks;
// Whether a fault at `addr` is the current fiber running off the bottom of its stack (into its
// guard page, or past it by up to 1 MiB: a large local array can jump the guard page).
inline bool in_guard_page(const void* addr) {
  const char* a = static_cast<const char*>(addr);
  const stack_pool& p = tl_stacks;
  sched* s = tl_sched;
  if (!p.base || !s || !s->cur) return false;
  const char* bottom = p.base + (size_t)s->cur->lin * p.each + (size_t)sysconf(_SC_PAGESIZE);
  return a < bottom && a + (1 << 20) >= bottom;
}
thread_local std::vector<unsigned char> tl_shared_buf;
thread_local sched tl_sched_storage;  // reused by every fiber-mode block on this host thread

inline void set_block(unsigned long long b, const launch_state& L) {
  blockIdx.x = (unsigned)(b % L.grid.x);
  blockIdx.y = (unsigned)((b / L.grid.x) % L.grid.y);
  blockIdx.z = (unsigned)(b / ((unsigned long long)L.grid.x * L.grid.y));
}

inline void run_block_fibers(launch_state& L, sched& s, unsigned long long block_lin) {
  const unsigned n = L.block.x * L.block.y * L.block.z;
  s.fibers.resize(n);
  s.queue.assign(n, 0);
  s.q_head = s.q_len = 0;
  s.warps.resize((n + 31) / 32);
  for (auto& w : s.warps) {
    w.live = 0;
    w.open.clear();
  }
  s.n_live = n;
  s.n_at_barrier = s.n_at_warp = 0;
  s.barrier_acc = 0;
  s.failed = false;
  s.shuffle = L.cfg->shuffle != 0;
  s.rng = L.cfg->seed ^ (0xD1B54A32D192ED03ull * (block_lin + 1));
  s.body = L.fiber_body;
  s.ctx = L.args;
  for (unsigned i = 0; i < n; i++) {
    fiber& f = s.fibers[i];
    f.lin = i;
    f.tid = uint3{i % L.block.x, (i / L.block.x) % L.block.y, i / (L.block.x * L.block.y)};
    f.st = fstate::runnable;
    f.bad_src = -1;
    s.warps[i / 32].live |= 1u << (i % 32);
    char* top = tl_stacks.top(i);
#if defined(__x86_64__)
    uintptr_t t = reinterpret_cast<uintptr_t>(top) & ~static_cast<uintptr_t>(15);
    unsigned long long* sp = reinterpret_cast<unsigned long long*>(t) - 8;
    sp[0] = 0x1F80ull | (0x037Full << 32);  // MXCSR, x87 control word
    sp[1] = 0;                                // r15
    sp[2] = 0;                                // r14
    sp[3] = reinterpret_cast<unsigned long long>(&fiber_main);  // r13: the function
    sp[4] = reinterpret_cast<unsigned long long>(&s);           // r12: its argument
    sp[5] = 0;                                                  // rbx
    sp[6] = 0;                                                  // rbp
    sp[7] = reinterpret_cast<unsigned long long>(&cunumpy_emu_fiber_start);
    f.sp = sp;
#else
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = top - (tl_stacks.each - (size_t)sysconf(_SC_PAGESIZE));
    f.uc.uc_stack.ss_size = tl_stacks.each - (size_t)sysconf(_SC_PAGESIZE);
    f.uc.uc_link = nullptr;
    uintptr_t a = reinterpret_cast<uintptr_t>(&s);
    makecontext(&f.uc, reinterpret_cast<void (*)()>(&fiber_entry_uc), 2, (unsigned)(a >> 32), (unsigned)a);
#endif
    s.push(i);
  }
  sched* saved = tl_sched;
  tl_sched = &s;
  for (;;) {
    if (s.failed) break;
    if (s.q_len == 0) {
      if (s.n_live == 0) break;
      if (s.n_at_barrier == s.n_live) {
        int acc = s.barrier_acc;
        switch (s.barrier_kind) {
          case 1: s.barrier_result = acc; break;
          case 2: s.barrier_result = acc == (int)s.n_live; break;
          case 3: s.barrier_result = acc != 0; break;
          default: s.barrier_result = 0; break;
        }
        s.barrier_acc = 0;
        s.n_at_barrier = 0;
        s.barrier_epoch++;
        for (unsigned i = 0; i < n; i++)
          if (s.fibers[i].st == fstate::at_barrier) s.wake(i);
        continue;
      }
      char buf[300];
      std::snprintf(buf, sizeof buf,
                    "kernel '%s': deadlock in block (%u,%u,%u): %u thread(s) wait at __syncthreads(), %u at a "
                    "warp intrinsic whose other lanes never arrive (%u of %u threads still running)",
                    L.kernel, blockIdx.x, blockIdx.y, blockIdx.z, s.n_at_barrier, s.n_at_warp, s.n_live, n);
      s.fail(kernel_error{fault_deadlock, buf});
      break;
    }
    unsigned i = s.pop();
    fiber& f = s.fibers[i];
    if (f.st != fstate::runnable) continue;
    s.cur = &f;
    threadIdx = f.tid;
    tl_jump = &f.jump;
#if defined(__x86_64__)
    cunumpy_emu_switch(&s.main_sp, f.sp);
#else
    swapcontext(&s.main_uc, &f.uc);
#endif
  }
  tl_sched = saved;
  tl_jump = nullptr;
  if (s.failed) throw s.error;
}

inline void run_blocks(launch_state& L) {
  const unsigned long long total = (unsigned long long)L.grid.x * L.grid.y * L.grid.z;
  const unsigned n = L.block.x * L.block.y * L.block.z;
  blockDim = L.block;
  gridDim = L.grid;
  tl_kernel = L.kernel;
  tl_last_print.clear();
  tl_race = L.race;
  tl_access.addr = nullptr;
  if (tl_shared_buf.size() < L.shared_mem + 256) tl_shared_buf.resize(L.shared_mem + 256);
  uintptr_t sb = reinterpret_cast<uintptr_t>(tl_shared_buf.data());
  tl_dyn_shared = reinterpret_cast<unsigned char*>((sb + 255) & ~static_cast<uintptr_t>(255));
  sched* s = nullptr;
  if (L.fibers) {
    if (!tl_stacks.ensure(n, L.cfg->stack_size ? L.cfg->stack_size : 256 * 1024))
      throw kernel_error{fault_other, std::string("kernel '") + L.kernel + "': cannot map fiber stacks"};
    s = &tl_sched_storage;
  }
  std::jmp_buf jb;
  for (;;) {
    if (L.stop.load(std::memory_order_relaxed)) return;
    unsigned long long b = L.next_block.fetch_add(1, std::memory_order_relaxed);
    if (b >= total) return;
    set_block(b, L);
    if (s) {
      run_block_fibers(L, *s, b);
    } else {
      tl_jump = &jb;
      if (setjmp(jb) == 0) {
        L.loop_block(L.args);
        tl_jump = nullptr;
      } else {
        tl_jump = nullptr;
        throw landed_error();
      }
    }
  }
}

inline void worker(launch_state& L) {
  install_fault_handlers();
  int slot = arm_slot();
  try {
    run_blocks(L);
  } catch (const kernel_error& e) {
    L.fail(e);
  } catch (const std::exception& e) {
    L.fail(kernel_error{fault_other, std::string("kernel '") + L.kernel + "': C++ exception: " + e.what()});
  } catch (...) {
    L.fail(kernel_error{fault_other, std::string("kernel '") + L.kernel + "': unknown C++ exception"});
  }
  disarm(slot);
  tl_jump = nullptr;
  tl_race = nullptr;
  tl_access.addr = nullptr;
}

template <class F> struct fn_traits;
template <class... A> struct fn_traits<void (*)(A...)> { using args = std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...>; };
template <class... A> struct fn_traits<void (*)(A...) noexcept> { using args = std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...>; };

template <class T>
struct unpack {
  static T get(void* p, param_info*) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel parameters must be trivially copyable");
    alignas(T) unsigned char buf[sizeof(T)];
    std::memcpy(buf, p, sizeof(T));
    return *std::launder(reinterpret_cast<T*>(buf));
  }
};
template <class T>
struct unpack<ptr<T>> {
  static ptr<T> get(void* p, param_info* info) {
    T* raw;
    std::memcpy(&raw, p, sizeof raw);
    info->base = reinterpret_cast<const char*>(raw);
    return ptr<T>{raw, info};
  }
};

template <auto K, class Tuple, size_t... I>
inline void call(const Tuple& t, std::index_sequence<I...>) {
  K(std::get<I>(t)...);  // each thread gets its own copy of every argument
}

template <auto K>
struct launcher {
  using args_t = typename fn_traits<decltype(K)>::args;
  static constexpr size_t N = std::tuple_size_v<args_t>;
  using seq = std::make_index_sequence<N>;

  static void thread_body(void* a) {
    call<K>(*static_cast<const args_t*>(a), seq{});
    race_settle();
  }
  static void block_body(void* a) {
    const args_t& t = *static_cast<const args_t*>(a);
    const unsigned bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
    for (unsigned z = 0; z < bz; z++)
      for (unsigned y = 0; y < by; y++) {
        threadIdx.y = y;
        threadIdx.z = z;
        for (unsigned x = 0; x < bx; x++) {
          threadIdx.x = x;
          call<K>(t, seq{});
          race_settle();
        }
      }
  }
  template <size_t... I>
  static args_t build(void** params, param_info* infos, std::index_sequence<I...>) {
    return args_t{unpack<std::tuple_element_t<I, args_t>>::get(params[I], &infos[I])...};
  }

  static int launch(const char* kernel, const char* const* names, size_t n_names, void** params,
                    const unsigned grid[3], const unsigned block[3], size_t shared_mem, const launch_config* cfg,
                    bool uses_sync, char* err, size_t err_len) {
    auto report = [&](const kernel_error& e) {
      if (err && err_len) std::snprintf(err, err_len, "%s", e.message.c_str());
      std::fflush(stdout);
      return e.code ? e.code : (int)fault_other;
    };
    try {
      if (!cfg || cfg->abi != ABI) return report(kernel_error{fault_invalid, "cunumpy-emu: launch ABI mismatch"});
      param_info infos[N + 1];
      for (size_t i = 0; i < N; i++) {
        infos[i].kernel = kernel;
        infos[i].name = i < n_names ? names[i] : "?";
        infos[i].index = (int)i;
        infos[i].bounded = cfg->bounds && i < cfg->n_bounds && cfg->bounds[i] != ~0ull;
        infos[i].bytes = infos[i].bounded ? cfg->bounds[i] : 0;
        infos[i].base = nullptr;  // set by unpack<ptr<T>> from the pointer's value
      }
      if (N > 0 && !params) return report(kernel_error{fault_invalid, std::string("kernel '") + kernel + "': params is null"});
      args_t args = build(params, infos, seq{});
      launch_state L;
      L.kernel = kernel;
      L.grid = dim3(grid[0], grid[1], grid[2]);
      L.block = dim3(block[0], block[1], block[2]);
      L.shared_mem = shared_mem;
      L.cfg = cfg;
      L.fibers = uses_sync || cfg->force_fibers || cfg->shuffle;
      L.loop_block = &block_body;
      L.fiber_body = &thread_body;
      L.args = &args;
      race_detector race;
      if (cfg->detect_races) L.race = &race;
      // The calling thread's fiber stacks go back when the launch ends: every library has its
      // own pool (2 mappings a stack: the stack and its guard page), and a process that loads
      // hundreds of libraries would otherwise keep one per library until mmap fails at the
      // kernel's limit on mappings (65530). The worker threads' pools end with the threads.
      struct release_stacks {
        ~release_stacks() { tl_stacks.release(); }
      } release_at_end;
      unsigned long long total = (unsigned long long)grid[0] * grid[1] * grid[2];
      unsigned workers = cfg->workers ? cfg->workers : 1;
      if (workers > total) workers = (unsigned)total;
      if (workers <= 1) {
        worker(L);
      } else {
        std::vector<pthread_t> pool;
        auto entry = [](void* l) -> void* {
          worker(*static_cast<launch_state*>(l));
          return nullptr;
        };
        for (unsigned w = 1; w < workers; w++) {
          pthread_t t;
          if (pthread_create(&t, nullptr, entry, &L) == 0) pool.push_back(t);
        }
        worker(L);
        for (pthread_t t : pool) pthread_join(t, nullptr);
      }
      std::fflush(stdout);
      if (L.failed) return report(L.error);
      return 0;
    } catch (const kernel_error& e) {
      return report(e);
    } catch (const std::exception& e) {
      return report(kernel_error{fault_other, std::string("kernel '") + kernel + "': " + e.what()});
    } catch (...) {
      return report(kernel_error{fault_other, std::string("kernel '") + kernel + "': unknown C++ exception"});
    }
  }
};

}  // namespace cunumpy_emu
#endif  // CUNUMPY_EMU_PRELUDE
