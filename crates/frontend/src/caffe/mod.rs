//! Caffe importer: a `.prototxt` network (protobuf text format, current `layer {}` or
//! V1 `layers {}` form) plus an optional `.caffemodel` (binary `NetParameter` whose
//! layers carry the weight blobs), lowered into the graph IR.
//!
//! Pipeline: [`text`] parses the prototxt, [`model`] decodes the caffemodel into a
//! table of weight blobs by layer name, [`v1`] upgrades V1 layers to the current form,
//! [`net`] walks the layers in order (dropping those excluded from the TEST phase,
//! tracking the latest producer of every blob name so in-place layers work) and calls
//! the builder [`ops`] registers for each layer type.
//!
//! Conventions: node names are layer names (helper nodes and constants get
//! `<layer>/<role>` names), graph inputs are named by their blob, and graph outputs are
//! the blobs produced but never consumed afterwards (Caffe's rule), named by blob.

mod blob;
mod error;
mod inputs;
mod layer;
mod model;
mod net;
mod ops;
mod phase;
mod text;
mod v1;

use crate::{ImportError, ImportOptions};
use nnac_ir::Graph;
use std::path::{Path, PathBuf};

/// Imports a Caffe network from a `.prototxt` file and, if given, its trained weights
/// from a `.caffemodel` file. Without a caffemodel, weight blobs must be present in the
/// prototxt itself (rare); a layer missing a blob is an error naming the layer and
/// blob.
pub fn import_files(
    prototxt: &Path,
    caffemodel: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    let text = read(prototxt)?;
    let weights = caffemodel
        .map(|p| read(p).map(|b| (p.to_path_buf(), b)))
        .transpose()?;
    let weights = weights.as_ref().map(|(p, b)| Source {
        path: p.as_path(),
        bytes: b,
    });
    import(
        Source {
            path: prototxt,
            bytes: &text,
        },
        weights,
        opts,
    )
}

/// Imports a Caffe network from in-memory bytes: `prototxt` is the text of a
/// `.prototxt`, `caffemodel` the bytes of a `.caffemodel`. Errors name the sources
/// `<prototxt>` and `<caffemodel>`.
pub fn import_bytes(
    prototxt: &[u8],
    caffemodel: Option<&[u8]>,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    let weights = caffemodel.map(|bytes| Source {
        path: Path::new("<caffemodel>"),
        bytes,
    });
    import(
        Source {
            path: Path::new("<prototxt>"),
            bytes: prototxt,
        },
        weights,
        opts,
    )
}

/// One input file's bytes and the path errors name.
#[derive(Clone, Copy)]
struct Source<'a> {
    path: &'a Path,
    bytes: &'a [u8],
}

fn import(
    prototxt: Source<'_>,
    caffemodel: Option<Source<'_>>,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    let net = text::parse_net(prototxt.path, prototxt.bytes)?;
    let weights = match caffemodel {
        Some(src) => model::Weights::decode(src.path, src.bytes)?,
        None => model::Weights::default(),
    };
    net::build(&net, &weights, opts)
}

fn read(path: &Path) -> Result<Vec<u8>, ImportError> {
    std::fs::read(path).map_err(|source| ImportError::Io {
        path: PathBuf::from(path),
        source,
    })
}
