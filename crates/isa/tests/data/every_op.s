; Hand-written program using every instruction and every SIMD op.
; Not a meaningful network: it exercises the listing, assembler and encoder.
.model "hand/every_op"
.compiler "hand-written"
; no .hw lines: the FSD default configuration
.dram base=0x10000 hex="000102030405060708090a0b0c0d0e0f"
.input name="image" dtype=uint8 shape=[1,3,8,8] dram=0x0 layout=hwc row_pitch=32 pix_pitch=4 scale=0.0078125 zero_point=128
.output name="logits" dtype=int8 shape=[1,10] dram=0x4000 layout=dense scale=0.25 zero_point=-3
.hostops

    ; Inputs, weights, bias and channel table into SRAM.
    DMA_READ wait_clear=F0 set=F0 dram_addr=0x0 sram_addr=0x0 rows=8 row_len=32 dram_stride=32 sram_stride=32
    DMA_READ wait_clear=F1 set=F1 dram_addr=0x10000 sram_addr=0x1000 rows=1 row_len=2592
    DMA_READ set=F2 dram_addr=0x20000 sram_addr=0x2000 rows=1 row_len=256

    ; 3x3 conv, 3 -> 16 channels, per-channel requant, ReLU, fused 2x2 max pool.
    CONV wait_set=F0,F1,F2 wait_clear=F3 set=F3 clear=F0,F1 in_addr=0x0 w_addr=0x1000 out_addr=0x3000 bias_addr=0x2000 chan_addr=0x2040 in_h=8 in_w=8 in_c=3 out_h=8 out_w=8 out_c=16 in_row_pitch=32 in_pix_pitch=4 out_row_pitch=64 out_pix_pitch=16 in_chan_pitch=1 out_chan_pitch=1 pix_count=64 oc_count=16 kernel_h=3 kernel_w=3 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 stride_h=1 stride_w=1 dil_h=1 dil_w=1 groups=1 bias_en=1 in_zero=128 out_zero=-128 pool=max pool_win=2 pool_stride=2
        + FUSED_RELU per_channel=1 act_min=-128 act_max=127 zero_point=-128

    ; 2x upsampling deconvolution with a sigmoid: r0 = 1 / (1 + exp(-x * s)).
    DECONV wait_set=F3 set=F4 in_addr=0x3000 w_addr=0x1800 out_addr=0x4000 chan_addr=0x2040 in_h=4 in_w=4 in_c=16 out_h=8 out_w=8 out_c=16 in_row_pitch=64 in_pix_pitch=16 out_row_pitch=128 out_pix_pitch=16 in_chan_pitch=1 out_chan_pitch=1 pix_count=64 oc_count=16 kernel_h=2 kernel_w=2 stride_h=2 stride_w=2 dil_h=1 dil_w=1 groups=1 w_signed=1 out_signed=0 order=channel_major in_pad_hint=1 out_pad_hint=2
        + I2F dst=r1 a=r0
        + FMUL dst=r1 a=r1 bsrc=imm imm=-0.001f
        + FEXP dst=r1 a=r1
        + FADD dst=r1 a=r1 bsrc=imm imm=1.0f
        + MOV dst=r2 bsrc=imm imm=256.0f
        + FDIV dst=r1 a=r2 b=r1
        + F2I dst=r0 a=r1

    ; Fully connected 1024 -> 10 with hard-swish in fp32.
    INNER_PRODUCT wait_set=F4 set=F5 clear=F3 in_addr=0x4000 w_addr=0x8000 out_addr=0x6000 chan_addr=0x2040 in_h=8 in_w=8 in_c=16 out_h=1 out_w=1 out_c=10 in_row_pitch=128 in_pix_pitch=16 out_row_pitch=16 out_pix_pitch=16 in_chan_pitch=1 out_chan_pitch=1 pix_count=1 oc_count=10 kernel_h=8 kernel_w=8 stride_h=1 stride_w=1 dil_h=1 dil_w=1 groups=1 w_signed=1 out_signed=1
        + I2F dst=r1 a=r0
        + FMUL dst=r1 a=r1 bsrc=imm imm=0.01f
        + FADD dst=r2 a=r1 bsrc=imm imm=3.0f
        + FMAX dst=r2 a=r2 bsrc=imm
        + FMIN dst=r2 a=r2 bsrc=imm imm=6.0f
        + FMUL dst=r2 a=r2 b=r1
        + FDIV dst=r2 a=r2 bsrc=imm imm=6.0f
        + FCMPLT a=r2 bsrc=imm imm=-0.5f
        + FSUB dst=r2 a=r2 bsrc=imm imm=0.25f pred=1
        + FMUL dst=r2 a=r2 bsrc=imm imm=16.0f
        + FMA dst=r2 a=r1 bsrc=imm imm=0.5f
        + F2IE dst=r3 a=r2
        + F2I dst=r0 a=r2

    ; Per-channel scale: (x * C2 + C3) rescaled by C0/C1 with integer ops.
    SCALE wait_set=F5 set=F6 in_addr=0x6000 out_addr=0x6100 chan_addr=0x2040 h=1 w=1 c=10 in_row_pitch=16 in_pix_pitch=16 out_row_pitch=16 out_pix_pitch=16 in_chan_pitch=1 out_chan_pitch=1 pix_count=1 c_count=10 in_signed=1 out_signed=1 in_zero=-3
        + IMUL dst=r0 a=r0 bsrc=chan chan=2
        + IADD dst=r0 a=r0 bsrc=chan chan=3
        + SHL dst=r0 a=r0 bsrc=imm imm=4
        + SHRA dst=r1 a=r0 bsrc=imm imm=1
        + ISUB dst=r0 a=r0 b=r1
        + SHRR dst=r0 a=r0 bsrc=imm imm=3
        + IMIN dst=r0 a=r0 bsrc=imm imm=1000
        + IMAX dst=r0 a=r0 bsrc=imm imm=-1000
        + FUSED_RELU_F dst=r1 src=r0 multiplier=1056964608 act_min=-128 act_max=127
        + FUSED_RELU dst=r0 src=r0 multiplier=1073741824 shift=30 act_min=-128 act_max=127

    ; Residual add with a select: where a == b keep a, else max(a, b) via compare+select.
    ELTWISE wait_set=F6 set=F7 clear=F5,F6 a_addr=0x6000 b_addr=0x6100 out_addr=0x6200 chan_addr=0x2040 h=1 w=1 c=10 a_row_pitch=16 a_pix_pitch=16 b_row_pitch=16 b_pix_pitch=16 out_row_pitch=16 out_pix_pitch=16 a_chan_pitch=1 b_chan_pitch=1 out_chan_pitch=1 pix_count=1 c_count=10 a_signed=1 b_signed=1 out_signed=1 op=add a_zero=-3 b_zero=-3 a_mult=1073741824 b_mult=536870912 a_shift=30 b_shift=29
        + ICMPEQ a=r0 bsrc=imm
        + MOV dst=r3 bsrc=imm imm=7 pred=1 pred_neg=1
        + ICMPLT a=r0 b=r3
        + SEL dst=r0 a=r3 b=r0

    DMA_WRITE wait_set=F7 clear=F7 dram_addr=0x4000 sram_addr=0x6200 rows=1 row_len=10
    STOP
; The host runs this op after the STOP (segment 0), reading and writing DRAM only.
.hostop segment=0 name="probs" op="softmax{axis=1}"
.hostin name="logits" dtype=int8 shape=[1,10] dram=0x4000 layout=dense scale=0.25 zero_point=-3
.hostout name="probs" dtype=uint8 shape=[1,10] dram=0x4100 layout=dense scale=0.00390625 zero_point=0
