//! The convolution's kernels: plain loops over channels-last rows whose
//! output width is a compile-time constant, built twice on x86-64 (portable,
//! and for AVX2 + FMA, chosen at run time). Forward (also the input
//! gradient, over flipped and transposed weights) and the weight and bias
//! gradient. Every sum has a fixed order, so results do not depend on how
//! rayon split the batch.

use super::Conv;
use candle_core::{Result, bail};
use rayon::prelude::*;

/// Multiply-add as the kernel's instruction set allows: fused where the
/// target has FMA (one rounding), `a * b + c` elsewhere (never libm's fmaf).
trait MulAdd {
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
}

struct Fused;
impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

struct Separate;
impl MulAdd for Separate {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// The variable that forces the portable kernels (any value but `0`):
/// the AVX2 + FMA build rounds each multiply-add once, the portable one
/// twice, so the two may differ in the last bits; each is bit-for-bit
/// repeatable on its own. The variable lets one machine run both.
pub const PORTABLE_ENV: &str = "STAGEBENCH_PORTABLE_KERNELS";

std::thread_local! {
    /// Tests: the portable kernels on this thread (see [`with_portable`]).
    static PORTABLE_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the portable kernels, on a pool of its own whose threads
/// (and the calling one) all choose them: the kernels are chosen on the
/// thread that starts each loop, which may be one of the pool's (a training
/// step runs on the pool).
#[cfg(test)]
pub(crate) fn with_portable<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(|_| PORTABLE_HERE.with(|p| p.set(true)))
        .build()
        .expect("a test pool");
    PORTABLE_HERE.with(|p| p.set(true));
    let out = pool.install(f);
    PORTABLE_HERE.with(|p| p.set(false));
    out
}

/// Whether this CPU runs the AVX2 + FMA build of the kernels (and nothing
/// asked for the portable one).
fn fused() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let forced = *FORCED.get_or_init(|| std::env::var_os(PORTABLE_ENV).is_some_and(|v| v != "0"));
    if forced || PORTABLE_HERE.with(|p| p.get()) {
        return false;
    }
    fma_cpu()
}

/// Whether this CPU has AVX2 and FMA.
pub(crate) fn fma_cpu() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Calls `$body!(O)` with the output width as a constant, for the widths
/// the kernels are built for.
macro_rules! with_width {
    ($width:expr, $f:ident ( $($arg:expr),* )) => {
        match $width {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            8 => $f::<8>($($arg),*),
            16 => $f::<16>($($arg),*),
            32 => $f::<32>($($arg),*),
            other => bail!("conv: {other} output channels are not supported (1, 2, 4, 5, 8, 16, 32)"),
        }
    };
}

