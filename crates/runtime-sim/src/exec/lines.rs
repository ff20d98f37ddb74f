//! Words (`u16`, `u32`) stored on whole 64-byte cache lines: the converted weights
//! of the dot-product kernels ([`super::gemm::PairWeights`],
//! [`super::quad::QuadWeights`]).
//!
//! The kernels load a block of 16 channels' words per term pair or quad, a row pitch
//! apart. A plain `Vec` is only 16-byte aligned (an allocator's large blocks start 16
//! bytes into a page), so such a block could span two cache lines where one holds it;
//! with the storage on a line boundary and a row pitch of whole blocks it never does.

use std::ops::{Deref, DerefMut};

/// Bytes per cache line.
const LINE_BYTES: usize = 64;

/// A word type [`LineWords`] can hold: a plain unsigned integer whose size divides
/// the line.
pub trait Word: Copy + Default + PartialEq + std::fmt::Debug + private::Sealed {}
impl Word for u16 {}
impl Word for u32 {}
mod private {
    pub trait Sealed {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

/// A zero-initialised slice of words whose first word starts a cache line: a
/// zeroed `Vec` one line longer than needed (allocated zeroed, so a large one's
/// pages are the kernel's fresh zero pages, never written twice) and the offset of
/// its first line boundary.
pub struct LineWords<T: Word> {
    buf: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Word> LineWords<T> {
    /// Words per cache line.
    pub const PER_LINE: usize = LINE_BYTES / std::mem::size_of::<T>();

    /// `len` zero words.
    pub fn zeroed(len: usize) -> LineWords<T> {
        LineWords::aligned(vec![T::default(); len + Self::PER_LINE], len)
    }

    /// The words of `buf` from its first line boundary on, `len` of them (`buf` has
    /// at least `len + PER_LINE` words).
    fn aligned(buf: Vec<T>, len: usize) -> LineWords<T> {
        let off = buf.as_ptr().align_offset(LINE_BYTES);
        assert!(off < Self::PER_LINE && off + len <= buf.len());
        LineWords { buf, off, len }
    }
}

impl<T: Word> Deref for LineWords<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl<T: Word> DerefMut for LineWords<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

impl<T: Word> Clone for LineWords<T> {
    fn clone(&self) -> LineWords<T> {
        // A copy's first line boundary may lie elsewhere in its buffer.
        let mut c = LineWords::zeroed(self.len);
        c.copy_from_slice(self);
        c
    }
}

impl<T: Word> PartialEq for LineWords<T> {
    fn eq(&self, other: &LineWords<T>) -> bool {
        **self == **other
    }
}

impl<T: Word> Eq for LineWords<T> {}

impl<T: Word> std::fmt::Debug for LineWords<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_start_a_line_and_read_back() {
        assert_eq!(
            (LineWords::<u16>::PER_LINE, LineWords::<u32>::PER_LINE),
            (32, 16)
        );
        for len in [0, 1, 15, 16, 17, 33, 1000] {
            let mut w = LineWords::<u32>::zeroed(len);
            let mut h = LineWords::<u16>::zeroed(len);
            assert_eq!((w.len(), h.len()), (len, len));
            assert!(w.iter().all(|&x| x == 0) && h.iter().all(|&x| x == 0));
            assert_eq!(w.as_ptr() as usize % 64, 0);
            assert_eq!(h.as_ptr() as usize % 64, 0);
            for (i, (x, y)) in w.iter_mut().zip(h.iter_mut()).enumerate() {
                *x = i as u32 * 0x1_0003;
                *y = i as u16 * 3;
            }
            assert!(w.iter().enumerate().all(|(i, &x)| x == i as u32 * 0x1_0003));
            assert!(h.iter().enumerate().all(|(i, &y)| y == i as u16 * 3));
            assert_eq!(w.clone(), w);
            assert_eq!(h.clone(), h);
        }
    }
}
