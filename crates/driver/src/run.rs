//! Running a program on the functional simulator on float or raw inputs: reading the
//! program, quantizing the inputs (`nnac_interp::host::quantize`, the one rule), one
//! frame per body run on a loaded [`Session`], and the outputs stacked over the frames,
//! dequantized or raw. `nnac run` and `nnac.InferenceSession` both call these.
//!
//! An input tensor of exactly the descriptor's shape is one frame; one with an extra
//! leading dimension N is N frames, and the outputs are then stacked the same way.

use crate::error::{Error, InputFileError};
use crate::frame_shape::frames_in;
use crate::frames::{load_frames, Preprocess};
use nnac_interp::host::dequantize;
use nnac_interp::npy::read_npy;
use nnac_ir::{DType, Tensor, TensorData, TensorType};
use nnac_isa::arith::code_value;
use nnac_isa::{IoDesc, IoDtype, Program};
use nnac_runtime_sim::{Output, RunStats, Session, SimError, Simulator};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Reads and decodes a `.nnab` program; errors name the file. The file is mapped
/// into memory read-only and the program's DRAM image is its range of the mapping
/// (`Program::read_shared`): the weights are read from the page cache where they
/// are, not copied. A file that cannot be mapped (a pipe, a special file) is read
/// into a buffer instead, which then holds the image (`Program::read_owned`).
pub fn read_program(path: &Path) -> Result<Program, Error> {
    let cannot = |e: std::io::Error| Error::user(format!("cannot read {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let read = match map(&file) {
        Some(mapped) => Program::read_shared(std::sync::Arc::new(mapped)),
        None => {
            // `std::fs::read` into a buffer on huge pages (`nnac_runtime_sim::pages`).
            let len = file.metadata().map_or(0, |m| m.len());
            let mut bytes =
                nnac_runtime_sim::pages::with_capacity(usize::try_from(len).unwrap_or(0));
            file.read_to_end(&mut bytes).map_err(cannot)?;
            Program::read_owned(bytes)
        }
    };
    read.map_err(|e| Error::user(format!("{}: {e}", path.display())))
}

/// A read-only mapping of a regular, non-empty file, or `None`.
fn map(file: &std::fs::File) -> Option<memmap2::Mmap> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    // SAFETY: the mapping is read-only (nothing in this process writes it). Its bytes can
    // change under us only if another process writes or truncates the file while a
    // program read from it is loaded, which nnac, like every loader that maps its
    // model files, does not support (docs/ARCHITECTURE.md, invariant "Program files are
    // mapped, not copied").
    unsafe { memmap2::MmapOptions::new().map(file) }.ok()
}

/// A simulator error as the user's, prefixed with the program's name.
pub fn sim_err(name: &str) -> impl Fn(SimError) -> Error + '_ {
    move |e| Error::user(format!("{name}: {e}"))
}

/// Raw codes of every input, per frame.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    pub frames: Vec<Vec<(String, Vec<u8>)>>,
    /// The inputs had the extra leading frame dimension.
    pub stacked: bool,
}

fn parse_input_arg(s: &str) -> Result<(String, PathBuf), Error> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(Error::user(format!(
            "--input '{s}': expected NAME=FILE.npy"
        ))),
    }
}

/// Checks that `name` is one of the program's inputs.
fn known_input(sim: &Simulator, name: &str) -> Result<(), Error> {
    if sim.inputs().any(|d| d.name == name) {
        return Ok(());
    }
    let known: Vec<&str> = sim.inputs().map(|d| d.name.as_str()).collect();
    Err(Error::user(format!(
        "the program has no input '{name}' (inputs: {})",
        known.join(", ")
    )))
}

