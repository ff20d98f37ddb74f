//! Dependency flags, the simplest correct scheme: the program runs in program order.
//!
//! Consecutive instructions of one queue are ordered by the queue itself. Where the
//! program switches queue (instruction `i` on one queue, `i+1` on the other), `i`
//! sets a hand-over flag on completion and `i+1` waits for it and clears it on its
//! own completion. Hand-over `k` uses flag `k % 2`: when hand-over `k+2` sets that
//! flag again, hand-over `k`'s waiter (which cleared it) has completed, because every
//! instruction completes before the next one in program order starts. So no two
//! instructions are ever in flight at once (no race on any byte), no flag is set
//! twice or cleared twice, and two flags suffice. This serialises the queues
//! completely (no DMA/compute overlap); a buffer-based assignment is future work.

use nnac_isa::{Class, Instr};

/// Flags this scheme needs.
pub const FLAGS_USED: u32 = 2;

fn is_dma(i: &Instr) -> bool {
    i.class() == Class::Dma
}

/// Adds the hand-over flags to `instrs` (which must not contain STOP yet).
pub fn serialise(instrs: &mut [Instr]) {
    let mut handover = 0u32;
    for i in 1..instrs.len() {
        if is_dma(&instrs[i - 1]) != is_dma(&instrs[i]) {
            let f = handover % FLAGS_USED;
            handover += 1;
            let prev = instrs[i - 1].flags_mut();
            prev.set.insert(f);
            let next = instrs[i].flags_mut();
            next.wait_set.insert(f);
            next.clear.insert(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{Dma, DotProduct};

    #[test]
    fn hands_over_at_each_queue_switch() {
        let d = || Instr::DmaRead(Dma::default());
        let c = || Instr::Conv(DotProduct::default());
        let mut p = vec![d(), d(), c(), c(), Instr::DmaWrite(Dma::default())];
        serialise(&mut p);
        assert!(p[0].flags().all().is_empty());
        assert_eq!(p[1].flags().set.to_text(), "F0");
        assert_eq!(p[2].flags().wait_set.to_text(), "F0");
        assert_eq!(p[2].flags().clear.to_text(), "F0");
        assert!(p[2].flags().set.is_empty());
        assert_eq!(p[3].flags().set.to_text(), "F1");
        assert_eq!(p[4].flags().wait_set.to_text(), "F1");
        assert_eq!(p[4].flags().clear.to_text(), "F1");
    }
}
