//! The host boundary: nodes a failed lowering named go to the host
//! (`force_host`, first of [`FUSION_PASSES`](crate::FUSION_PASSES)), and every op
//! left without an NNA instruction becomes `nna.host` (`mark_host`); the layers the
//! user keeps in float32 become `nna.host` whole (`float_layers`, last).

pub(crate) mod float_layers;
pub(crate) mod force_host;
pub(crate) mod mark_host;