/// The frames of `nnac run --input NAME=FILE ...`: `.npy` files (float32 or raw
/// codes), images (preprocessed) or directories of them.
pub fn load_inputs(sim: &Simulator, args: &[String], pre: &Preprocess) -> Result<Frames, Error> {
    let mut given: Vec<(String, PathBuf)> = Vec::new();
    for a in args {
        let (name, file) = parse_input_arg(a)?;
        if given.iter().any(|(n, _)| *n == name) {
            return Err(Error::user(format!("--input given twice for '{name}'")));
        }
        known_input(sim, &name)?;
        given.push((name, file));
    }
    let mut per_input: Vec<PerInput> = Vec::new();
    for d in sim.inputs() {
        let (_, file) = given
            .iter()
            .find(|(n, _)| *n == d.name)
            .ok_or_else(|| Error::user(format!("missing --input {}=FILE.npy", d.name)))?;
        let (frames, stacked) = if file.extension().and_then(|e| e.to_str()) == Some("npy") {
            let t = read_npy(file).map_err(|e| Error::user(e.to_string()))?;
            quantize_input(d, &t).map_err(|m| Error::user(format!("{}: {m}", file.display())))?
        } else {
            let shape: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
            let floats = load_frames(file, &d.name, &TensorType::f32(shape), pre)?;
            let codes = floats
                .iter()
                .map(|t| t.to_f32_vec().iter().map(|&x| quantize(x, d)).collect())
                .collect();
            (codes, file.is_dir())
        };
        per_input.push(PerInput {
            name: d.name.clone(),
            frames,
            stacked,
        });
    }
    combine(per_input)
}

/// The frames of in-memory tensors, one per program input by name (float32, or raw
/// codes of the descriptor's type).
pub fn tensor_inputs(sim: &Simulator, feeds: &[(String, Tensor)]) -> Result<Frames, Error> {
    for (k, (name, _)) in feeds.iter().enumerate() {
        known_input(sim, name)?;
        if feeds[..k].iter().any(|(n, _)| n == name) {
            return Err(Error::user(format!("input '{name}' given twice")));
        }
    }
    let mut per_input: Vec<PerInput> = Vec::new();
    for d in sim.inputs() {
        let (_, t) = feeds
            .iter()
            .find(|(n, _)| *n == d.name)
            .ok_or_else(|| Error::user(format!("missing input '{}'", d.name)))?;
        let (frames, stacked) = quantize_input(d, t).map_err(|e| Error::user(e.to_string()))?;
        per_input.push(PerInput {
            name: d.name.clone(),
            frames,
            stacked,
        });
    }
    combine(per_input)
}

/// One input's frames before they are put side by side.
struct PerInput {
    name: String,
    frames: Vec<Vec<u8>>,
    stacked: bool,
}

