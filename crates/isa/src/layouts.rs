//! THE instruction table: the bit layout of every instruction kind.
//!
//! Each `layout!` block lists, per field: name, Rust type, bit offset, width, display
//! format and (optionally) legal range. The encoder, decoder, listing, assembler, JSON
//! output and the docs check (tests/docs_tables.rs) are all driven from these tables.
//! The headers (opcode, SIMD length, flag slots) are declared in [`crate::instr`].

use crate::field::{field_enum, layout};
use crate::flags::FlagOps;
use crate::simd::SimdInstr;

field_enum! {
    /// Fused pooling after the SIMD unit.
    PoolKind { None = "none", Max = "max", Avg = "avg" }
}

field_enum! {
    /// Order in which the 96x96 output slices of a tile are computed.
    Order { PixelMajor = "pixel_major", ChannelMajor = "channel_major" }
}

field_enum! {
    /// ELTWISE combining operation.
    EltOp { Add = "add", Mul = "mul", Max = "max" }
}

layout! {
    /// DMA_READ (DRAM to SRAM) and DMA_WRITE (SRAM to DRAM): a strided 2-D move of
    /// `rows` rows of `row_len` bytes.
    Dma, size 32, extra {
        /// Dependency flags.
        pub flags: FlagOps,
    } {
        /// DRAM byte address of row 0
        dram_addr: u64 = [64, 40, Hex];
        /// SRAM byte address of row 0
        sram_addr: u32 = [104, 28, Hex];
        /// number of rows
        rows: u32 = [132, 16, Dec, 1..=65535];
        /// bytes per row
        row_len: u32 = [148, 20, Dec, 1..=1048575];
        /// bytes between the starts of consecutive rows in DRAM
        dram_stride: u64 = [168, 40, Dec];
        /// bytes between the starts of consecutive rows in SRAM
        sram_stride: u32 = [208, 28, Dec];
    }
}

layout! {
    /// STOP: ends the program once both queues have drained.
    Stop, size 32, extra {
        /// Dependency flags.
        pub flags: FlagOps,
    } {
    }
}

