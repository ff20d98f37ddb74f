//! SRAM placement: liveness-based first fit. Each buffer lives over an inclusive
//! range of steps; buffers are placed in order of their first step at the lowest
//! aligned address that does not overlap a buffer live at the same time.

/// One buffer to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// The layer (node name) the buffer belongs to, for errors.
    pub owner: String,
    pub size: u64,
    pub first: usize,
    pub last: usize,
}

/// The placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub addrs: Vec<u64>,
    /// Highest byte used + 1.
    pub peak: u64,
    /// Largest total size of simultaneously live buffers (the lower bound of `peak`).
    pub lower_bound: u64,
}

/// A buffer that does not fit: its owner and the bytes live at that step with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoFit {
    pub owner: String,
    pub needed: u64,
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Places `bufs` in `capacity` bytes with `align`-byte aligned addresses.
pub fn place(bufs: &[Buffer], capacity: u64, align: u64) -> Result<Placement, NoFit> {
    let mut order: Vec<usize> = (0..bufs.len()).collect();
    order.sort_by_key(|&i| (bufs[i].first, i));
    let mut addrs = vec![0u64; bufs.len()];
    // Live buffers as (addr, end, index), sorted by address.
    let mut live: Vec<(u64, u64, usize)> = Vec::new();
    let (mut peak, mut lower_bound) = (0u64, 0u64);
    for &i in &order {
        let b = &bufs[i];
        live.retain(|&(_, _, j)| bufs[j].last >= b.first);
        let size = align_up(b.size.max(1), align);
        let mut addr = 0u64;
        for &(a, e, _) in &live {
            if addr + size <= a {
                break;
            }
            addr = addr.max(align_up(e, align));
        }
        let live_bytes: u64 = live.iter().map(|&(a, e, _)| e - a).sum::<u64>() + b.size;
        lower_bound = lower_bound.max(live_bytes);
        if addr + b.size > capacity {
            return Err(NoFit {
                owner: b.owner.clone(),
                needed: live_bytes.max(addr + b.size),
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
    fn too_small_names_the_owner() {
        let bufs = vec![buf(100, 0, 1), buf(100, 1, 1)];
        let e = place(&bufs, 150, 64).unwrap_err();
        assert_eq!(e.owner, "b1");
        assert_eq!(e.needed, 228);
    }
}
