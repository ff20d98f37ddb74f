//! `.prototxt` parsing: protobuf text format against the committed `caffe.proto`
//! descriptor set (prost-reflect), then transcoded to the prost `NetParameter`.
//! Syntax errors and unknown fields are reported with their line and column.

use crate::proto::caffe::NetParameter;
use crate::proto::{CAFFE_DESCRIPTOR_SET, CAFFE_NET_PARAMETER};
use crate::ImportError;
use miette::Diagnostic;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage};
use std::path::{Path, PathBuf};

/// Parses the text of a `.prototxt` into a `NetParameter`.
pub(super) fn parse_net(path: &Path, bytes: &[u8]) -> Result<NetParameter, ImportError> {
    let malformed = |msg: String| ImportError::Malformed {
        path: PathBuf::from(path),
        msg,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, col) = line_col(
            &String::from_utf8_lossy(&bytes[..e.valid_up_to()]),
            e.valid_up_to(),
        );
        malformed(format!(
            "line {line}, column {col}: the file is not UTF-8 text"
        ))
    })?;
    let pool = DescriptorPool::decode(CAFFE_DESCRIPTOR_SET).map_err(|e| {
        malformed(format!(
            "internal: the committed caffe.proto descriptor set is invalid: {e}"
        ))
    })?;
    let desc = pool
        .get_message_by_name(CAFFE_NET_PARAMETER)
        .ok_or_else(|| {
            malformed(format!(
                "internal: {CAFFE_NET_PARAMETER} is missing from the descriptor set"
            ))
        })?;
    let dynamic = DynamicMessage::parse_text_format(desc, text).map_err(|e| {
        let offset = e
            .labels()
            .and_then(|mut l| l.next())
            .map_or(text.len(), |l| l.offset());
        let (line, col) = line_col(text, offset);
        malformed(format!("line {line}, column {col}: {e}"))
    })?;
    NetParameter::decode(dynamic.encode_to_vec().as_slice()).map_err(|e| {
        malformed(format!(
            "internal: cannot transcode the parsed text to NetParameter: {e}"
        ))
    })
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::line_col;

    #[test]
    fn line_col_counts_from_one() {
        let t = "ab\ncde\n\nf";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 1), (1, 2));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 5), (2, 3));
        assert_eq!(line_col(t, 8), (4, 1));
        assert_eq!(line_col(t, 99), (4, 2));
    }

    #[test]
    fn line_col_counts_characters_not_bytes() {
        assert_eq!(line_col("é x", 3), (1, 3));
    }
}
