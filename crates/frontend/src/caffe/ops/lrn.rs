//! LRN across channels (Caffe's default region): `x / (k + alpha/n * sum x^2)^beta`
//! over a window of `local_size` channels, the IR's (ONNX) LRN. WITHIN_CHANNEL (a
//! spatial window) has no IR equivalent.

use crate::caffe::error::{unsupported, LayerError};
use crate::caffe::layer::Layer;
use crate::proto::caffe::lrn_parameter::NormRegion;
use nnac_ir::{Graph, Op, Value};

pub(in crate::caffe) fn lrn(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let p = l.param.lrn_param.unwrap_or_default();
    match NormRegion::try_from(p.norm_region.unwrap_or(0)) {
        Ok(NormRegion::AcrossChannels) => {}
        Ok(NormRegion::WithinChannel) => return unsupported("norm_region: WITHIN_CHANNEL"),
        Err(_) => {
            return Err(l.invalid(format!(
                "unknown norm_region {}",
                p.norm_region.unwrap_or(0)
            )))
        }
    }
    let size = p.local_size() as usize;
    if size.is_multiple_of(2) {
        return Err(l.invalid(format!("local_size {size} must be odd")));
    }
    let op = Op::Lrn {
        size,
        alpha: p.alpha(),
        beta: p.beta(),
        bias: p.k(),
    };
    Ok(vec![l.node(g, op, &[l.x()])?])
}
