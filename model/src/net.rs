//! The seed recipe's model, 4,018 parameters: a per-frame Conv1D 5→16
//! (kernel 1); three residual blocks, each `h + relu(conv(h))` with a
//! Conv1D 16→16 of kernel 5, "same" padding and dilation 1, 2, 4; a
//! per-frame Dense 16→2 giving logits. Sparse categorical cross-entropy
//! from the logits, Adam at 1e-3.
//!
//! Initialisation follows Keras' defaults, from our own seeded generator:
//! kernels Glorot-uniform (limit √(6 / (fan_in + fan_out)), fans counting
//! the kernel's taps), biases zero. Adam uses Keras' ε = 1e-7, β 0.9/0.999.

use crate::adam::{Adam, SlotState};
use crate::conv::{Conv, conv, residual};
use candle_core::{D, DType, Device, Result, Tensor, Var};
use evidence::rng::Rng;
use recipe::contract::N_FEATURES;

/// Hidden channels.
pub const WIDTH: usize = 16;
/// Classes: wake 0, sleep 1.
pub const CLASSES: usize = 2;
pub const LEARNING_RATE: f64 = 1e-3;
pub const ADAM_EPSILON: f64 = 1e-7;

/// Each layer: kernel, dilation, in and out channels.
const LAYERS: [(usize, usize, usize, usize); 5] = [
    (1, 1, N_FEATURES, WIDTH),
    (5, 1, WIDTH, WIDTH),
    (5, 2, WIDTH, WIDTH),
    (5, 4, WIDTH, WIDTH),
    (1, 1, WIDTH, CLASSES),
];

struct Layer {
    geometry: Conv,
    weight: Var,
    bias: Var,
}

/// The model's parameters and optimizer state.
pub struct Model {
    layers: Vec<Layer>,
    optimizer: Adam,
}

impl Model {
    /// A fresh model: weights from `seed`, Adam state zero.
    pub fn new(seed: u64) -> Result<Model> {
        let dev = Device::Cpu;
        let mut rng = Rng::new(seed);
        let mut layers = Vec::new();
        for (kernel, dilation, cin, out) in LAYERS {
            let limit = (6.0 / ((kernel * cin + kernel * out) as f64)).sqrt();
            let w: Vec<f32> = (0..kernel * cin * out)
                .map(|_| ((rng.uniform() * 2.0 - 1.0) * limit) as f32)
                .collect();
            layers.push(Layer {
                geometry: Conv { kernel, dilation },
                weight: Var::from_vec(w, (kernel, cin, out), &dev)?,
                bias: Var::zeros(out, DType::F32, &dev)?,
            });
        }
        let vars = layers.iter().flat_map(|l| [l.weight.clone(), l.bias.clone()]).collect();
        let optimizer = Adam::new(vars, LEARNING_RATE, ADAM_EPSILON);
        Ok(Model { layers, optimizer })
    }

    /// Trainable parameters.
    pub fn parameters(&self) -> usize {
        self.layers.iter().map(|l| l.weight.elem_count() + l.bias.elem_count()).sum()
    }

