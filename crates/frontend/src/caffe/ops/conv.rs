//! Convolution and Deconvolution. Caffe gives kernel, stride and pad either as
//! repeated values (one for all spatial axes, or one per axis) or as `_h`/`_w` pairs
//! (2-D only); dilation only as repeated values. Weights are `[M, C/g, k...]` for
//! Convolution and `[C, M/g, k...]` for Deconvolution, exactly the IR's layouts.

use crate::caffe::error::{unsupported, LayerError};
use crate::caffe::layer::Layer;
use crate::proto::caffe::ConvolutionParameter;
use nnac_ir::{ConvAttrs, ConvTransposeAttrs, Graph, Op, Value};

/// Spatial geometry of a convolution, one entry per spatial axis.
struct Geometry {
    kernel: Vec<usize>,
    strides: Vec<usize>,
    /// Symmetric padding per axis.
    pads: Vec<usize>,
    dilations: Vec<usize>,
}

impl Geometry {
    fn parse(l: &Layer, p: &ConvolutionParameter, n: usize) -> Result<Geometry, LayerError> {
        let kernel = per_axis(
            l,
            "kernel",
            &p.kernel_size,
            (p.kernel_h, p.kernel_w),
            n,
            None,
        )?;
        let strides = per_axis(l, "stride", &p.stride, (p.stride_h, p.stride_w), n, Some(1))?;
        let pads = per_axis(l, "pad", &p.pad, (p.pad_h, p.pad_w), n, Some(0))?;
        let dilations = per_axis(l, "dilation", &p.dilation, (None, None), n, Some(1))?;
        if kernel.contains(&0) || strides.contains(&0) || dilations.contains(&0) {
            return Err(l.invalid(format!(
                "kernel {kernel:?}, stride {strides:?} and dilation {dilations:?} must be positive"
            )));
        }
        Ok(Geometry {
            kernel,
            strides,
            pads,
            dilations,
        })
    }

    /// IR pads: all begins, then all ends.
    fn ir_pads(&self) -> Vec<usize> {
        self.pads.iter().chain(&self.pads).copied().collect()
    }
}

/// One value per spatial axis from a repeated field (empty: `default`; one value: all
/// axes) or from an `_h`/`_w` pair (2-D only, exclusive with the repeated field).
fn per_axis(
    l: &Layer,
    what: &str,
    repeated: &[u32],
    hw: (Option<u32>, Option<u32>),
    n: usize,
    default: Option<usize>,
) -> Result<Vec<usize>, LayerError> {
    if hw.0.is_some() || hw.1.is_some() {
        if n != 2 || !repeated.is_empty() {
            return Err(l.invalid(format!(
                "{what}_h/{what}_w need 2 spatial axes and no repeated {what} (got {n} axes)"
            )));
        }
        let d = default.map(|d| d as u32);
        let (Some(h), Some(w)) = (hw.0.or(d), hw.1.or(d)) else {
            return Err(l.invalid(format!("{what}_h and {what}_w must be given together")));
        };
        return Ok(vec![h as usize, w as usize]);
    }
    match (repeated.len(), default) {
        (0, Some(d)) => Ok(vec![d; n]),
        (0, None) => Err(l.invalid(format!("{what} size is not given"))),
        (1, _) => Ok(vec![repeated[0] as usize; n]),
        (k, _) if k == n => Ok(repeated.iter().map(|&v| v as usize).collect()),
        (k, _) => Err(l.invalid(format!("{k} {what} values for {n} spatial axes"))),
    }
}

/// The checked common part: parameters, input channels, group, spatial axes.
struct Conv<'p> {
    p: &'p ConvolutionParameter,
    channels: usize,
    num_output: usize,
    group: usize,
    geo: Geometry,
}

fn parse<'p>(g: &Graph, l: &'p Layer) -> Result<Conv<'p>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let Some(p) = l.param.convolution_param.as_ref() else {
        return Err(l.invalid("convolution_param is missing"));
    };
    if p.axis() != 1 {
        return unsupported(format!("channel axis {} (only 1)", p.axis()));
    }
    let x = l.shape(g, 0);
    if x.len() < 3 {
        return Err(l.invalid(format!("input shape {x:?} has no spatial axes")));
    }
    let (num_output, group, channels) = (p.num_output() as usize, p.group() as usize, x[1]);
    if num_output == 0 || group == 0 || channels % group != 0 || num_output % group != 0 {
        return Err(l.invalid(format!(
            "num_output {num_output} and input channels {channels} must be positive multiples of group {group}"
        )));
    }
    let geo = Geometry::parse(l, p, x.len() - 2)?;
    Ok(Conv {
        p,
        channels,
        num_output,
        group,
        geo,
    })
}

/// The weight (and bias, if `bias_term`) constants with the conv input first.
fn inputs(
    g: &mut Graph,
    l: &Layer,
    c: &Conv,
    weight_shape: Vec<usize>,
) -> Result<Vec<Value>, LayerError> {
    let mut inputs = vec![l.x(), l.weight_const(g, 0, "weights", &weight_shape)?];
    if c.p.bias_term() {
        inputs.push(l.weight_const(g, 1, "bias", &[c.num_output])?);
    }
    Ok(inputs)
}

pub(in crate::caffe) fn convolution(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    let c = parse(g, l)?;
    let mut w = vec![c.num_output, c.channels / c.group];
    w.extend(&c.geo.kernel);
    let inputs = inputs(g, l, &c, w)?;
    let attrs = ConvAttrs {
        kernel: c.geo.kernel.clone(),
        strides: c.geo.strides.clone(),
        pads: c.geo.ir_pads(),
        dilations: c.geo.dilations.clone(),
        group: c.group,
    };
    Ok(vec![l.node(g, Op::Conv(attrs), &inputs)?])
}

pub(in crate::caffe) fn deconvolution(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    let c = parse(g, l)?;
    let mut w = vec![c.channels, c.num_output / c.group];
    w.extend(&c.geo.kernel);
    let inputs = inputs(g, l, &c, w)?;
    let attrs = ConvTransposeAttrs {
        kernel: c.geo.kernel.clone(),
        strides: c.geo.strides.clone(),
        pads: c.geo.ir_pads(),
        dilations: c.geo.dilations.clone(),
        output_padding: vec![0; c.geo.kernel.len()],
        group: c.group,
    };
    Ok(vec![l.node(g, Op::ConvTranspose(attrs), &inputs)?])
}
