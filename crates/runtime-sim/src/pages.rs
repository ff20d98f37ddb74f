//! Large buffers on transparent huge pages, and faulting them in on every thread.
//!
//! Loading a program fills tens of megabytes of fresh memory (the container's bytes,
//! the SRAM): on 4 KiB pages that is one page fault (and one page cleared) per 4 KiB,
//! about 15,000 faults for ResNet-50. Where the kernel offers transparent huge pages
//! on request (Linux, `/sys/kernel/mm/transparent_hugepage/enabled` = `madvise` or
//! `always`), a buffer advised before its first touch takes one fault per 2 MiB.
//! The advice never changes what the memory holds; where it is refused or does not
//! exist (another OS, THP off) the buffer is an ordinary one.

/// Buffers smaller than this are left alone (at most a couple of huge pages).
const MIN_BYTES: usize = 4 << 20;

/// An empty buffer with room for `capacity` bytes, advised onto huge pages.
pub fn with_capacity(capacity: usize) -> Vec<u8> {
    let v = Vec::with_capacity(capacity);
    advise(v.as_ptr(), v.capacity());
    v
}

/// `len` zero bytes, advised onto huge pages (the allocator hands out fresh zero
/// pages for a large zeroed buffer, so nothing has touched them yet).
pub fn zeroed(len: usize) -> Vec<u8> {
    let v = vec![0u8; len];
    advise(v.as_ptr(), v.len());
    v
}

/// The kernel's base page size.
const PAGE: usize = 4096;

/// Bytes of memory one job of [`fault_in`] covers (a huge page).
const JOB_BYTES: usize = 2 << 20;

/// Faults in, on every thread of the pool, the pages of `buf` that meet any of
/// `ranges` (byte offsets `[lo, hi)`; clipped to the buffer), without changing a byte:
/// each page's first byte has 0 added to it (one write access, no read before it).
/// The kernel clears a fresh page where it is first touched (on one VM about a tenth
/// of a one-frame run's CPU samples, in the prologue's copies of the weights into the
/// fresh SRAM, on one thread); done here first, the clearing is spread over the
/// threads.
pub fn fault_in(buf: &mut [u8], ranges: &[(usize, usize)]) {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU8, Ordering};
    let meets = |lo: usize, hi: usize| ranges.iter().any(|&(a, b)| a < hi && lo < b);
    buf.par_chunks_mut(JOB_BYTES)
        .enumerate()
        .filter(|(k, job)| meets(k * JOB_BYTES, k * JOB_BYTES + job.len()))
        .for_each(|(_, job)| {
            for b in job.iter_mut().step_by(PAGE) {
                // One write access that keeps the byte (adding 0): a read first would
                // map the shared zero page, and the write after it would fault again
                // to copy it (on a huge page, also flushing the other cores' TLBs).
                // SAFETY: `b` is a valid, aligned, exclusive reference to a byte, so
                // an atomic view of it is sound for as long as it is used here.
                unsafe { AtomicU8::from_ptr(b) }.fetch_add(0, Ordering::Relaxed);
            }
        });
}

/// Asks for huge pages for the whole pages inside `[ptr, ptr + len)`.
#[cfg(target_os = "linux")]
fn advise(ptr: *const u8, len: usize) {
    if len < MIN_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + len) / PAGE * PAGE;
    if end > start {
        // SAFETY: `[start, end)` lies inside one live allocation the caller owns;
        // MADV_HUGEPAGE only changes how the kernel backs those pages, never their
        // contents, and its result (advice that may be refused) is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: *const u8, _: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn faulting_in_changes_no_byte() {
        let mut z = super::zeroed(9 << 20);
        // Every page's first byte (the one touched) and bytes between them.
        for (i, b) in z.iter_mut().enumerate().skip(3 << 20).step_by(2048) {
            *b = (i / 2048 % 251 + 1) as u8;
        }
        let before = z.clone();
        super::fault_in(&mut z, &[(1 << 20, 5 << 20), (8 << 20, 20 << 20)]);
        assert!(z == before);
        super::fault_in(&mut [], &[(0, 10)]);
    }

    #[test]
    fn advised_buffers_are_ordinary_buffers() {
        let z = super::zeroed(5 << 20);
        assert!(z.len() == 5 << 20 && z.iter().all(|&b| b == 0));
        let mut v = super::with_capacity(6 << 20);
        assert!(v.is_empty() && v.capacity() >= 6 << 20);
        v.extend_from_slice(&[1, 2, 3]);
        assert_eq!(v, [1, 2, 3]);
    }
}
