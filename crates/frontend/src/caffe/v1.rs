//! Upgrade of the deprecated V1 `layers { type: CONVOLUTION ... }` form to the current
//! `LayerParameter` (Caffe's `UpgradeV1LayerParameter`): the enum type becomes the
//! layer type string, the per-type parameters and blobs carry over unchanged.

use crate::proto::caffe::v1_layer_parameter::LayerType;
use crate::proto::caffe::{LayerParameter, V1LayerParameter};

/// The current-form equivalent of a V1 layer. An unknown enum value becomes the type
/// `V1_TYPE_<n>`, which no builder knows (reported as unsupported).
pub(super) fn upgrade(v1: &V1LayerParameter) -> LayerParameter {
    let raw = v1.r#type.unwrap_or(0);
    let ty = LayerType::try_from(raw)
        .map_or_else(|_| format!("V1_TYPE_{raw}"), |t| type_name(t).to_string());
    LayerParameter {
        name: v1.name.clone(),
        r#type: Some(ty),
        bottom: v1.bottom.clone(),
        top: v1.top.clone(),
        include: v1.include.clone(),
        exclude: v1.exclude.clone(),
        blobs: v1.blobs.clone(),
        loss_weight: v1.loss_weight.clone(),
        accuracy_param: v1.accuracy_param,
        argmax_param: v1.argmax_param,
        batch_norm_param: v1.batch_norm_param.clone(),
        bn_param: v1.bn_param.clone(),
        concat_param: v1.concat_param,
        contrastive_loss_param: v1.contrastive_loss_param,
        convolution_param: v1.convolution_param.clone(),
        data_param: v1.data_param.clone(),
        dropout_param: v1.dropout_param,
        dummy_data_param: v1.dummy_data_param.clone(),
        eltwise_param: v1.eltwise_param.clone(),
        exp_param: v1.exp_param,
        hdf5_data_param: v1.hdf5_data_param.clone(),
        hdf5_output_param: v1.hdf5_output_param.clone(),
        hinge_loss_param: v1.hinge_loss_param,
        image_data_param: v1.image_data_param.clone(),
        infogain_loss_param: v1.infogain_loss_param.clone(),
        inner_product_param: v1.inner_product_param.clone(),
        lrn_param: v1.lrn_param,
        memory_data_param: v1.memory_data_param,
        mvn_param: v1.mvn_param,
        pooling_param: v1.pooling_param,
        power_param: v1.power_param,
        relu_param: v1.relu_param,
        sigmoid_param: v1.sigmoid_param,
        softmax_param: v1.softmax_param,
        slice_param: v1.slice_param.clone(),
        tanh_param: v1.tanh_param,
        threshold_param: v1.threshold_param,
        window_data_param: v1.window_data_param.clone(),
        transform_param: v1.transform_param.clone(),
        loss_param: v1.loss_param,
        ..Default::default()
    }
}

/// Caffe's `UpgradeV1LayerType`.
fn type_name(t: LayerType) -> &'static str {
    match t {
        LayerType::None => "",
        LayerType::Absval => "AbsVal",
        LayerType::Accuracy => "Accuracy",
        LayerType::Argmax => "ArgMax",
        LayerType::Bnll => "BNLL",
        LayerType::Concat => "Concat",
        LayerType::ContrastiveLoss => "ContrastiveLoss",
        LayerType::Convolution => "Convolution",
        LayerType::Data => "Data",
        LayerType::Deconvolution => "Deconvolution",
        LayerType::Dropout => "Dropout",
        LayerType::DummyData => "DummyData",
        LayerType::EuclideanLoss => "EuclideanLoss",
        LayerType::Eltwise => "Eltwise",
        LayerType::Exp => "Exp",
        LayerType::Flatten => "Flatten",
        LayerType::Hdf5Data => "HDF5Data",
        LayerType::Hdf5Output => "HDF5Output",
        LayerType::HingeLoss => "HingeLoss",
        LayerType::Im2col => "Im2col",
        LayerType::ImageData => "ImageData",
        LayerType::InfogainLoss => "InfogainLoss",
        LayerType::InnerProduct => "InnerProduct",
        LayerType::Lrn => "LRN",
        LayerType::MemoryData => "MemoryData",
        LayerType::MultinomialLogisticLoss => "MultinomialLogisticLoss",
        LayerType::Mvn => "MVN",
        LayerType::Pooling => "Pooling",
        LayerType::Power => "Power",
        LayerType::Relu => "ReLU",
        LayerType::Sigmoid => "Sigmoid",
        LayerType::SigmoidCrossEntropyLoss => "SigmoidCrossEntropyLoss",
        LayerType::Silence => "Silence",
        LayerType::Softmax => "Softmax",
        LayerType::SoftmaxLoss => "SoftmaxWithLoss",
        LayerType::Split => "Split",
        LayerType::Slice => "Slice",
        LayerType::Tanh => "TanH",
        LayerType::WindowData => "WindowData",
        LayerType::Threshold => "Threshold",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_convolution_keeps_params_and_blobs() {
        let v1 = V1LayerParameter {
            name: Some("conv1".into()),
            r#type: Some(LayerType::Convolution as i32),
            bottom: vec!["data".into()],
            top: vec!["conv1".into()],
            convolution_param: Some(Default::default()),
            blobs: vec![Default::default()],
            ..Default::default()
        };
        let l = upgrade(&v1);
        assert_eq!(l.r#type.as_deref(), Some("Convolution"));
        assert_eq!(l.name.as_deref(), Some("conv1"));
        assert!(l.convolution_param.is_some());
        assert_eq!(l.blobs.len(), 1);
    }

    #[test]
    fn unknown_v1_type_is_named_by_number() {
        let v1 = V1LayerParameter {
            r#type: Some(77),
            ..Default::default()
        };
        assert_eq!(upgrade(&v1).r#type.as_deref(), Some("V1_TYPE_77"));
    }
}
