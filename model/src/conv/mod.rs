//! A 1-D convolution over `[batch, time, channels]` with "same" zero padding
//! and a dilation, as our own kernels, forward and backward, wrapped as a
//! candle custom op so the rest of the model keeps candle's autograd.
//!
//! Why not candle's `conv1d`: its backward for a padded or dilated
//! convolution falls to a direct loop, and its layout is channels-first. With
//! channels last, the rows of a sequence are contiguous, every tap of the
//! kernel is a row offset, and each output row is a short sum of
//! `input value × weight row` products whose width (the output channels) is
//! a compile-time constant, so the compiler keeps the accumulator in vector
//! registers. The three kernels:
//!
//! - forward: `y[t] = b + Σ_j Σ_i x[t + j·d − p][i] · w[j][i][·]`
//! - input gradient: the forward kernel itself, over `dy`, with the weights
//!   flipped in time and transposed (`w'[j][o][i] = w[K−1−j][i][o]`); with an
//!   odd kernel the padding is symmetric, so the same offsets line up.
//! - weight and bias gradient: per batch item, outer products accumulated
//!   in a private buffer, then summed in item order. The order of every sum
//!   is fixed, so the result does not depend on how rayon split the work.
//!
//! Batch items are independent and run in parallel on rayon's pool. On
//! x86-64 with AVX2 and FMA (checked at run time) the kernels are compiled a
//! second time for those instructions and use fused multiply-adds.

mod kernels;

pub use kernels::PORTABLE_ENV;
#[cfg(test)]
pub(crate) use kernels::{fma_cpu, with_portable};

use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Storage, Tensor, bail};
use kernels::{forward, weight_grad};
use rayon::prelude::*;
use std::sync::Mutex;

/// One convolution's geometry: kernel size (odd) and dilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    pub kernel: usize,
    pub dilation: usize,
}

impl Conv {
    fn pad(&self) -> usize {
        (self.kernel - 1) / 2 * self.dilation
    }

    /// The input row that tap `j` of output row `t` reads, unless it falls
    /// in the padding of a sequence of `time` rows.
    #[inline(always)]
    fn source(&self, t: usize, j: usize, time: usize) -> Option<usize> {
        (t + j * self.dilation).checked_sub(self.pad()).filter(|s| *s < time)
    }
}

/// `x` `[B, T, Cin]`, `w` `[K, Cin, O]`, `b` `[O]` → `[B, T, O]`.
pub fn conv(x: &Tensor, w: &Tensor, b: &Tensor, geometry: Conv) -> Result<Tensor> {
    x.apply_op3(w, b, geometry)
}

/// Checks the shapes of a convolution's operands; returns (B, T, Cin, O).
fn dims(g: Conv, x: &Layout, w: &Layout, b: &Layout) -> Result<(usize, usize, usize, usize)> {
    let (batch, time, cin) = x.shape().dims3()?;
    let (k, wcin, out) = w.shape().dims3()?;
    if k != g.kernel || k % 2 == 0 || wcin != cin || b.shape().dims1()? != out {
        bail!("conv: shapes x {:?}, w {:?}, b {:?} do not fit", x.shape(), w.shape(), b.shape())
    }
    Ok((batch, time, cin, out))
}

/// The input's gradient `[B, T, cin]` from `dy` `[B, T, out]`: the forward
/// kernel over the weights flipped in time and transposed.
fn input_grad(
    dy: &[f32],
    w: &[f32],
    time: usize,
    cin: usize,
    out: usize,
    g: Conv,
) -> Result<Vec<f32>> {
    let k = g.kernel;
    let mut flipped = vec![0f32; w.len()];
    for j in 0..k {
        for i in 0..cin {
            for o in 0..out {
                flipped[((k - 1 - j) * out + o) * cin + i] = w[(j * cin + i) * out + o];
            }
        }
    }
    let mut dx = vec![0f32; dy.len() / out * cin];
    forward(dy, time, out, &flipped, None, g, cin, &mut dx)?;
    Ok(dx)
}

/// A residual block as one op: `h + relu(conv(h) + b)`, with `h` `[B, T, C]`
/// and `w` `[K, C, C]`. One output buffer, a backward with no mask tensors
/// and no separate sum of the two paths' gradients, and the pre-activation
/// kept from the forward pass for the backward one (recomputing it would add
/// a third to the block's multiply-adds).
pub fn residual(h: &Tensor, w: &Tensor, b: &Tensor, geometry: Conv) -> Result<Tensor> {
    h.apply_op3(w, b, Residual { geometry, pre: Mutex::new(None) })
}