    /// Logits `[B, T, 2]` for `x` `[B, T, 5]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let [input, blocks @ .., dense] = self.layers.as_slice() else {
            unreachable!("the model has five layers")
        };
        let apply = |l: &Layer, h: &Tensor| conv(h, &l.weight, &l.bias, l.geometry);
        let mut h = apply(input, x)?;
        for l in blocks {
            h = residual(&h, &l.weight, &l.bias, l.geometry)?;
        }
        apply(dense, &h)
    }

    /// Mean cross-entropy of the logits against `y` (class per frame).
    pub fn loss(&self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let logits = self.forward(x)?;
        let logits = logits.reshape(((), CLASSES))?;
        candle_nn::loss::cross_entropy(&logits, &y.flatten_all()?)
    }

    /// One training step on a batch: forward, backward, Adam. Returns the
    /// batch's mean loss before the update.
    pub fn step(&mut self, batch: &HostBatch) -> Result<f32> {
        // The whole step runs on one of rayon's threads. A parallel loop
        // started from outside the pool hands its work in and puts the
        // caller to sleep until it is done, some twenty times a step, with
        // a third thread contending for the cores; started inside, the
        // pool's threads split it among themselves.
        rayon::scope(|_| {
            let loss = self.loss(&batch.x, &batch.y)?;
            self.optimizer.backward_step(&loss)?;
            loss.to_scalar::<f32>()
        })
    }

    /// Every parameter's values, layer by layer (weights then bias).
    pub fn snapshot(&self) -> Result<Vec<Vec<f32>>> {
        self.layers
            .iter()
            .flat_map(|l| [&l.weight, &l.bias])
            .map(|v| v.as_tensor().flatten_all()?.to_vec1::<f32>())
            .collect()
    }

    /// Optimizer steps taken so far.
    pub fn steps(&self) -> u64 {
        self.optimizer.steps()
    }

    /// The weights and the optimizer's state (moments and step count), as
    /// bytes: everything training needs to continue exactly where it was.
    pub fn checkpoint(&self) -> Result<Vec<u8>> {
        let (steps, slots) = self.optimizer.state()?;
        let mut out = CHECKPOINT_MAGIC.to_vec();
        out.extend(steps.to_le_bytes());
        out.extend((slots.len() as u32).to_le_bytes());
        for s in &slots {
            out.extend((s.value.len() as u32).to_le_bytes());
            for v in s.value.iter().chain(&s.m).chain(&s.v) {
                out.extend(v.to_le_bytes());
            }
        }
        Ok(out)
    }

    /// Puts back what [`Model::checkpoint`] wrote; refuses anything else.
    pub fn restore(&mut self, bytes: &[u8]) -> Result<()> {
        let bad = || candle_core::Error::Msg("not a checkpoint of this model".into());
        let mut rest = bytes.strip_prefix(CHECKPOINT_MAGIC.as_slice()).ok_or_else(bad)?;
        let mut take = |n: usize| -> Result<&[u8]> {
            let (head, tail) = rest.split_at_checked(n).ok_or_else(bad)?;
            rest = tail;
            Ok(head)
        };
        let steps = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let vars = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
        let mut slots = Vec::with_capacity(vars.min(64));
        for _ in 0..vars {
            let n = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
            let floats = |b: &[u8]| -> Vec<f32> {
                b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            };
            let value = floats(take(4 * n)?);
            let m = floats(take(4 * n)?);
            let v = floats(take(4 * n)?);
            slots.push(SlotState { value, m, v });
        }
        if !take(0)?.is_empty() || !rest.is_empty() {
            return Err(bad());
        }
        self.optimizer.restore(steps, &slots)
    }
}

/// The first bytes of a checkpoint (format version 1).
const CHECKPOINT_MAGIC: &[u8; 8] = b"SBCKPT01";

/// A batch on the host as the model takes it: `x` `[B, 240, 5]` f32 and
/// `y` `[B, 240]` class indices (u32, as candle's gather wants them).
pub struct HostBatch {
    pub len: usize,
    pub x: Tensor,
    pub y: Tensor,
}

