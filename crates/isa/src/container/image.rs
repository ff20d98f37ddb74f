//! The bytes of a DRAM image: a buffer of their own, or a range of the buffer the
//! container was read from (a file mapped into memory), read in place.
//!
//! A ResNet-50 container is 30 MB, nearly all of it DRAM image. Reading it through a
//! mapping of the file ([`crate::Program::read_shared`]) neither copies those bytes
//! nor fills fresh memory with them: the simulator's DMA reads the file's pages.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// A buffer a DRAM image can keep its bytes in without copying them: a `Vec<u8>`, a
/// mapped file, anything that stays readable while shared.
pub type SharedBuffer = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The bytes of a DRAM image (`Deref`s to `[u8]`). Equal when their bytes are,
/// wherever they are held.
#[derive(Clone)]
pub struct ImageBytes {
    buffer: SharedBuffer,
    range: Range<usize>,
}

impl ImageBytes {
    /// The bytes `range` of `buffer`, or `None` if the range does not lie inside it.
    pub fn slice_of(buffer: SharedBuffer, range: Range<usize>) -> Option<ImageBytes> {
        let len = (*buffer).as_ref().len();
        (range.start <= range.end && range.end <= len).then_some(ImageBytes { buffer, range })
    }

    pub fn as_slice(&self) -> &[u8] {
        // In range: checked when made (`slice_of`, `From<Vec<u8>>`), and the buffer
        // behind the `Arc` cannot change length.
        &(*self.buffer).as_ref()[self.range.clone()]
    }
}

impl From<Vec<u8>> for ImageBytes {
    fn from(bytes: Vec<u8>) -> ImageBytes {
        let range = 0..bytes.len();
        ImageBytes {
            buffer: Arc::new(bytes),
            range,
        }
    }
}

impl Default for ImageBytes {
    fn default() -> ImageBytes {
        ImageBytes::from(Vec::new())
    }
}

impl Deref for ImageBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for ImageBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for ImageBytes {
    fn eq(&self, other: &ImageBytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ImageBytes {}

impl fmt::Debug for ImageBytes {
    /// As the bytes' `Vec<u8>` would print.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_of_a_shared_buffer_is_its_bytes() {
        let buffer: SharedBuffer = Arc::new((0..20u8).collect::<Vec<u8>>());
        let image = ImageBytes::slice_of(buffer.clone(), 5..9).unwrap();
        assert_eq!(&*image, &[5, 6, 7, 8]);
        assert_eq!(image, ImageBytes::from(vec![5, 6, 7, 8]));
        assert_ne!(image, ImageBytes::from(vec![5, 6, 7]));
        assert_eq!(format!("{image:?}"), format!("{:?}", vec![5u8, 6, 7, 8]));
        assert!(ImageBytes::slice_of(buffer.clone(), 5..21).is_none());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 9..5;
        assert!(ImageBytes::slice_of(buffer.clone(), backwards).is_none());
        assert!(ImageBytes::slice_of(buffer, 20..20).unwrap().is_empty());
        assert!(ImageBytes::default().is_empty());
    }
}
