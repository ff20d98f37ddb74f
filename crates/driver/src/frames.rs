//! Input frames from files: `.npy` tensors, PNG/JPEG images (with the documented
//! preprocessing flags), or directories of them. Shared by `compile --calib` and
//! the commands that feed a model.

use crate::error::Error;
use nnac_ir::{Tensor, TensorType};
use std::path::{Path, PathBuf};

/// How an image becomes an NCHW float tensor:
/// `x[c] = (pixel[c] / 255 * 255 - mean[c]) * scale`, i.e. pixels in 0..=255 minus
/// the per-channel mean, times the scale; channels RGB unless `--bgr`; resized
/// (bilinear) to the model input's H x W unless `--resize` gives another size.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Preprocess {
    /// Per-channel mean subtracted from 0..255 pixel values, e.g. `104,117,123`.
    #[cfg_attr(feature = "cli", arg(long, value_delimiter = ','))]
    pub mean: Vec<f32>,
    /// Multiplier applied after the mean, e.g. `0.00392157` for 1/255.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 1.0))]
    pub scale: f32,
    /// Feed channels in BGR order (Caffe models).
    #[cfg_attr(feature = "cli", arg(long))]
    pub bgr: bool,
    /// Resize images to HxW before feeding (default: the model input's H and W).
    #[cfg_attr(feature = "cli", arg(long, value_name = "HxW"))]
    pub resize: Option<String>,
}

impl Default for Preprocess {
    /// No mean, scale 1, RGB, resized to the model input (the CLI's defaults).
    fn default() -> Self {
        Preprocess {
            mean: Vec::new(),
            scale: 1.0,
            bgr: false,
            resize: None,
        }
    }
}

fn is_image(p: &Path) -> bool {
    matches!(
        p.extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref(),
        Some("png" | "jpg" | "jpeg")
    )
}

fn is_npy(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()) == Some("npy")
}

/// The files a path names: itself, or the `.npy`/image files of a directory in
/// sorted order.
pub fn expand(path: &Path) -> Result<Vec<PathBuf>, Error> {
    if path.is_dir() {
        let rd = std::fs::read_dir(path)
            .map_err(|e| Error::user(format!("cannot read directory {}: {e}", path.display())))?;
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| is_npy(p) || is_image(p))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(Error::user(format!(
                "{} holds no .npy, .png or .jpg files",
                path.display()
            )));
        }
        Ok(files)
    } else if path.exists() {
        Ok(vec![path.to_path_buf()])
    } else {
        Err(Error::user(format!("{} does not exist", path.display())))
    }
}

/// Loads the frames in `path` for an input of type `ty` (`[1, ...]`): an `.npy` of
/// exactly that shape is one frame, one with an extra leading N is N frames; an image
/// is one frame after preprocessing.
pub fn load_frames(
    path: &Path,
    input: &str,
    ty: &TensorType,
    pre: &Preprocess,
) -> Result<Vec<Tensor>, Error> {
    let mut frames = Vec::new();
    for file in expand(path)? {
        if is_image(&file) {
            frames.push(load_image(&file, ty, pre)?);
        } else if is_npy(&file) {
            let t = nnac_interp::npy::read_npy(&file)
                .map_err(|e| Error::user(format!("{}: {e}", file.display())))?;
            frames.extend(split_frames(t, &file.display().to_string(), input, ty)?);
        } else {
            return Err(Error::user(format!(
                "{}: expected a .npy, .png or .jpg file",
                file.display()
            )));
        }
    }
    Ok(frames)
}

/// Splits a tensor into frames of `ty`'s shape (it is one frame or N stacked); errors
/// start with `origin` (the file name, or what else the tensor came from).
pub fn split_frames(
    t: Tensor,
    origin: &str,
    input: &str,
    ty: &TensorType,
) -> Result<Vec<Tensor>, Error> {
    let data = match &t.data {
        nnac_ir::TensorData::F32(v) => v.clone(),
        _ => {
            return Err(Error::user(format!(
                "{origin}: input '{input}' needs float32 data, the file holds {}",
                t.dtype()
            )))
        }
    };
    let (n, _) = crate::frame_shape::frames_in(input, &t.shape, &ty.shape)
        .map_err(|m| Error::user(format!("{origin}: {m}")))?;
    let per = ty.numel();
    Ok((0..n)
        .map(|i| {
            Tensor::f32(ty.shape.clone(), data[i * per..(i + 1) * per].to_vec())
                .expect("sizes match")
        })
        .collect())
}

fn parse_hw(s: &str) -> Option<(usize, usize)> {
    let (h, w) = s.split_once(['x', 'X'])?;
    Some((h.trim().parse().ok()?, w.trim().parse().ok()?))
}

/// Decodes and preprocesses one image into an NCHW tensor of `ty`'s shape.
pub fn load_image(file: &Path, ty: &TensorType, pre: &Preprocess) -> Result<Tensor, Error> {
    let [1, c, h, w] = ty.shape[..] else {
        return Err(Error::user(format!(
            "{}: images can only feed a 1xCxHxW input, this one is {}",
            file.display(),
            nnac_ir::shape_str(&ty.shape)
        )));
    };
    if c != 3 && c != 1 {
        return Err(Error::user(format!(
            "{}: images feed 1 or 3 channels, the input has {c}",
            file.display()
        )));
    }
    if let Some(r) = &pre.resize {
        match parse_hw(r) {
            Some(s) if s == (h, w) => {}
            Some((rh, rw)) => {
                return Err(Error::user(format!(
                    "--resize {rh}x{rw} does not match the model input {h}x{w}"
                )))
            }
            None => return Err(Error::user(format!("--resize expects HxW, got '{r}'"))),
        }
    }
    if !pre.mean.is_empty() && pre.mean.len() != c {
        return Err(Error::user(format!(
            "--mean has {} values, the input has {c} channels",
            pre.mean.len()
        )));
    }
    let img = image::ImageReader::open(file)
        .map_err(|e| Error::user(format!("cannot read {}: {e}", file.display())))?
        .with_guessed_format()
        .map_err(|e| Error::user(format!("cannot read {}: {e}", file.display())))?
        .decode()
        .map_err(|e| Error::user(format!("cannot decode {}: {e}", file.display())))?
        .to_rgb8();
    let img = image::imageops::resize(
        &img,
        w as u32,
        h as u32,
        image::imageops::FilterType::Triangle,
    );
    let mut out = vec![0f32; c * h * w];
    for (x, y, px) in img.enumerate_pixels() {
        let rgb = [px[0], px[1], px[2]];
        for ch in 0..c {
            let v = if c == 1 {
                (rgb[0] as f32 * 0.299 + rgb[1] as f32 * 0.587 + rgb[2] as f32 * 0.114).round()
            } else if pre.bgr {
                rgb[2 - ch] as f32
            } else {
                rgb[ch] as f32
            };
            let mean = pre.mean.get(ch).copied().unwrap_or(0.0);
            out[(ch * h + y as usize) * w + x as usize] = (v - mean) * pre.scale;
        }
    }
    Ok(Tensor::f32(ty.shape.clone(), out).expect("sizes match"))
}
