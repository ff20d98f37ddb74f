//! The x axis of the timeline: the segments of one frame side by side in NNA cycles,
//! with a fixed gap after every segment that host ops follow (their CPU time is not
//! modelled, so it gets no width of its own).

use nnac_runtime_sim::timing::Profile;

/// Pixels of the gap drawn for the host ops after a segment.
pub const HOST_GAP: f64 = 18.0;

/// One segment of the frame on the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentSpan {
    /// Index in the program's timeline (prologue segments included).
    pub index: usize,
    pub start: u64,
    pub end: u64,
    /// NNA cycles of the frame before this segment.
    pub before: u64,
    /// Host gaps before this segment.
    pub gaps_before: usize,
    /// Host ops run after it (`name = op`).
    pub host_after: Vec<String>,
}

/// Maps cycles of the frame's segments to pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameScale {
    pub x0: f64,
    pub width: f64,
    pub segments: Vec<SegmentSpan>,
    /// NNA cycles of the frame (all segments of the body).
    pub cycles: u64,
    /// Pixels per cycle.
    pub scale: f64,
}

impl FrameScale {
    /// The frame of `p` (the body's segments) over `width` pixels from `x0`.
    pub fn new(p: &Profile, x0: f64, width: f64) -> FrameScale {
        let skip = p.prologue.map_or(0, |q| q.segments);
        let mut segments = Vec::new();
        let (mut before, mut gaps) = (0, 0);
        for (index, s) in p.timeline.segments.iter().enumerate().skip(skip) {
            let host_after: Vec<String> = p
                .host_ops
                .iter()
                .filter(|h| h.segment as usize == index)
                .map(|h| format!("{} = {}", h.name, h.op))
                .collect();
            segments.push(SegmentSpan {
                index,
                start: s.start,
                end: s.end,
                before,
                gaps_before: gaps,
                host_after: host_after.clone(),
            });
            before += s.end - s.start;
            gaps += usize::from(!host_after.is_empty());
        }
        let room = (width - gaps as f64 * HOST_GAP).max(width / 4.0);
        FrameScale {
            x0,
            width,
            segments,
            cycles: before,
            scale: if before > 0 {
                room / before as f64
            } else {
                0.0
            },
        }
    }

    /// Pixel of cycle `c` of segment `k` (an index into `segments`).
    pub fn px(&self, k: usize, c: u64) -> f64 {
        let s = &self.segments[k];
        self.x0
            + (s.before + c.saturating_sub(s.start).min(s.end - s.start)) as f64 * self.scale
            + s.gaps_before as f64 * HOST_GAP
    }

    /// Pixel of NNA cycle `t` of the frame (host time excluded).
    pub fn px_of_frame_cycle(&self, t: f64) -> f64 {
        let k = self
            .segments
            .iter()
            .rposition(|s| (s.before as f64) <= t)
            .unwrap_or(0);
        match self.segments.get(k) {
            Some(s) => {
                let within = (t - s.before as f64).min((s.end - s.start) as f64);
                self.x0 + (s.before as f64 + within) * self.scale + s.gaps_before as f64 * HOST_GAP
            }
            None => self.x0,
        }
    }

    /// The position in `segments` of the timeline's segment `index`.
    pub fn position(&self, index: usize) -> Option<usize> {
        self.segments.iter().position(|s| s.index == index)
    }
}
