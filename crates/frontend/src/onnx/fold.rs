//! The import-time evaluator for constant folding: index-based ops (transpose,
//! gather, slice, concat, broadcast) on any element type, and elementwise arithmetic in
//! f32 (float inputs) or i64 (integer inputs). Every result is charged to the folding
//! budget before it is allocated.

use super::ctx::{invalid, Ctx, NResult};
use nnac_ir::infer::broadcast;
use nnac_ir::{Tensor, TensorData};

/// Row-major strides of a shape.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The elements at the given flat indices (any element type).
pub fn take(data: &TensorData, idx: &[usize]) -> TensorData {
    fn pick<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
        idx.iter().map(|&i| v[i]).collect()
    }
    match data {
        TensorData::F32(v) => TensorData::F32(pick(v, idx)),
        TensorData::I8(v) => TensorData::I8(pick(v, idx)),
        TensorData::U8(v) => TensorData::U8(pick(v, idx)),
        TensorData::I32(v) => TensorData::I32(pick(v, idx)),
        TensorData::I64(v) => TensorData::I64(pick(v, idx)),
    }
}

/// Builds a tensor whose element count is known to match.
fn tensor(shape: Vec<usize>, data: TensorData) -> NResult<Tensor> {
    Tensor::new(shape, data).ok_or_else(|| invalid("folded element count does not match its shape"))
}

pub fn i64_tensor(shape: Vec<usize>, data: Vec<i64>) -> NResult<Tensor> {
    tensor(shape, TensorData::I64(data))
}

/// The elements of an integer (or integral float) tensor.
pub fn i64s(t: &Tensor, what: &str) -> NResult<Vec<i64>> {
    t.to_i64_vec()
        .ok_or_else(|| invalid(format!("{what} holds non-integer values")))
}

/// For each element of `out` (row-major), the flat index of the broadcast source
/// element of a tensor of shape `inp` (numpy broadcasting, `inp` right-aligned).
pub fn broadcast_map(out: &[usize], inp: &[usize]) -> Vec<usize> {
    let r = out.len();
    let off = r - inp.len();
    let in_strides = strides(inp);
    let n: usize = out.iter().product();
    let mut map = Vec::with_capacity(n);
    let mut index = vec![0usize; r];
    for _ in 0..n {
        let mut flat = 0;
        for (k, &s) in in_strides.iter().enumerate() {
            if inp[k] != 1 {
                flat += index[off + k] * s;
            }
        }
        map.push(flat);
        for ax in (0..r).rev() {
            index[ax] += 1;
            if index[ax] < out[ax] {
                break;
            }
            index[ax] = 0;
        }
    }
    map
}

/// Transposes any tensor.
pub fn transpose(ctx: &Ctx, t: &Tensor, perm: &[usize]) -> NResult<Tensor> {
    let out: Vec<usize> = perm.iter().map(|&p| t.shape[p]).collect();
    ctx.charge_shape(&out)?;
    let src = strides(&t.shape);
    let permuted: Vec<usize> = perm.iter().map(|&p| src[p]).collect();
    let idx = flat_indices(&out, &permuted, 0);
    tensor(out, take(&t.data, &idx))
}

/// Flat indices of a strided view: element `i` of a row-major walk over `shape`
/// reads `base + sum(index[k] * strides[k])`.
fn flat_indices(shape: &[usize], strides: &[usize], base: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(base + index.iter().zip(strides).map(|(i, s)| i * s).sum::<usize>());
        for ax in (0..shape.len()).rev() {
            index[ax] += 1;
            if index[ax] < shape[ax] {
                break;
            }
            index[ax] = 0;
        }
    }
    out
}