/// `y` `[B, T, out]` from `x` `[B, T, cin]` and `w` `[K, cin, out]`.
#[allow(clippy::too_many_arguments)]
pub(super) fn forward(
    x: &[f32],
    time: usize,
    cin: usize,
    w: &[f32],
    bias: Option<&[f32]>,
    g: Conv,
    out: usize,
    y: &mut [f32],
) -> Result<()> {
    fn run<const O: usize>(
        x: &[f32],
        time: usize,
        cin: usize,
        w: &[f32],
        bias: Option<&[f32]>,
        g: Conv,
        y: &mut [f32],
    ) -> Result<()> {
        let mut b = [0f32; O];
        if let Some(bias) = bias {
            b.copy_from_slice(bias);
        }
        let fused = fused();
        y.par_chunks_mut(time * O).zip(x.par_chunks(time * cin)).for_each(|(y, x)| {
            if fused {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the CPU was checked for AVX2 and FMA just above.
                unsafe {
                    forward_item_fma::<O>(x, cin, w, &b, g, y)
                }
            } else {
                forward_item::<O, Separate>(x, cin, w, &b, g, y)
            }
        });
        Ok(())
    }
    if time == 0 || x.len() % (time * cin) != 0 || y.len() != x.len() / cin * out {
        bail!("conv: buffer sizes do not fit the shapes")
    }
    with_width!(out, run(x, time, cin, w, bias, g, y))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn forward_item_fma<const O: usize>(
    x: &[f32],
    cin: usize,
    w: &[f32],
    bias: &[f32; O],
    g: Conv,
    y: &mut [f32],
) {
    forward_item::<O, Fused>(x, cin, w, bias, g, y)
}

/// One batch item: `x` `[T, cin]` → `y` `[T, O]`.
#[inline(always)]
fn forward_item<const O: usize, M: MulAdd>(
    x: &[f32],
    cin: usize,
    w: &[f32],
    bias: &[f32; O],
    g: Conv,
    y: &mut [f32],
) {
    let time = y.len() / O;
    let pad = g.pad();
    let reach = (g.kernel - 1) * g.dilation; // last tap's offset from the first
    let mut t = 0;
    while t < time {
        // Four rows at a time where every tap of all four is inside the
        // sequence: each weight row is loaded once for four outputs.
        if t >= pad && t + ROWS - 1 + reach - pad < time {
            let mut acc = [*bias; ROWS];
            for j in 0..g.kernel {
                let s = t + j * g.dilation - pad;
                let xs = &x[s * cin..(s + ROWS) * cin];
                let (r0, rest) = xs.split_at(cin);
                let (r1, rest) = rest.split_at(cin);
                let (r2, r3) = rest.split_at(cin);
                let wj = &w[j * cin * O..(j + 1) * cin * O];
                // Zipped, not indexed: the loop carries no bounds checks.
                let taps = wj.chunks_exact(O).zip(r0.iter().zip(r1)).zip(r2.iter().zip(r3));
                for ((wr, (x0, x1)), (x2, x3)) in taps {
                    let wr: &[f32; O] = wr.try_into().expect("a row of O");
                    for (acc, xv) in acc.iter_mut().zip([x0, x1, x2, x3]) {
                        for o in 0..O {
                            acc[o] = M::mul_add(*xv, wr[o], acc[o]);
                        }
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                y[(t + r) * O..(t + r + 1) * O].copy_from_slice(acc);
            }
            t += ROWS;
            continue;
        }
        let mut acc = *bias;
        for j in 0..g.kernel {
            let Some(s) = g.source(t, j, time) else { continue };
            let xs = &x[s * cin..(s + 1) * cin];
            let wj = &w[j * cin * O..(j + 1) * cin * O];
            for (xv, wr) in xs.iter().zip(wj.chunks_exact(O)) {
                for o in 0..O {
                    acc[o] = M::mul_add(*xv, wr[o], acc[o]);
                }
            }
        }
        y[t * O..(t + 1) * O].copy_from_slice(&acc);
        t += 1;
    }
}

/// Output rows the forward kernel computes together.
const ROWS: usize = 4;

/// `dw` `[K, cin, out]` and `db` `[out]` from `x` `[B, T, cin]` and `dy`
/// `[B, T, out]`: per item in parallel, summed in item order.
pub(super) fn weight_grad(
    x: &[f32],
    dy: &[f32],
    time: usize,
    cin: usize,
    out: usize,
    g: Conv,
) -> Result<(Vec<f32>, Vec<f32>)> {
    fn run<const O: usize>(
        x: &[f32],
        dy: &[f32],
        time: usize,
        cin: usize,
        g: Conv,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let fused = fused();
        let parts: Vec<(Vec<f32>, [f32; O])> = dy
            .par_chunks(time * O)
            .zip(x.par_chunks(time * cin))
            .map(|(dy, x)| {
                let mut dw = vec![0f32; g.kernel * cin * O];
                let mut db = [0f32; O];
                if fused {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the CPU was checked for AVX2 and FMA just above.
                    unsafe {
                        weight_grad_item_fma::<O>(x, cin, dy, g, &mut dw, &mut db)
                    }
                } else {
                    weight_grad_item::<O, Separate>(x, cin, dy, g, &mut dw, &mut db)
                }
                (dw, db)
            })
            .collect();
        let mut dw = vec![0f32; g.kernel * cin * O];
        let mut db = vec![0f32; O];
        for (pw, pb) in &parts {
            dw.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
            db.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
        }
        Ok((dw, db))
    }
    if time == 0 || x.len() % (time * cin) != 0 || dy.len() != x.len() / cin * out {
        bail!("conv: gradient sizes do not fit the shapes")
    }
    with_width!(out, run(x, dy, time, cin, g))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn weight_grad_item_fma<const O: usize>(
    x: &[f32],
    cin: usize,
    dy: &[f32],
    g: Conv,
    dw: &mut [f32],
    db: &mut [f32; O],
) {
    weight_grad_item::<O, Fused>(x, cin, dy, g, dw, db)
}

/// One batch item's weight and bias gradient, added into `dw` and `db`.
/// For each tap `j` and a block of [`ROWS`] input channels, the block's
/// gradient rows stay in registers over the whole sequence: per frame, one
/// `dy` row and a few input values, no loads or stores of `dw`. Each
/// element of `dw` still sums its products in frame order from its old
/// value, so the result is the same, bit for bit, as one row at a time.
#[inline(always)]
fn weight_grad_item<const O: usize, M: MulAdd>(
    x: &[f32],
    cin: usize,
    dy: &[f32],
    g: Conv,
    dw: &mut [f32],
    db: &mut [f32; O],
) {
    let time = dy.len() / O;
    for gt in dy.chunks_exact(O) {
        for o in 0..O {
            db[o] += gt[o];
        }
    }
    for j in 0..g.kernel {
        // Tap j of frame t reads row t + j·d − p; the frames whose row lies
        // inside the sequence.
        let (ahead, behind) = (j * g.dilation, g.pad());
        let frames = behind.saturating_sub(ahead)..(time + behind).saturating_sub(ahead).min(time);
        let at = |t: usize| t + ahead - behind;
        let dwj = &mut dw[j * cin * O..(j + 1) * cin * O];
        let mut i0 = 0;
        while i0 + ROWS <= cin {
            channel_block::<O, ROWS, M>(x, cin, dy, frames.clone(), at, i0, dwj);
            i0 += ROWS;
        }
        for i in i0..cin {
            channel_block::<O, 1, M>(x, cin, dy, frames.clone(), at, i, dwj);
        }
    }
}

/// The gradient rows of input channels `i0..i0 + N` at one tap, `dwj`
/// `[cin, O]`, summed over `frames` with the frame's input row at `at(t)`.
#[inline(always)]
fn channel_block<const O: usize, const N: usize, M: MulAdd>(
    x: &[f32],
    cin: usize,
    dy: &[f32],
    frames: std::ops::Range<usize>,
    at: impl Fn(usize) -> usize,
    i0: usize,
    dwj: &mut [f32],
) {
    let mut acc = [[0f32; O]; N];
    for (r, acc) in acc.iter_mut().enumerate() {
        acc.copy_from_slice(&dwj[(i0 + r) * O..(i0 + r + 1) * O]);
    }
    for t in frames {
        let gt: &[f32; O] = dy[t * O..(t + 1) * O].try_into().expect("a row of O");
        let s = at(t) * cin + i0;
        let xs: &[f32; N] = x[s..s + N].try_into().expect("N channels");
        for r in 0..N {
            for o in 0..O {
                acc[r][o] = M::mul_add(xs[r], gt[o], acc[r][o]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        dwj[(i0 + r) * O..(i0 + r + 1) * O].copy_from_slice(acc);
    }
}