/// The residual block's op (see [`residual`]). candle keeps each call's op
/// in the graph and runs that same op backward, so the forward pass leaves
/// its pre-activation here for the backward pass to take.
#[derive(Debug)]
struct Residual {
    geometry: Conv,
    pre: Mutex<Option<Vec<f32>>>,
}

impl CustomOp3 for Residual {
    fn name(&self) -> &'static str {
        "stagebench-residual-conv1d"
    }

    fn cpu_fwd(
        &self,
        hs: &CpuStorage,
        hl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (batch, time, c, out) = dims(self.geometry, hl, wl, bl)?;
        if out != c {
            bail!("residual: {c} channels in, {out} out: a residual block keeps its width")
        }
        let h = contiguous(hs, hl, "h")?;
        let (w, b) = (contiguous(ws, wl, "w")?, contiguous(bs, bl, "b")?);
        let mut z = vec![0f32; h.len()];
        forward(h, time, c, w, Some(b), self.geometry, c, &mut z)?;
        let y = h.par_iter().zip(&z).map(|(h, z)| h + z.max(0.0)).collect();
        *self.pre.lock().unwrap_or_else(|e| e.into_inner()) = Some(z);
        Ok((CpuStorage::F32(y), Shape::from((batch, time, c))))
    }

    fn bwd(
        &self,
        h: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (batch, time, c) = h.dims3()?;
        let g = self.geometry;
        let kept = self.pre.lock().unwrap_or_else(|e| e.into_inner()).take();
        let z = match kept {
            Some(z) => z,
            // A second backward over the same graph: the forward again.
            None => with_data(h, |h| {
                with_data(w, |w| {
                    with_data(b, |b| {
                        let mut z = vec![0f32; h.len()];
                        forward(h, time, c, w, Some(b), g, c, &mut z)?;
                        Ok(z)
                    })
                })
            })?,
        };
        let dz: Vec<f32> = with_data(dy, |dy| {
            // Through the ReLU: zero where the pre-activation was not positive.
            Ok(dy.par_iter().zip(&z).map(|(g, z)| if *z > 0.0 { *g } else { 0.0 }).collect())
        })?;
        // The skip path's gradient (dy) added in place to the conv path's.
        let dh = if h.track_op() {
            let mut dh = with_data(w, |w| input_grad(&dz, w, time, c, c, g))?;
            with_data(dy, |dy| {
                dh.par_iter_mut().zip(dy).for_each(|(a, g)| *a += g);
                Ok(())
            })?;
            Some(Tensor::from_vec(dh, (batch, time, c), h.device())?)
        } else {
            None
        };
        let (dw, db) = with_data(h, |h| weight_grad(h, &dz, time, c, c, g))?;
        Ok((
            dh,
            Some(Tensor::from_vec(dw, w.shape(), w.device())?),
            Some(Tensor::from_vec(db, c, w.device())?),
        ))
    }
}

fn contiguous<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    let Some((start, end)) = l.contiguous_offsets() else {
        bail!("conv: {what} must be contiguous")
    };
    Ok(&s.as_slice::<f32>()?[start..end])
}

/// Calls `f` with a tensor's f32 values, borrowed from its storage where
/// they lie contiguous (copied out only where they do not).
fn with_data<T>(t: &Tensor, f: impl FnOnce(&[f32]) -> Result<T>) -> Result<T> {
    let (storage, layout) = t.storage_and_layout();
    if let (Storage::Cpu(cpu), Some((start, end))) = (&*storage, layout.contiguous_offsets()) {
        return f(&cpu.as_slice::<f32>()?[start..end]);
    }
    drop(storage);
    f(&t.contiguous()?.flatten_all()?.to_vec1::<f32>()?)
}