/// Concatenates constants along `axis` (shapes already checked to agree off the
/// axis). Integer inputs of different types concatenate as i64.
pub fn concat(ctx: &Ctx, parts: &[&Tensor], axis: usize) -> NResult<Tensor> {
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|t| t.shape[axis]).sum();
    ctx.charge_shape(&shape)?;
    let outer: usize = shape[..axis].iter().product();
    let same = parts.iter().all(|t| t.dtype() == parts[0].dtype());
    let any_float = parts.iter().any(|t| t.dtype() == nnac_ir::DType::F32);
    macro_rules! join {
        ($variant:ident, $conv:expr) => {{
            let srcs: Vec<_> = parts
                .iter()
                .map(|t| $conv(t))
                .collect::<NResult<Vec<_>>>()?;
            let mut out = Vec::new();
            for o in 0..outer {
                for (t, src) in parts.iter().zip(&srcs) {
                    let chunk = t.shape[axis..].iter().product::<usize>();
                    out.extend_from_slice(&src[o * chunk..(o + 1) * chunk]);
                }
            }
            TensorData::$variant(out)
        }};
    }
    let data = if same {
        match &parts[0].data {
            TensorData::F32(_) => join!(F32, |t: &&Tensor| Ok(t.to_f32_vec())),
            TensorData::I8(_) | TensorData::U8(_) | TensorData::I32(_) => {
                let joined = join!(I64, |t: &&Tensor| i64s(t, "concat input"));
                return retype(shape, joined, parts[0].dtype());
            }
            TensorData::I64(_) => join!(I64, |t: &&Tensor| i64s(t, "concat input")),
        }
    } else if any_float {
        join!(F32, |t: &&Tensor| Ok(t.to_f32_vec()))
    } else {
        join!(I64, |t: &&Tensor| i64s(t, "concat input"))
    };
    tensor(shape, data)
}

/// Converts i64 data back to a narrower integer type (values came from it).
fn retype(shape: Vec<usize>, data: TensorData, dtype: nnac_ir::DType) -> NResult<Tensor> {
    let TensorData::I64(v) = data else {
        return tensor(shape, data);
    };
    let d = match dtype {
        nnac_ir::DType::I8 => TensorData::I8(v.iter().map(|&x| x as i8).collect()),
        nnac_ir::DType::U8 => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
        nnac_ir::DType::I32 => TensorData::I32(v.iter().map(|&x| x as i32).collect()),
        _ => TensorData::I64(v),
    };
    tensor(shape, d)
}

/// `Gather` along `axis` with (possibly negative) indices.
pub fn gather(ctx: &Ctx, t: &Tensor, indices: &Tensor, axis: usize) -> NResult<Tensor> {
    let dim = t.shape[axis];
    let idx = i64s(indices, "indices")?;
    let mut resolved = Vec::with_capacity(idx.len());
    for &i in &idx {
        let j = if i < 0 { i + dim as i64 } else { i };
        if j < 0 || j >= dim as i64 {
            return Err(invalid(format!(
                "gather index {i} is out of range for axis size {dim}"
            )));
        }
        resolved.push(j as usize);
    }
    let mut shape = t.shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&t.shape[axis + 1..]);
    ctx.charge_shape(&shape)?;
    let outer: usize = t.shape[..axis].iter().product();
    let inner: usize = t.shape[axis + 1..].iter().product();
    let mut flat = Vec::new();
    for o in 0..outer {
        for &j in &resolved {
            let base = (o * dim + j) * inner;
            flat.extend(base..base + inner);
        }
    }
    tensor(shape, take(&t.data, &flat))
}

/// One sliced axis: `(axis, start, end, step)` as given (unclamped).
pub struct SliceAxis {
    pub axis: usize,
    pub start: i64,
    pub end: i64,
    pub step: i64,
}

