//! `.caffemodel` decoding: a binary `NetParameter` whose layers (current or V1 form,
//! independently of the prototxt's form) carry the trained blobs. Weights are matched
//! to prototxt layers by name; as in Caffe's `CopyTrainedLayersFrom`, a later layer of
//! the same name replaces an earlier one and layers the prototxt lacks are ignored.

use crate::proto::caffe::{BlobProto, NetParameter};
use crate::ImportError;
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Weight blobs by layer name.
#[derive(Debug, Default)]
pub(super) struct Weights {
    by_layer: BTreeMap<String, Vec<BlobProto>>,
}

impl Weights {
    /// Decodes the bytes of a `.caffemodel`. Never panics on hostile input: every
    /// decode failure is a `Malformed` error naming the file.
    pub(super) fn decode(path: &Path, bytes: &[u8]) -> Result<Weights, ImportError> {
        let net = NetParameter::decode(bytes).map_err(|e| ImportError::Malformed {
            path: PathBuf::from(path),
            msg: format!("not a binary Caffe NetParameter: {e}"),
        })?;
        let mut by_layer = BTreeMap::new();
        let new_form = net
            .layer
            .into_iter()
            .map(|l| (l.name.unwrap_or_default(), l.blobs));
        let v1_form = net
            .layers
            .into_iter()
            .map(|l| (l.name.unwrap_or_default(), l.blobs));
        for (name, blobs) in v1_form.chain(new_form) {
            if !blobs.is_empty() {
                by_layer.insert(name, blobs);
            }
        }
        Ok(Weights { by_layer })
    }

    /// The trained blobs of layer `name`, if the caffemodel has any.
    pub(super) fn get(&self, name: &str) -> Option<&[BlobProto]> {
        self.by_layer.get(name).map(Vec::as_slice)
    }
}
