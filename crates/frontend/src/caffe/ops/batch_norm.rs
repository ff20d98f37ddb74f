//! BatchNorm with global statistics: blobs mean `[C]`, variance `[C]` and the
//! moving-average scale factor `[1]`; Caffe divides mean and variance by the factor
//! (a zero factor zeroes both). The IR BatchNorm gets scale 1 and bias 0; the affine
//! part is Caffe's separate Scale layer (folded later by the passes).

use crate::caffe::error::{unsupported, LayerError};
use crate::caffe::layer::Layer;
use nnac_ir::{Graph, Op, Tensor, Value};

pub(in crate::caffe) fn batch_norm(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let p = l.param.batch_norm_param.clone().unwrap_or_default();
    if p.use_global_stats == Some(false) {
        return unsupported(
            "use_global_stats: false (normalising with the statistics of the batch)",
        );
    }
    if p.use_alpha_beta() {
        return unsupported("use_alpha_beta: true");
    }
    let x = l.shape(g, 0);
    if x.len() < 2 {
        return Err(l.invalid(format!("BatchNorm needs an input of rank >= 2, got {x:?}")));
    }
    let c = x[1];
    let factor = l.weight(2, "scale_factor", &[1])?.to_f32_vec()[0];
    let inv = if factor == 0.0 { 0.0 } else { 1.0 / factor };
    let scaled = |idx: usize, role: &str| -> Result<Tensor, LayerError> {
        let data = l
            .weight(idx, role, &[c])?
            .to_f32_vec()
            .iter()
            .map(|v| v * inv)
            .collect();
        Ok(Tensor::f32(vec![c], data).expect("c elements"))
    };
    let (mean, var) = (scaled(0, "mean")?, scaled(1, "variance")?);
    let inputs = [
        l.x(),
        l.constant(
            g,
            "scale",
            Tensor::f32(vec![c], vec![1.0; c]).expect("c elements"),
        ),
        l.constant(
            g,
            "bias",
            Tensor::f32(vec![c], vec![0.0; c]).expect("c elements"),
        ),
        l.constant(g, "mean", mean),
        l.constant(g, "variance", var),
    ];
    Ok(vec![l.node(
        g,
        Op::BatchNorm { epsilon: p.eps() },
        &inputs,
    )?])
}