/// The indices one axis of size `dim` keeps under ONNX Slice clamping rules.
fn slice_range(dim: usize, s: &SliceAxis) -> Vec<usize> {
    if dim == 0 {
        return Vec::new();
    }
    let dim = dim as i128;
    let (mut start, mut end, step) = (s.start as i128, s.end as i128, s.step as i128);
    if start < 0 {
        start += dim;
    }
    if end < 0 {
        end += dim;
    }
    let mut out = Vec::new();
    if step > 0 {
        let (start, end) = (start.clamp(0, dim), end.clamp(0, dim));
        let mut i = start;
        while i < end {
            out.push(i as usize);
            i += step;
        }
    } else {
        let (start, end) = (start.clamp(0, dim - 1), end.clamp(-1, dim - 1));
        let mut i = start;
        while i > end {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

/// `Slice` of any tensor.
pub fn slice(ctx: &Ctx, t: &Tensor, axes: &[SliceAxis]) -> NResult<Tensor> {
    let mut keep: Vec<Vec<usize>> = t.shape.iter().map(|&d| (0..d).collect()).collect();
    for s in axes {
        if s.step == 0 {
            return Err(invalid("slice step 0"));
        }
        keep[s.axis] = slice_range(t.shape[s.axis], s);
    }
    let shape: Vec<usize> = keep.iter().map(Vec::len).collect();
    ctx.charge_shape(&shape)?;
    let src = strides(&t.shape);
    let mut flat = vec![0usize];
    for (k, &stride) in keep.iter().zip(&src) {
        flat = flat
            .iter()
            .flat_map(|&b| k.iter().map(move |&i| b + i * stride))
            .collect();
    }
    tensor(shape, take(&t.data, &flat))
}

/// Elementwise binary operations the folder evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Pow,
    Equal,
    Less,
    Greater,
}

impl Bin {
    fn is_compare(self) -> bool {
        matches!(self, Bin::Equal | Bin::Less | Bin::Greater)
    }

    fn f(self, a: f32, b: f32) -> f32 {
        let t = |c: bool| if c { 1.0 } else { 0.0 };
        match self {
            Bin::Add => a + b,
            Bin::Sub => a - b,
            Bin::Mul => a * b,
            Bin::Div => a / b,
            Bin::Max => a.max(b),
            Bin::Min => a.min(b),
            Bin::Pow => a.powf(b),
            Bin::Equal => t(a == b),
            Bin::Less => t(a < b),
            Bin::Greater => t(a > b),
        }
    }

    fn i(self, a: i64, b: i64) -> Option<i64> {
        match self {
            Bin::Add => a.checked_add(b),
            Bin::Sub => a.checked_sub(b),
            Bin::Mul => a.checked_mul(b),
            Bin::Div => a.checked_div(b),
            Bin::Max => Some(a.max(b)),
            Bin::Min => Some(a.min(b)),
            Bin::Pow => u32::try_from(b).ok().and_then(|e| a.checked_pow(e)),
            Bin::Equal => Some(i64::from(a == b)),
            Bin::Less => Some(i64::from(a < b)),
            Bin::Greater => Some(i64::from(a > b)),
        }
    }
}

/// Broadcasting elementwise binary op: f32 if either input is float, else i64.
/// Comparisons give i64 0/1 (ONNX bool).
pub fn binary(ctx: &Ctx, op: Bin, a: &Tensor, b: &Tensor) -> NResult<Tensor> {
    let shape = broadcast(&a.shape, &b.shape).map_err(invalid)?;
    ctx.charge_shape(&shape)?;
    let (ma, mb) = (
        broadcast_map(&shape, &a.shape),
        broadcast_map(&shape, &b.shape),
    );
    let float = a.dtype() == nnac_ir::DType::F32 || b.dtype() == nnac_ir::DType::F32;
    if float {
        let (va, vb) = (a.to_f32_vec(), b.to_f32_vec());
        let out: Vec<f32> = ma
            .iter()
            .zip(&mb)
            .map(|(&i, &j)| op.f(va[i], vb[j]))
            .collect();
        if op.is_compare() {
            return i64_tensor(shape, out.iter().map(|&x| x as i64).collect());
        }
        return tensor(shape, TensorData::F32(out));
    }
    let (va, vb) = (i64s(a, "operand")?, i64s(b, "operand")?);
    let out = ma
        .iter()
        .zip(&mb)
        .map(|(&i, &j)| {
            op.i(va[i], vb[j]).ok_or_else(|| {
                invalid(format!(
                    "{op:?}({}, {}) overflows or divides by zero",
                    va[i], vb[j]
                ))
            })
        })
        .collect::<NResult<Vec<i64>>>()?;
    i64_tensor(shape, out)
}

/// Elementwise unary ops the folder evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Un {
    Floor,
    Ceil,
    Neg,
    Abs,
    Sqrt,
    Reciprocal,
    Not,
}

pub fn unary(ctx: &Ctx, op: Un, t: &Tensor) -> NResult<Tensor> {
    ctx.charge_shape(&t.shape)?;
    match (&t.data, op) {
        (TensorData::F32(v), _) => {
            let f = |x: f32| match op {
                Un::Floor => x.floor(),
                Un::Ceil => x.ceil(),
                Un::Neg => -x,
                Un::Abs => x.abs(),
                Un::Sqrt => x.sqrt(),
                Un::Reciprocal => 1.0 / x,
                Un::Not => f32::from(u8::from(x == 0.0)),
            };
            tensor(
                t.shape.clone(),
                TensorData::F32(v.iter().map(|&x| f(x)).collect()),
            )
        }
        (_, Un::Floor | Un::Ceil) => Ok(t.clone()),
        (_, Un::Neg | Un::Abs | Un::Not) => {
            let v = i64s(t, "operand")?;
            let out = v.iter().map(|&x| match op {
                Un::Neg => x.checked_neg(),
                Un::Abs => x.checked_abs(),
                _ => Some(i64::from(x == 0)),
            });
            i64_tensor(
                t.shape.clone(),
                out.collect::<Option<Vec<i64>>>()
                    .ok_or_else(|| invalid("integer overflow"))?,
            )
        }
        _ => Err(invalid(format!("{op:?} of an integer tensor"))),
    }
}

/// `Where(cond, x, y)` with three-way broadcasting.
pub fn where_(ctx: &Ctx, c: &Tensor, x: &Tensor, y: &Tensor) -> NResult<Tensor> {
    let shape =
        broadcast(&broadcast(&c.shape, &x.shape).map_err(invalid)?, &y.shape).map_err(invalid)?;
    ctx.charge_shape(&shape)?;
    let cond = i64s(c, "condition")?;
    let (mc, mx, my) = (
        broadcast_map(&shape, &c.shape),
        broadcast_map(&shape, &x.shape),
        broadcast_map(&shape, &y.shape),
    );
    if x.dtype() == nnac_ir::DType::F32 || y.dtype() == nnac_ir::DType::F32 {
        let (vx, vy) = (x.to_f32_vec(), y.to_f32_vec());
        let out = (0..mc.len())
            .map(|k| {
                if cond[mc[k]] != 0 {
                    vx[mx[k]]
                } else {
                    vy[my[k]]
                }
            })
            .collect();
        return tensor(shape, TensorData::F32(out));
    }
    let (vx, vy) = (i64s(x, "x")?, i64s(y, "y")?);
    let out = (0..mc.len())
        .map(|k| {
            if cond[mc[k]] != 0 {
                vx[mx[k]]
            } else {
                vy[my[k]]
            }
        })
        .collect();
    i64_tensor(shape, out)
}

/// `Expand`: broadcast `t` to `shape` (numpy rules, both ways).
pub fn expand(ctx: &Ctx, t: &Tensor, shape: &[usize]) -> NResult<Tensor> {
    let out = broadcast(&t.shape, shape).map_err(invalid)?;
    ctx.charge_shape(&out)?;
    let map = broadcast_map(&out, &t.shape);
    tensor(out, take(&t.data, &map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_clamps_like_onnx() {
        let s = |start, end, step| SliceAxis {
            axis: 0,
            start,
            end,
            step,
        };
        assert_eq!(slice_range(5, &s(1, i64::MAX, 1)), vec![1, 2, 3, 4]);
        assert_eq!(slice_range(5, &s(-1, i64::MIN, -1)), vec![4, 3, 2, 1, 0]);
        assert_eq!(slice_range(5, &s(0, -1, 2)), vec![0, 2]);
        assert_eq!(slice_range(5, &s(10, 20, 1)), Vec::<usize>::new());
    }

    #[test]
    fn broadcast_map_repeats_rows() {
        assert_eq!(broadcast_map(&[2, 3], &[3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(broadcast_map(&[2, 3], &[2, 1]), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(broadcast_map(&[], &[]), vec![0]);
    }
}
