//! Pooling. Caffe (`pooling_layer.cpp`) rounds the output size up by default
//! (`ceil((H + 2p - k) / s) + 1`, then drops a last window starting at or past
//! `H + p`), clips windows to the input for MAX, and for AVE divides by the window
//! clipped to the padded input (`min(start + k, H + p) - start`): exactly the IR's
//! `ceil_mode` and `count_include_pad`. brocolli-caffe's `ceil_mode: false` selects
//! floor rounding. `global_pooling` pools over the whole spatial extent.

use crate::caffe::error::{unsupported, LayerError};
use crate::caffe::layer::Layer;
use crate::proto::caffe::pooling_parameter::PoolMethod;
use crate::proto::caffe::PoolingParameter;
use nnac_ir::{Graph, Op, PoolAttrs, PoolKind, Value};

pub(in crate::caffe) fn pooling(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let default = PoolingParameter::default();
    let p = l.param.pooling_param.as_ref().unwrap_or(&default);
    let kind = match PoolMethod::try_from(p.pool.unwrap_or(0)) {
        Ok(PoolMethod::Max) => PoolKind::Max,
        Ok(PoolMethod::Ave) => PoolKind::Avg,
        Ok(PoolMethod::Stochastic) => return unsupported("pool: STOCHASTIC"),
        Err(_) => return Err(l.invalid(format!("unknown pool method {}", p.pool.unwrap_or(0)))),
    };
    let x = l.shape(g, 0);
    if x.len() != 4 {
        return Err(l.invalid(format!("Caffe pooling needs a 4-D input, got {x:?}")));
    }
    if p.global_pooling() {
        if p.kernel_size.is_some() || p.kernel_h.is_some() || p.kernel_w.is_some() {
            return Err(l.invalid("global_pooling cannot have a kernel size"));
        }
        return Ok(vec![l.node(g, Op::GlobalPool(kind), &[l.x()])?]);
    }
    let attrs = window(l, p, kind, &x[2..])?;
    Ok(vec![l.node(g, Op::Pool(attrs), &[l.x()])?])
}

/// Kernel, stride and pad as Caffe's `LayerSetUp` reads them.
fn window(
    l: &Layer,
    p: &PoolingParameter,
    kind: PoolKind,
    spatial: &[usize],
) -> Result<PoolAttrs, LayerError> {
    let kernel = match (p.kernel_size, p.kernel_h, p.kernel_w) {
        (Some(k), None, None) => [k, k],
        (None, Some(h), Some(w)) => [h, w],
        _ => return Err(l.invalid("give either kernel_size or both kernel_h and kernel_w")),
    };
    let stride = if p.stride_h.is_some() || p.stride_w.is_some() {
        [p.stride_h(), p.stride_w()]
    } else {
        [p.stride(); 2]
    };
    let pad = if p.pad_h.is_some() {
        [p.pad_h(), p.pad_w()]
    } else {
        [p.pad(); 2]
    };
    let (kernel, stride, pad) = (
        kernel.map(|v| v as usize),
        stride.map(|v| v as usize),
        pad.map(|v| v as usize),
    );
    if kernel.contains(&0) || stride.contains(&0) {
        return Err(l.invalid(format!(
            "kernel {kernel:?} and stride {stride:?} must be positive"
        )));
    }
    if pad[0] >= kernel[0] || pad[1] >= kernel[1] {
        return Err(l.invalid(format!(
            "pad {pad:?} must be smaller than the kernel {kernel:?}"
        )));
    }
    let ceil_mode = p.ceil_mode();
    if ceil_mode {
        check_last_window(spatial, &kernel, &stride, &pad)?;
    }
    Ok(PoolAttrs {
        kind,
        kernel: kernel.to_vec(),
        strides: stride.to_vec(),
        pads: vec![pad[0], pad[1], pad[0], pad[1]],
        dilations: vec![1, 1],
        ceil_mode,
        count_include_pad: true,
    })
}

/// Caffe drops a last window starting past the padded input only when there is
/// padding; without padding (possible when stride > kernel) it keeps an empty window
/// the IR cannot express.
fn check_last_window(
    spatial: &[usize],
    kernel: &[usize; 2],
    stride: &[usize; 2],
    pad: &[usize; 2],
) -> Result<(), LayerError> {
    for i in 0..2 {
        let (h, k, s) = (spatial[i], kernel[i], stride[i]);
        if pad[i] != 0 || h < k {
            continue;
        }
        let pooled = (h - k).div_ceil(s) + 1;
        if (pooled - 1) * s >= h {
            return unsupported(format!(
                "ceil rounding leaves an empty last window (input {h}, kernel {k}, stride {s}, no padding)"
            ));
        }
    }
    Ok(())
}