layout! {
    /// CONV, DECONV and INNER_PRODUCT: dot products on the MAC array, followed by the
    /// SIMD program and optional fused pooling.
    DotProduct, size 256, extra {
        /// Dependency flags.
        pub flags: FlagOps,
        /// The SIMD program run on every accumulator row (encoded after the instruction).
        pub simd: Vec<SimdInstr>,
    } {
        /// SRAM address of input activations
        in_addr: u32 = [256, 28, Hex];
        /// SRAM address of the weight block of the first output-channel group of the tile
        w_addr: u32 = [284, 28, Hex];
        /// SRAM address of the output tensor (pooled tensor when pooling)
        out_addr: u32 = [312, 28, Hex];
        /// SRAM address of int32 bias for channel oc_start (when bias_en)
        bias_addr: u32 = [340, 28, Hex];
        /// SRAM address of the channel-parameter entry of channel oc_start
        chan_addr: u32 = [368, 28, Hex];
        /// input height
        in_h: u32 = [400, 16, Dec, 1..=65535];
        /// input width
        in_w: u32 = [416, 16, Dec, 1..=65535];
        /// input channels
        in_c: u32 = [432, 16, Dec, 1..=65535];
        /// output height (before pooling)
        out_h: u32 = [448, 16, Dec, 1..=65535];
        /// output width (before pooling)
        out_w: u32 = [464, 16, Dec, 1..=65535];
        /// output channels
        out_c: u32 = [480, 16, Dec, 1..=65535];
        /// input bytes between rows (y to y+1)
        in_row_pitch: u32 = [496, 24, Dec];
        /// input bytes between pixels (x to x+1)
        in_pix_pitch: u32 = [520, 16, Dec];
        /// output bytes between rows
        out_row_pitch: u32 = [536, 24, Dec];
        /// output bytes between pixels
        out_pix_pitch: u32 = [560, 16, Dec];
        /// first flattened output pixel (y*out_w+x) of the tile
        pix_start: u32 = [576, 24, Dec];
        /// number of output pixels in the tile
        pix_count: u32 = [600, 24, Dec, 1..=16777215];
        /// first output channel of the tile
        oc_start: u32 = [624, 16, Dec];
        /// number of output channels in the tile
        oc_count: u32 = [640, 16, Dec, 1..=65535];
        /// kernel height
        kernel_h: u32 = [656, 8, Dec, 1..=255];
        /// kernel width
        kernel_w: u32 = [664, 8, Dec, 1..=255];
        /// zero-padding rows above the input
        pad_top: u32 = [672, 8, Dec];
        /// padding columns left of the input
        pad_left: u32 = [680, 8, Dec];
        /// padding rows below the input
        pad_bottom: u32 = [688, 8, Dec];
        /// padding columns right of the input
        pad_right: u32 = [696, 8, Dec];
        /// vertical stride
        stride_h: u32 = [704, 8, Dec, 1..=255];
        /// horizontal stride
        stride_w: u32 = [712, 8, Dec, 1..=255];
        /// vertical dilation
        dil_h: u32 = [720, 8, Dec, 1..=255];
        /// horizontal dilation
        dil_w: u32 = [728, 8, Dec, 1..=255];
        /// convolution groups (in_c and out_c divisible by it)
        groups: u32 = [736, 16, Dec, 1..=65535];
        /// input codes are int8 (else uint8)
        in_signed: bool = [752, 1, Bool];
        /// weight codes are int8 (else uint8)
        w_signed: bool = [753, 1, Bool];
        /// output codes are int8 (else uint8)
        out_signed: bool = [754, 1, Bool];
        /// add the per-channel int32 bias into the accumulator
        bias_en: bool = [755, 1, Bool];
        /// slice order inside the tile
        order: Order = [756, 1, Enum];
        /// average pooling divides by the full window including padding
        pool_count_pad: bool = [757, 1, Bool];
        /// bias and channel-parameter entries are per output pixel (from pix_start), not per channel
        params_by_pixel: bool = [758, 1, Bool];
        /// input zero point: the code read for padded input positions
        in_zero: i16 = [760, 16, Dec, -128..=255];
        /// output zero point: pad value for average pooling
        out_zero: i16 = [776, 16, Dec, -128..=255];
        /// fused pooling kind
        pool: PoolKind = [792, 2, Enum];
        /// pooling window (2 or 3; 0 when pool=none)
        pool_win: u32 = [794, 2, Dec];
        /// pooling stride (1 or 2; 0 when pool=none)
        pool_stride: u32 = [796, 2, Dec, 0..=2];
        /// pooling padding rows above
        pool_pad_top: u32 = [798, 2, Dec, 0..=2];
        /// pooling padding columns left
        pool_pad_left: u32 = [800, 2, Dec, 0..=2];
        /// pooling padding rows below
        pool_pad_bottom: u32 = [802, 2, Dec, 0..=2];
        /// pooling padding columns right
        pool_pad_right: u32 = [804, 2, Dec, 0..=2];
        /// input tensor padding-pattern hint (no effect on results)
        in_pad_hint: u32 = [808, 4, Dec];
        /// output tensor padding-pattern hint (no effect on results)
        out_pad_hint: u32 = [812, 4, Dec];
        /// input bytes between channels (c to c+1; 1 for HWC)
        in_chan_pitch: u32 = [816, 28, Dec];
        /// output bytes between channels
        out_chan_pitch: u32 = [844, 28, Dec];
        /// bytes between the tile's weight vectors (0: blocks of mac_cols-byte vectors)
        w_pitch: u32 = [872, 24, Dec];
    }
}