/// Frame `i` of every input together; the inputs must agree on the frame count.
fn combine(per_input: Vec<PerInput>) -> Result<Frames, Error> {
    let counts: Vec<(usize, bool)> = per_input
        .iter()
        .map(|p| (p.frames.len(), p.stacked))
        .collect();
    if counts.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::user(format!(
            "inputs disagree on the number of frames (leading dimension): {}",
            per_input
                .iter()
                .map(|p| format!(
                    "{}: {}",
                    p.name,
                    if p.stacked {
                        p.frames.len().to_string()
                    } else {
                        "unstacked".into()
                    }
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let (n, stacked) = counts.first().copied().unwrap_or((1, false));
    let frames = (0..n)
        .map(|i| {
            per_input
                .iter()
                .map(|p| (p.name.clone(), p.frames[i].clone()))
                .collect()
        })
        .collect();
    Ok(Frames { frames, stacked })
}

/// The code of `x` for an input descriptor: `nnac_interp::host::quantize`, the one
/// quantization rule of the simulator, the reference interpreters and the CLI.
pub fn quantize(x: f32, d: &IoDesc) -> u8 {
    let dtype = match d.dtype {
        IoDtype::Uint8 => DType::U8,
        _ => DType::I8,
    };
    nnac_interp::host::quantize(x, d.scale, d.zero_point, dtype) as u8
}

/// The input's frames as raw codes, and whether the tensor had the frame dimension.
pub fn quantize_input(d: &IoDesc, t: &Tensor) -> Result<(Vec<Vec<u8>>, bool), InputFileError> {
    let want: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
    let (n, stacked) = frames_in(&d.name, &t.shape, &want)?;
    let codes: Vec<u8> = match (&t.data, d.dtype) {
        (TensorData::F32(v), _) => v.iter().map(|&x| quantize(x, d)).collect(),
        (TensorData::I8(v), IoDtype::Int8) => v.iter().map(|&x| x as u8).collect(),
        (TensorData::U8(v), IoDtype::Uint8) => v.clone(),
        (other, _) => {
            return Err(InputFileError::Dtype {
                input: d.name.clone(),
                wanted: d.dtype.name(),
                got: other.dtype().name(),
            })
        }
    };
    let per = want.iter().product::<usize>();
    let frames = if per == 0 {
        vec![Vec::new(); n]
    } else {
        codes.chunks_exact(per).map(<[u8]>::to_vec).collect()
    };
    Ok((frames, stacked))
}

/// Every frame through a loaded session; the outputs per frame and the statistics
/// of all of them. Errors name the program and, for stacked frames, the frame.
/// `after_frame` is told the number of frames done after each (a progress bar; its
/// error stops the run).
pub fn run_frames(
    session: &mut Session,
    frames: &Frames,
    name: &str,
    after_frame: &mut dyn FnMut(usize) -> Result<(), Error>,
) -> Result<(Vec<Vec<Output>>, RunStats), Error> {
    let mut results: Vec<Vec<Output>> = Vec::with_capacity(frames.frames.len());
    let mut stats = RunStats::default();
    for (n, frame) in frames.frames.iter().enumerate() {
        let r = session.run(frame).map_err(|e| {
            let at = if frames.stacked {
                format!(" (frame {n})")
            } else {
                String::new()
            };
            Error::user(format!("{name}{at}: {e}"))
        })?;
        stats.merge(&r.stats);
        results.push(r.outputs);
        after_frame(n + 1)?;
    }
    Ok((results, stats))
}

/// One output's codes as a tensor: dequantized float32 (`scale * (code - zero_point)`)
/// or, with `raw`, the int8/uint8 codes themselves.
pub fn output_tensor(
    d: &IoDesc,
    shape: Vec<usize>,
    codes: Vec<u8>,
    raw: bool,
) -> Result<Tensor, Error> {
    let data = match (raw, d.dtype) {
        (true, IoDtype::Int8) => TensorData::I8(codes.iter().map(|&b| b as i8).collect()),
        (true, IoDtype::Uint8) => TensorData::U8(codes),
        // The container refuses program outputs wider than 8 bits.
        (true, other) => {
            return Err(Error::internal(
                "run",
                format!(
                    "output '{}' has dtype {}, not an 8-bit code type",
                    d.name,
                    other.name()
                ),
            ))
        }
        (false, dt) => TensorData::F32(
            codes
                .iter()
                .map(|&b| dequantize(code_value(b, dt == IoDtype::Int8), d.scale, d.zero_point))
                .collect(),
        ),
    };
    Tensor::new(shape, data).ok_or_else(|| {
        Error::internal(
            "run",
            format!("output '{}' has the wrong number of elements", d.name),
        )
    })
}

/// One tensor per program output, frames stacked when the inputs were.
pub fn stack_outputs(
    sim: &Simulator,
    results: &[Vec<Output>],
    stacked: bool,
    raw: bool,
) -> Result<Vec<(String, Tensor)>, Error> {
    let mut out = Vec::new();
    for (k, d) in sim.outputs().enumerate() {
        let mut shape: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
        if stacked {
            shape.insert(0, results.len());
        }
        let codes: Vec<u8> = results
            .iter()
            .flat_map(|r| r[k].data.iter().copied())
            .collect();
        out.push((d.name.clone(), output_tensor(d, shape, codes, raw)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{IoDir, IoLayout};

    fn desc(dtype: IoDtype, scale: f32, zp: i32) -> IoDesc {
        IoDesc {
            name: "x".into(),
            dir: IoDir::Input,
            dtype,
            shape: vec![1, 2],
            dram_addr: 0,
            layout: IoLayout::Dense,
            scale,
            zero_point: zp,
        }
    }

    #[test]
    fn quantization_rounds_half_to_even_and_saturates() {
        let d = desc(IoDtype::Int8, 0.5, 3);
        assert_eq!(quantize(0.25, &d) as i8, 3); // 0.5 -> 0, + 3
        assert_eq!(quantize(-0.25, &d) as i8, 3); // -0.5 -> 0, + 3
        assert_eq!(quantize(0.75, &d) as i8, 5); // 1.5 -> 2, + 3
        let u = desc(IoDtype::Uint8, 1.0, 10);
        assert_eq!(quantize(2.5, &u), 12);
        assert_eq!(quantize(f32::INFINITY, &u), 255);
    }

    #[test]
    fn quantization_is_the_host_rule_and_saturates() {
        let d = desc(IoDtype::Int8, 0.5, 3);
        for x in [0.25f32, -0.25, 0.7, -3.1, 1000.0, -1000.0, f32::NAN] {
            let want = nnac_interp::host::quantize(x, 0.5, 3, DType::I8);
            assert_eq!(i32::from(quantize(x, &d) as i8), want, "{x}");
        }
        assert_eq!(quantize(1000.0, &d) as i8, 127);
        assert_eq!(quantize(-1000.0, &d) as i8, -128);
        assert_eq!(quantize(f32::NAN, &d) as i8, 3);
        let u = desc(IoDtype::Uint8, 1.0, 10);
        assert_eq!(quantize(-20.0, &u), 0);
        assert_eq!(quantize(300.0, &u), 255);
    }

    /// A scratch path of this test process.
    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("nnac-run-{}-{name}", std::process::id()))
    }

    #[test]
    fn programs_are_read_from_a_mapping_or_a_stream() {
        let mut p = Program::new(nnac_isa::HwConfig::fsd());
        p.dram.bytes = (0..5000u32)
            .map(|i| (i * 7) as u8)
            .collect::<Vec<u8>>()
            .into();
        let bytes = p.write().unwrap();
        let file = scratch("p.nnab");
        std::fs::write(&file, &bytes).unwrap();
        let mapped = read_program(&file).unwrap();
        assert_eq!(mapped, p);
        assert_eq!(&*mapped.dram.bytes, &*p.dram.bytes);
        // nnac's writers replace the file by a rename: the loaded program's mapping
        // keeps the old bytes.
        let mut q = p.clone();
        q.dram.bytes = vec![9; 100].into();
        crate::error::write_atomic(&file, &q.write().unwrap()).unwrap();
        assert_eq!(mapped, p);
        assert_eq!(read_program(&file).unwrap(), q);
        // Empty, truncated, missing: user errors naming the file.
        for (len, what) in [(0, "empty"), (bytes.len() - 1, "truncated")] {
            std::fs::write(&file, &bytes[..len]).unwrap();
            let e = read_program(&file).unwrap_err();
            assert!(
                e.exit_code() == 1 && e.to_string().contains("p.nnab"),
                "{what}: {e}"
            );
        }
        std::fs::remove_file(&file).unwrap();
        let e = read_program(&file).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
        // A FIFO cannot be mapped: read as a stream, the same program.
        #[cfg(unix)]
        {
            let fifo = scratch("fifo.nnab");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo");
            let writer = {
                let (fifo, bytes) = (fifo.clone(), bytes.clone());
                std::thread::spawn(move || std::fs::write(fifo, bytes))
            };
            let streamed = read_program(&fifo);
            writer.join().unwrap().unwrap();
            std::fs::remove_file(&fifo).unwrap();
            assert_eq!(streamed.unwrap(), p);
        }
    }

    #[test]
    fn frames_from_a_leading_dimension() {
        let d = desc(IoDtype::Int8, 1.0, 0);
        let t = Tensor::f32(vec![3, 1, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let (frames, stacked) = quantize_input(&d, &t).unwrap();
        assert!(stacked);
        assert_eq!(frames, vec![vec![1, 2], vec![3, 4], vec![5, 6]]);
        let bad = Tensor::f32(vec![2, 2], vec![0.0; 4]).unwrap();
        assert!(quantize_input(&d, &bad).is_err());
        let wrong_type = Tensor::new(vec![1, 2], TensorData::U8(vec![1, 2])).unwrap();
        assert_eq!(
            quantize_input(&d, &wrong_type),
            Err(InputFileError::Dtype {
                input: d.name.clone(),
                wanted: "int8",
                got: "u8"
            })
        );
    }
}