impl HostBatch {
    /// From a loader batch, its shape checked against the model's input;
    /// every target must be a known class.
    pub fn from_loader(b: &recipe::loader::Batch) -> Result<HostBatch> {
        let frames = recipe::targets::CONTEXT_FRAMES;
        let len = b.len();
        if b.x.dim() != (len, frames, N_FEATURES) || b.y.dim() != (len, frames) {
            return Err(candle_core::Error::Msg(format!(
                "a loader batch of x {:?} and y {:?}; the model takes [B, {frames}, {N_FEATURES}] and [B, {frames}]",
                b.x.shape(),
                b.y.shape()
            )));
        }
        let x = b.x.as_standard_layout();
        let y = b
            .y
            .iter()
            .map(|v| match *v {
                0 | 1 => Ok(*v as u32),
                other => Err(candle_core::Error::Msg(format!(
                    "a loader batch holds target {other}; only 0 (wake) and 1 (sleep) can be trained"
                ))),
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(HostBatch {
            len,
            x: Tensor::from_slice(
                x.as_slice().expect("a standard-layout array is one slice"),
                (len, frames, N_FEATURES),
                &Device::Cpu,
            )?,
            y: Tensor::from_vec(y, (len, frames), &Device::Cpu)?,
        })
    }
}

/// Argmax accuracy of the model on a batch (a sanity figure, not an evaluation).
pub fn accuracy(model: &Model, batch: &HostBatch) -> Result<f32> {
    let pred = model.forward(&batch.x)?.argmax(D::Minus1)?;
    let hit = pred.eq(&batch.y)?.to_dtype(DType::F32)?.mean_all()?;
    hit.to_scalar::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use recipe::loader::Batch;
    use recipe::targets::CONTEXT_FRAMES;

    /// A batch whose class is a clear function of the first feature.
    fn learnable(len: usize, seed: u64) -> HostBatch {
        let mut r = Rng::new(seed);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for _ in 0..len * CONTEXT_FRAMES {
            let v = r.uniform() as f32 * 2.0 - 1.0;
            x.extend([v, 0.1, -0.2, 0.3, r.uniform() as f32]);
            y.push(i32::from(v > 0.0));
        }
        let x = ndarray::Array3::from_shape_vec((len, CONTEXT_FRAMES, 5), x).unwrap();
        let y = ndarray::Array2::from_shape_vec((len, CONTEXT_FRAMES), y).unwrap();
        HostBatch::from_loader(&Batch { x, y }).unwrap()
    }

    /// Both builds of the kernels train bit for bit repeatably; they may
    /// differ from each other only in rounding (one rounding per fused
    /// multiply-add against two), never by more.
    #[test]
    fn the_portable_and_the_fma_kernels_each_repeat_and_differ_only_in_rounding() {
        let batch = learnable(4, 5);
        let train = |portable: bool| {
            let run = || {
                let mut m = Model::new(0).unwrap();
                for _ in 0..3 {
                    m.step(&batch).unwrap();
                }
                m.snapshot().unwrap()
            };
            if portable { crate::conv::with_portable(run) } else { run() }
        };
        let (p1, p2) = (train(true), train(true));
        assert_eq!(p1, p2, "the portable kernels do not repeat");
        let (f1, f2) = (train(false), train(false));
        assert_eq!(f1, f2, "the default kernels do not repeat");
        let worst = p1
            .iter()
            .flatten()
            .zip(f1.iter().flatten())
            .map(|(a, b)| ((a - b).abs() / a.abs().max(1e-3)) as f64)
            .fold(0.0, f64::max);
        assert!(worst < 1e-4, "the two builds differ by more than rounding: {worst}");
        if crate::conv::fma_cpu() {
            // The switch switches: on an FMA machine the paths do differ.
            assert_ne!(p1, f1, "forcing the portable kernels changed nothing");
        }
    }

    #[test]
    fn the_model_has_the_seed_recipes_4018_parameters() {
        assert_eq!(Model::new(0).unwrap().parameters(), 4018);
    }

    #[test]
    fn the_same_seed_gives_the_same_weights_and_the_same_training() {
        let batch = learnable(4, 1);
        let (mut a, mut b) = (Model::new(0).unwrap(), Model::new(0).unwrap());
        assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
        assert_ne!(a.snapshot().unwrap(), Model::new(1).unwrap().snapshot().unwrap());
        for _ in 0..3 {
            assert_eq!(a.step(&batch).unwrap(), b.step(&batch).unwrap());
        }
        assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
    }

    #[test]
    fn a_restored_checkpoint_trains_on_exactly_as_the_uninterrupted_model() {
        let batch = learnable(4, 3);
        let mut a = Model::new(0).unwrap();
        for _ in 0..3 {
            a.step(&batch).unwrap();
        }
        let saved = a.checkpoint().unwrap();
        let mut b = Model::new(7).unwrap();
        b.restore(&saved).unwrap();
        assert_eq!(b.steps(), 3);
        assert_eq!(b.checkpoint().unwrap(), saved, "restore then checkpoint is the identity");
        for _ in 0..3 {
            assert_eq!(a.step(&batch).unwrap(), b.step(&batch).unwrap());
        }
        assert_eq!(a.checkpoint().unwrap(), b.checkpoint().unwrap());
        let mut truncated = saved.clone();
        truncated.pop();
        assert!(Model::new(0).unwrap().restore(&truncated).is_err());
        assert!(Model::new(0).unwrap().restore(b"SBCKPT00").is_err());
    }

    #[test]
    fn training_lowers_the_loss_and_learns_a_learnable_batch() {
        let batch = learnable(8, 2);
        let mut m = Model::new(0).unwrap();
        let first = m.step(&batch).unwrap();
        let mut last = first;
        for _ in 0..150 {
            last = m.step(&batch).unwrap();
        }
        assert!(last < first * 0.5, "loss {first} → {last}");
        assert!(accuracy(&m, &batch).unwrap() > 0.9);
    }

    #[test]
    fn an_unknown_target_is_refused_not_trained() {
        let mut b = Batch {
            x: ndarray::Array3::zeros((1, CONTEXT_FRAMES, 5)),
            y: ndarray::Array2::zeros((1, CONTEXT_FRAMES)),
        };
        b.y[[0, 7]] = -1;
        let e = HostBatch::from_loader(&b).err().unwrap().to_string();
        assert!(e.contains("target -1"), "{e}");
        // A batch of another shape is refused where it enters candle.
        let wide = Batch {
            x: ndarray::Array3::zeros((1, CONTEXT_FRAMES, 6)),
            y: ndarray::Array2::zeros((1, CONTEXT_FRAMES)),
        };
        let e = HostBatch::from_loader(&wide).err().unwrap().to_string();
        assert!(e.contains("the model takes [B, 240, 5]"), "{e}");
    }
}