layout! {
    /// SCALE: one tensor through the SIMD unit (per-channel multiply/add via the
    /// channel table).
    Scale, size 256, extra {
        /// Dependency flags.
        pub flags: FlagOps,
        /// The SIMD program run on every row.
        pub simd: Vec<SimdInstr>,
    } {
        /// SRAM address of the input tensor
        in_addr: u32 = [256, 28, Hex];
        /// SRAM address of the output tensor
        out_addr: u32 = [284, 28, Hex];
        /// SRAM address of the channel-parameter entry of channel c_start
        chan_addr: u32 = [312, 28, Hex];
        /// tensor height
        h: u32 = [352, 16, Dec, 1..=65535];
        /// tensor width
        w: u32 = [368, 16, Dec, 1..=65535];
        /// tensor channels
        c: u32 = [384, 16, Dec, 1..=65535];
        /// input bytes between rows
        in_row_pitch: u32 = [400, 24, Dec];
        /// input bytes between pixels
        in_pix_pitch: u32 = [424, 16, Dec];
        /// output bytes between rows
        out_row_pitch: u32 = [440, 24, Dec];
        /// output bytes between pixels
        out_pix_pitch: u32 = [464, 16, Dec];
        /// first flattened pixel of the tile
        pix_start: u32 = [480, 24, Dec];
        /// pixels in the tile
        pix_count: u32 = [504, 24, Dec, 1..=16777215];
        /// first channel of the tile
        c_start: u32 = [528, 16, Dec];
        /// channels in the tile
        c_count: u32 = [544, 16, Dec, 1..=65535];
        /// input codes are int8 (else uint8)
        in_signed: bool = [560, 1, Bool];
        /// output codes are int8 (else uint8)
        out_signed: bool = [561, 1, Bool];
        /// input zero point, subtracted before the SIMD program
        in_zero: i16 = [568, 16, Dec, -128..=255];
        /// input bytes between channels (c to c+1; 1 for HWC)
        in_chan_pitch: u32 = [584, 28, Dec];
        /// output bytes between channels
        out_chan_pitch: u32 = [612, 28, Dec];
    }
}

layout! {
    /// ELTWISE: two tensors, each rescaled, combined, then the SIMD program.
    Eltwise, size 256, extra {
        /// Dependency flags.
        pub flags: FlagOps,
        /// The SIMD program run on every row.
        pub simd: Vec<SimdInstr>,
    } {
        /// SRAM address of tensor A
        a_addr: u32 = [256, 28, Hex];
        /// SRAM address of tensor B
        b_addr: u32 = [284, 28, Hex];
        /// SRAM address of the output tensor
        out_addr: u32 = [312, 28, Hex];
        /// SRAM address of the channel-parameter entry of channel c_start
        chan_addr: u32 = [340, 28, Hex];
        /// tensor height
        h: u32 = [368, 16, Dec, 1..=65535];
        /// tensor width
        w: u32 = [384, 16, Dec, 1..=65535];
        /// tensor channels
        c: u32 = [400, 16, Dec, 1..=65535];
        /// A bytes between rows
        a_row_pitch: u32 = [416, 24, Dec];
        /// A bytes between pixels
        a_pix_pitch: u32 = [440, 16, Dec];
        /// B bytes between rows
        b_row_pitch: u32 = [456, 24, Dec];
        /// B bytes between pixels
        b_pix_pitch: u32 = [480, 16, Dec];
        /// output bytes between rows
        out_row_pitch: u32 = [496, 24, Dec];
        /// output bytes between pixels
        out_pix_pitch: u32 = [520, 16, Dec];
        /// first flattened pixel of the tile
        pix_start: u32 = [536, 24, Dec];
        /// pixels in the tile
        pix_count: u32 = [560, 24, Dec, 1..=16777215];
        /// first channel of the tile
        c_start: u32 = [584, 16, Dec];
        /// channels in the tile
        c_count: u32 = [600, 16, Dec, 1..=65535];
        /// A codes are int8 (else uint8)
        a_signed: bool = [616, 1, Bool];
        /// B codes are int8 (else uint8)
        b_signed: bool = [617, 1, Bool];
        /// output codes are int8 (else uint8)
        out_signed: bool = [618, 1, Bool];
        /// combining operation
        op: EltOp = [624, 2, Enum];
        /// A zero point
        a_zero: i16 = [632, 16, Dec, -128..=255];
        /// B zero point
        b_zero: i16 = [648, 16, Dec, -128..=255];
        /// A rescale multiplier
        a_mult: i32 = [664, 32, Dec];
        /// B rescale multiplier
        b_mult: i32 = [696, 32, Dec];
        /// A rescale right shift
        a_shift: u32 = [728, 6, Dec];
        /// B rescale right shift
        b_shift: u32 = [734, 6, Dec];
        /// A bytes between channels (c to c+1; 1 for HWC)
        a_chan_pitch: u32 = [740, 28, Dec];
        /// B bytes between channels
        b_chan_pitch: u32 = [768, 28, Dec];
        /// output bytes between channels
        out_chan_pitch: u32 = [796, 28, Dec];
    }
}