impl CustomOp3 for Conv {
    fn name(&self) -> &'static str {
        "stagebench-conv1d"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (batch, time, cin, out) = dims(*self, xl, wl, bl)?;
        let x = contiguous(xs, xl, "x")?;
        let w = contiguous(ws, wl, "w")?;
        let b = contiguous(bs, bl, "b")?;
        let mut y = vec![0f32; batch * time * out];
        forward(x, time, cin, w, Some(b), *self, out, &mut y)?;
        Ok((CpuStorage::F32(y), Shape::from((batch, time, out))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (batch, time, cin) = x.dims3()?;
        let (k, _, out) = w.dims3()?;
        // The input's gradient only where something upstream needs it (not
        // for the data batch itself).
        let dx = if x.track_op() {
            let dx =
                with_data(w, |w| with_data(dy, |dy| input_grad(dy, w, time, cin, out, *self)))?;
            Some(Tensor::from_vec(dx, (batch, time, cin), x.device())?)
        } else {
            None
        };
        let (dw, db) =
            with_data(x, |x| with_data(dy, |dy| weight_grad(x, dy, time, cin, out, *self)))?;
        Ok((
            dx,
            Some(Tensor::from_vec(dw, (k, cin, out), w.device())?),
            Some(Tensor::from_vec(db, out, w.device())?),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{D, Device, Var};

    /// The same convolution through candle's own conv1d (channels first,
    /// its own padding and dilation), as an independent reference.
    fn reference(x: &Tensor, w: &Tensor, b: &Tensor, g: Conv) -> Result<Tensor> {
        let xc = x.transpose(1, 2)?.contiguous()?; // [B, Cin, T]
        let wc = w.permute((2, 1, 0))?.contiguous()?; // [O, Cin, K]
        let y = xc.conv1d(&wc, g.pad(), 1, g.dilation, 1)?; // [B, O, T]
        y.transpose(1, 2)?.broadcast_add(b)
    }

    /// The same convolution as im2col from candle's pad, narrow and cat,
    /// then one matmul: autograd through candle's plainest ops only.
    fn im2col_reference(x: &Tensor, w: &Tensor, b: &Tensor, g: Conv) -> Result<Tensor> {
        let (batch, time, cin) = x.dims3()?;
        let padded = x.pad_with_zeros(1, g.pad(), g.pad())?;
        let taps: Vec<Tensor> =
            (0..g.kernel).map(|j| padded.narrow(1, j * g.dilation, time)).collect::<Result<_>>()?;
        let cols = Tensor::cat(&taps, 2)?.reshape((batch * time, g.kernel * cin))?;
        let out = w.dim(2)?;
        let y = cols.matmul(&w.reshape((g.kernel * cin, out))?)?;
        y.reshape((batch, time, out))?.broadcast_add(b)
    }

    fn seeded(shape: &[usize], seed: u64) -> Vec<f32> {
        let mut r = evidence::rng::Rng::new(seed);
        (0..shape.iter().product::<usize>()).map(|_| r.uniform() as f32 * 2.0 - 1.0).collect()
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(D::Minus1)
            .unwrap()
            .to_scalar()
            .unwrap()
    }

    #[test]
    fn forward_and_gradients_match_candles_own_convolution() {
        let dev = Device::Cpu;
        for (k, d, cin, out, time) in [
            (5, 1, 16, 16, 40),
            (5, 2, 16, 16, 40),
            (5, 4, 16, 16, 17),
            (1, 1, 5, 16, 30),
            (1, 1, 16, 2, 30),
            (3, 3, 4, 8, 7),
        ] {
            let g = Conv { kernel: k, dilation: d };
            let x = Var::from_vec(seeded(&[3, time, cin], 1), (3, time, cin), &dev).unwrap();
            let w = Var::from_vec(seeded(&[k, cin, out], 2), (k, cin, out), &dev).unwrap();
            let b = Var::from_vec(seeded(&[out], 3), out, &dev).unwrap();
            // A loss that weighs every output differently.
            let weights =
                Tensor::from_vec(seeded(&[3, time, out], 4), (3, time, out), &dev).unwrap();
            let ours = conv(&x, &w, &b, g).unwrap();
            let theirs = im2col_reference(&x, &w, &b, g).unwrap();
            let candles = reference(&x, &w, &b, g).unwrap();
            assert!(max_diff(&theirs, &candles) < 1e-5, "the references differ");
            assert!(max_diff(&ours, &theirs) < 1e-5, "forward k{k} d{d}");
            let go = (ours * &weights).unwrap().sum_all().unwrap().backward().unwrap();
            let gt = (theirs * &weights).unwrap().sum_all().unwrap().backward().unwrap();
            for (name, v) in [("x", &x), ("w", &w), ("b", &b)] {
                let (a, c) = (go.get(v).unwrap(), gt.get(v).unwrap());
                let diff = max_diff(a, c);
                assert!(diff < 1e-4, "d{name} k{k} d{d} cin{cin} out{out}: {diff}");
            }
        }
    }

    #[test]
    fn the_residual_block_matches_its_composition_from_candles_ops() {
        let dev = Device::Cpu;
        for d in [1, 2, 4] {
            let g = Conv { kernel: 5, dilation: d };
            let (time, c) = (33, 16);
            let h = Var::from_vec(seeded(&[2, time, c], 7), (2, time, c), &dev).unwrap();
            let w = Var::from_vec(seeded(&[5, c, c], 8), (5, c, c), &dev).unwrap();
            let b = Var::from_vec(seeded(&[c], 9), c, &dev).unwrap();
            let weights = Tensor::from_vec(seeded(&[2, time, c], 10), (2, time, c), &dev).unwrap();
            let fused = residual(&h, &w, &b, g).unwrap();
            let composed =
                (h.as_tensor() + im2col_reference(&h, &w, &b, g).unwrap().relu().unwrap()).unwrap();
            assert!(max_diff(&fused, &composed) < 1e-5, "forward d{d}");
            let loss = (&fused * &weights).unwrap().sum_all().unwrap();
            let gf = loss.backward().unwrap();
            // A second backward over the same graph finds no kept
            // pre-activation and computes it again: the same gradients.
            let again = loss.backward().unwrap();
            for v in [&h, &w, &b] {
                let bits = |g: &candle_core::backprop::GradStore| {
                    g.get(v).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
                };
                assert_eq!(bits(&gf), bits(&again), "a second backward, d{d}");
            }
            let gc = (composed * &weights).unwrap().sum_all().unwrap().backward().unwrap();
            for (name, v) in [("h", &h), ("w", &w), ("b", &b)] {
                let diff = max_diff(gf.get(v).unwrap(), gc.get(v).unwrap());
                assert!(diff < 1e-4, "d{name} d{d}: {diff}");
            }
        }
    }

    #[test]
    fn the_weight_gradient_does_not_depend_on_the_thread_count() {
        let (time, cin, out) = (50, 16, 16);
        let g = Conv { kernel: 5, dilation: 2 };
        let x = seeded(&[32, time, cin], 5);
        let dy = seeded(&[32, time, out], 6);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let a = one.install(|| weight_grad(&x, &dy, time, cin, out, g).unwrap());
        let b = three.install(|| weight_grad(&x, &dy, time, cin, out, g).unwrap());
        assert_eq!(a, b);
    }

    /// The weight gradient the plainest way: frame by frame, every tap and
    /// channel, one multiply-add at a time (fused or not).
    fn naive_weight_grad(
        x: &[f32],
        dy: &[f32],
        dims: (usize, usize, usize),
        g: Conv,
        fused: bool,
    ) -> Vec<f32> {
        let (time, cin, out) = dims;
        let mut total = vec![0f32; g.kernel * cin * out];
        for (x, dy) in x.chunks(time * cin).zip(dy.chunks(time * out)) {
            let mut dw = vec![0f32; g.kernel * cin * out];
            for t in 0..time {
                for j in 0..g.kernel {
                    let Some(s) = g.source(t, j, time) else { continue };
                    for i in 0..cin {
                        for o in 0..out {
                            let (a, b, c) =
                                (x[s * cin + i], dy[t * out + o], dw[(j * cin + i) * out + o]);
                            dw[(j * cin + i) * out + o] =
                                if fused { a.mul_add(b, c) } else { a * b + c };
                        }
                    }
                }
            }
            total.iter_mut().zip(&dw).for_each(|(a, b)| *a += b);
        }
        total
    }

    #[test]
    fn the_weight_gradient_sums_in_frame_order_bit_for_bit() {
        for (k, d, cin, out, time) in
            [(5, 1, 16, 16, 40), (5, 4, 16, 16, 17), (1, 1, 5, 16, 30), (3, 3, 5, 2, 7)]
        {
            let g = Conv { kernel: k, dilation: d };
            let x = seeded(&[3, time, cin], 11);
            let dy = seeded(&[3, time, out], 12);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let portable = with_portable(|| weight_grad(&x, &dy, time, cin, out, g).unwrap().0);
            let naive = naive_weight_grad(&x, &dy, (time, cin, out), g, false);
            assert_eq!(bits(&portable), bits(&naive), "portable k{k} d{d} cin{cin} out{out}");
            if fma_cpu() {
                let fused = weight_grad(&x, &dy, time, cin, out, g).unwrap().0;
                let naive = naive_weight_grad(&x, &dy, (time, cin, out), g, true);
                assert_eq!(bits(&fused), bits(&naive), "fma k{k} d{d} cin{cin} out{out}");
            }
        }
    }

    #[test]
    fn unsupported_shapes_are_refused_not_guessed() {
        let dev = Device::Cpu;
        let x = Tensor::zeros((1, 4, 3), candle_core::DType::F32, &dev).unwrap();
        let w = Tensor::zeros((5, 3, 7), candle_core::DType::F32, &dev).unwrap();
        let b = Tensor::zeros(7, candle_core::DType::F32, &dev).unwrap();
        let e = conv(&x, &w, &b, Conv { kernel: 5, dilation: 1 }).unwrap_err().to_string();
        assert!(e.contains("7 output channels are not supported"), "{e}");
        let w = Tensor::zeros((4, 3, 8), candle_core::DType::F32, &dev).unwrap();
        let b = Tensor::zeros(8, candle_core::DType::F32, &dev).unwrap();
        assert!(conv(&x, &w, &b, Conv { kernel: 4, dilation: 1 }).is_err());
    }
}
