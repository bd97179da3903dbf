//! The process's memory allocator, mimalloc (fast, little fragmentation), as the global
//! allocator of whatever binary links this crate, and [`return_free_memory`].
//!
//! mimalloc hands the pages it no longer uses back to the OS lazily, during later
//! allocation work. A gateway that just parked thousands of idle connections (freeing
//! their buffers) and then has nothing to do never does that work, so the freed memory
//! would stay resident. The gateway's park sweep calls [`return_free_memory`] when it
//! parked connections, and the binary's idle workers (multi-threaded runtime) once per
//! release epoch the gateway moves.

#![allow(unsafe_code)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Frees this thread's empty pages and purges free memory back to the OS (mimalloc's
/// forced collect). Walks the thread's heap: call it when idle, not per request.
pub fn return_free_memory() {
    // SAFETY: `mi_collect` takes no pointer; it walks and frees the calling thread's
    // own heap pages and purges free memory, and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
