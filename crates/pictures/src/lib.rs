//! Pictures of nnac programs, written as SVG by hand (no drawing dependency):
//!
//! - [`roofline`]: attained throughput of every layer against its operational
//!   intensity on DRAM and on SRAM, under the configured hardware's ceilings
//!   (`nnac profile --roofline`); its figures in [`figures`], per instruction in
//!   [`work`].
//! - [`timeline`]: one frame as the DMA and compute queues and the cycles by cause
//!   (`nnac profile --timeline`); the frame's x axis in [`frame_scale`], sub-pixel
//!   aggregation in [`bins`], the critical timeline by cause in [`charged`].
//! - [`graph`]: the compiled graph as DOT with fused groups, host ops and cycles
//!   (`nnac compile --graph`), rendered by [`graphviz`] when `dot` is installed.
//!
//! Shared pieces: [`svg`] (the writer), [`scale`] (log and linear scales, labels),
//! [`axes`] (ticks carry their values in `data-value`), [`palette`] (colours).

pub mod axes;
pub mod bins;
pub mod charged;
pub mod figures;
pub mod frame_scale;
pub mod graph;
pub mod graphviz;
pub mod palette;
pub mod roofline;
pub mod scale;
pub mod svg;
pub mod timeline;
pub mod work;

pub use figures::{roofline as roofline_figures, Ceilings, LayerPoint, Roofline};
pub use graph::{graph_dot, GraphFacts};
pub use graphviz::{render_svg, GraphvizError};
pub use roofline::roofline_svg;
pub use timeline::{timeline_svg, TimelineSvg};
