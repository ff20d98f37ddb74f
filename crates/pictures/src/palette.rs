//! Colours: one per layer (a 20-colour qualitative cycle, neighbours distinct) and
//! one per cause of the cycles of the timing model's charge.

/// Tableau 20, darker and lighter shades alternating.
const LAYERS: [&str; 20] = [
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
    "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
];

/// The colour of the layer at position `k` in program order.
pub fn layer_colour(k: usize) -> &'static str {
    LAYERS[k % LAYERS.len()]
}

/// What a cycle of the timeline is charged to (`timing::Charge`'s fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    Dma,
    Flags,
    MacBusy,
    SimdWork,
    SramPorts,
    SimdUnload,
}

impl Cause {
    /// All causes, in the order a charged interval is laid out: the waits before an
    /// instruction starts, then its work and the stalls of its work.
    pub const ALL: [Cause; 6] = [
        Cause::Dma,
        Cause::Flags,
        Cause::MacBusy,
        Cause::SimdWork,
        Cause::SramPorts,
        Cause::SimdUnload,
    ];

    pub fn colour(self) -> &'static str {
        match self {
            Cause::MacBusy => "#2ca02c",
            Cause::SimdWork => "#17becf",
            Cause::Dma => "#d62728",
            Cause::Flags => "#ff7f0e",
            Cause::SramPorts => "#9467bd",
            Cause::SimdUnload => "#1f77b4",
        }
    }

    /// The label `nnac profile` uses for it.
    pub fn name(self) -> &'static str {
        match self {
            Cause::MacBusy => "MAC busy",
            Cause::SimdWork => "SIMD-only work",
            Cause::Dma => "waiting on DMA",
            Cause::Flags => "waiting on flags",
            Cause::SramPorts => "SRAM ports",
            Cause::SimdUnload => "SIMD unload",
        }
    }

    /// Its cycles in `c`.
    pub fn of(self, c: &nnac_runtime_sim::timing::Charge) -> u64 {
        match self {
            Cause::MacBusy => c.mac_busy,
            Cause::SimdWork => c.simd_work,
            Cause::Dma => c.dma,
            Cause::Flags => c.flags,
            Cause::SramPorts => c.sram_ports,
            Cause::SimdUnload => c.simd_unload,
        }
    }
}
