//! SRAM placement: liveness-based first fit. Each buffer lives over an inclusive
//! range of steps; buffers are placed in order of their first step at the lowest
//! aligned address that does not overlap a buffer live at the same time.
//!
//! [`place_with`] can mark buffers as *early* (parameters to prefetch): such a
//! buffer goes to the free gap whose bytes have been unused the longest (fresh
//! space first, then the lowest address), so that `crate::place::prefetch` can load it
//! as many steps ahead as possible.

use crate::base::buffer::Buffer;

/// The placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    pub addrs: Vec<u64>,
    /// Highest byte used + 1.
    pub peak: u64,
    /// Largest total size of simultaneously live buffers (the lower bound of `peak`).
    pub lower_bound: u64,
}

/// A buffer that does not fit: its owner, the bytes live at that step with it, the
/// buffer's index and its first step (where the placement failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoFit {
    pub owner: String,
    pub needed: u64,
    pub buf: usize,
    pub step: usize,
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Places `bufs` in `capacity` bytes with `align`-byte aligned addresses.
pub(crate) fn place(bufs: &[Buffer], capacity: u64, align: u64) -> Result<Placement, NoFit> {
    place_with(bufs, capacity, align, &[])
}

/// The gap start (below `capacity`) where `size` bytes fit and were last used the
/// longest ago (by the `dead` buffers); ties go to the lowest address.
fn longest_free(
    live: &[(u64, u64, usize)],
    dead: &[(u64, u64, usize)],
    size: u64,
    capacity: u64,
    align: u64,
) -> Option<u64> {
    // Candidate starts: 0 and the end of every live or dead buffer (the highest
    // of which is fresh space).
    let mut starts = vec![0u64];
    starts.extend(live.iter().chain(dead).map(|&(_, e, _)| align_up(e, align)));
    starts.sort_unstable();
    starts.dedup();
    let fits =
        |a: u64| a + size <= capacity && live.iter().all(|&(s, e, _)| a + size <= s || e <= a);
    starts
        .into_iter()
        .filter(|&a| fits(a))
        .map(|a| {
            let since = dead
                .iter()
                .filter(|&&(s, e, _)| s < a + size && a < e)
                .map(|&(_, _, last)| last + 1)
                .max()
                .unwrap_or(0);
            (since, a)
        })
        .min()
        .map(|(_, a)| a)
}

/// As [`place`]; buffers `i` with `early[i]` go where their range has been free
/// the longest (see the module doc).
pub(crate) fn place_with(
    bufs: &[Buffer],
    capacity: u64,
    align: u64,
    early: &[bool],
) -> Result<Placement, NoFit> {
    let mut order: Vec<usize> = (0..bufs.len()).collect();
    order.sort_by_key(|&i| (bufs[i].first, i));
    let mut addrs = vec![0u64; bufs.len()];
    // Live buffers as (addr, end, index), sorted by address.
    let mut live: Vec<(u64, u64, usize)> = Vec::new();
    // Placed buffers no longer live: (addr, end, last step).
    let mut dead: Vec<(u64, u64, usize)> = Vec::new();
    let (mut peak, mut lower_bound) = (0u64, 0u64);
    for &i in &order {
        let b = &bufs[i];
        let want_early = early.get(i).copied().unwrap_or(false);
        live.retain(|&(a, e, j)| {
            let keep = bufs[j].last >= b.first;
            if !keep && !early.is_empty() {
                dead.push((a, e, bufs[j].last));
            }
            keep
        });
        let size = align_up(b.size.max(1), align);
        let mut addr = 0u64;
        for &(a, e, _) in &live {
            if addr + size <= a {
                break;
            }
            addr = addr.max(align_up(e, align));
        }
        if want_early {
            if let Some(a) = longest_free(&live, &dead, size, capacity, align) {
                addr = a;
            }
        }
        let live_bytes: u64 = live.iter().map(|&(a, e, _)| e - a).sum::<u64>() + b.size;
        lower_bound = lower_bound.max(live_bytes);
        if addr + b.size > capacity {
            return Err(NoFit {
                owner: b.owner.clone(),
                needed: live_bytes.max(addr + b.size),
                buf: i,
                step: b.first,
            });
        }
        addrs[i] = addr;
        peak = peak.max(addr + b.size);
        let pos = live.partition_point(|&(a, _, _)| a < addr);
        live.insert(pos, (addr, addr + b.size, i));
    }
    Ok(Placement {
        addrs,
        peak,
        lower_bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(size: u64, first: usize, last: usize) -> Buffer {
        Buffer {
            owner: format!("b{first}"),
            size,
            first,
            last,
        }
    }

    #[test]
    fn reuses_dead_space_and_never_overlaps_live() {
        let bufs = vec![buf(100, 0, 1), buf(50, 1, 2), buf(100, 2, 3)];
        let p = place(&bufs, 1000, 64).unwrap();
        assert_eq!(p.addrs, vec![0, 128, 0]);
        assert_eq!(p.peak, 178);
        assert_eq!(p.lower_bound, 150);
    }

    #[test]
    fn early_buffers_take_the_longest_free_range() {
        // b0 dies at step 1, b1 at step 3; the early buffer at step 4 fits in either
        // range, or in fresh space above them.
        let bufs = vec![buf(64, 0, 1), buf(64, 0, 3), buf(64, 4, 4)];
        let first_fit = place(&bufs, 192, 64).unwrap();
        assert_eq!(first_fit.addrs[2], 0);
        let early = place_with(&bufs, 192, 64, &[false, false, true]).unwrap();
        assert_eq!(early.addrs[2], 128);
        let tight = place_with(&bufs, 128, 64, &[false, false, true]).unwrap();
        assert_eq!(tight.addrs[2], 0);
    }

    #[test]
    fn too_small_names_the_owner() {
        let bufs = vec![buf(100, 0, 1), buf(100, 1, 1)];
        let e = place(&bufs, 150, 64).unwrap_err();
        assert_eq!(e.owner, "b1");
        assert_eq!(e.needed, 228);
        assert_eq!((e.buf, e.step), (1, 1));
    }
}
