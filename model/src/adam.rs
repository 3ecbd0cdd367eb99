//! Adam with its state in the open, so a checkpoint can hold it.
//!
//! The update is candle-nn's `AdamW` at weight decay 0, operation for
//! operation and rounding for rounding (the test below holds the bits
//! equal), but as one loop over each variable's elements instead of a
//! dozen candle ops a variable: with 4,018 parameters in ten tensors, the
//! op-by-op update spent its time allocating tensors and waking the thread
//! pool, not computing. Each candle op is one f32 operation an element:
//! `t * c` is `affine(c, 0)`, `t * c + 0`; `t + c` is `affine(1, c)`,
//! `t * 1 + c`; the rest are plain `+ − × ÷ √`, never fused.
//! Its moments and step count can be read out and put back: a training run
//! resumed from a checkpoint continues exactly as the uninterrupted one.

use candle_core::{Result, Tensor, Var, backprop::GradStore};

pub const BETA1: f64 = 0.9;
pub const BETA2: f64 = 0.999;

struct Slot {
    var: Var,
    m: Vec<f32>,
    v: Vec<f32>,
}

/// Adam over a fixed list of variables.
pub struct Adam {
    slots: Vec<Slot>,
    step_t: u64,
    lr: f64,
    eps: f64,
}

/// One variable's values and moments, flattened.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotState {
    pub value: Vec<f32>,
    pub m: Vec<f32>,
    pub v: Vec<f32>,
}

impl Adam {
    pub fn new(vars: Vec<Var>, lr: f64, eps: f64) -> Adam {
        let slots = vars
            .into_iter()
            .map(|var| {
                let n = var.elem_count();
                Slot { m: vec![0f32; n], v: vec![0f32; n], var }
            })
            .collect();
        Adam { slots, step_t: 0, lr, eps }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.step_t
    }

    /// Backward from `loss`, then one update of every variable.
    pub fn backward_step(&mut self, loss: &Tensor) -> Result<()> {
        let grads = loss.backward()?;
        self.step(&grads)
    }

    fn step(&mut self, grads: &GradStore) -> Result<()> {
        self.step_t += 1;
        let t = i32::try_from(self.step_t).unwrap_or(i32::MAX);
        // Each constant as candle's affine op turns it into an f32.
        let f = |c: f64| c as f32;
        let (b1, c1) = (f(BETA1), f(1.0 - BETA1));
        let (b2, c2) = (f(BETA2), f(1.0 - BETA2));
        let scale_m = f(1f64 / (1f64 - BETA1.powi(t)));
        let scale_v = f(1f64 / (1f64 - BETA2.powi(t)));
        let (lr, eps, zero, one) = (f(self.lr), f(self.eps), 0f32, 1f32);
        for s in &mut self.slots {
            let Some(g) = grads.get(&s.var) else { continue };
            let g = g.flatten_all()?.to_vec1::<f32>()?;
            let mut theta = s.var.as_tensor().flatten_all()?.to_vec1::<f32>()?;
            if g.len() != theta.len() {
                candle_core::bail!("adam: a gradient of {} values for {}", g.len(), theta.len());
            }
            for (((theta, m), v), g) in theta.iter_mut().zip(&mut s.m).zip(&mut s.v).zip(&g) {
                let next_m = (*m * b1 + zero) + (g * c1 + zero);
                let next_v = (*v * b2 + zero) + ((g * g) * c2 + zero);
                let m_hat = next_m * scale_m + zero;
                let v_hat = next_v * scale_v + zero;
                // AdamW's decay factor is 1 − lr·0 = 1, and x·1 = x exactly.
                let adjusted = m_hat / (v_hat.sqrt() * one + eps);
                *theta -= adjusted * lr + zero;
                (*m, *v) = (next_m, next_v);
            }
            s.var.set(&Tensor::from_vec(theta, s.var.shape(), s.var.device())?)?;
        }
        Ok(())
    }

    /// Every variable's values and moments, in order, and the step count.
    pub fn state(&self) -> Result<(u64, Vec<SlotState>)> {
        let slots = self
            .slots
            .iter()
            .map(|s| {
                let value = s.var.as_tensor().flatten_all()?.to_vec1::<f32>()?;
                Ok(SlotState { value, m: s.m.clone(), v: s.v.clone() })
            })
            .collect::<Result<_>>()?;
        Ok((self.step_t, slots))
    }

    /// Puts back what [`Adam::state`] gave: values, moments and step count.
    pub fn restore(&mut self, steps: u64, state: &[SlotState]) -> Result<()> {
        if state.len() != self.slots.len() {
            candle_core::bail!(
                "the checkpoint holds {} variables, the model {}",
                state.len(),
                self.slots.len()
            );
        }
        for (s, st) in self.slots.iter_mut().zip(state) {
            let n = s.var.elem_count();
            if [&st.value, &st.m, &st.v].iter().any(|values| values.len() != n) {
                candle_core::bail!("a checkpoint variable does not match the model's shape");
            }
            s.var.set(&Tensor::from_slice(&st.value, s.var.shape(), s.var.device())?)?;
            s.m.clone_from(&st.m);
            s.v.clone_from(&st.v);
        }
        self.step_t = steps;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use candle_nn::optim::{AdamW, Optimizer, ParamsAdamW};

    #[test]
    fn steps_bit_for_bit_as_candles_adamw_without_weight_decay() {
        let dev = Device::Cpu;
        // Two variables, a matrix and a vector, and a loss whose gradients
        // span many magnitudes (and are exactly zero for one element), over
        // enough steps for the bias corrections to move far from 1.
        let init: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        let target = Tensor::arange(0f32, 12f32, &dev).unwrap().reshape((4, 3)).unwrap();
        let scales: Vec<f32> = (0..12).map(|i| 10f32.powi(i % 7 - 4)).collect();
        let scales = Tensor::from_vec(scales, (4, 3), &dev).unwrap();
        let make = || {
            let m = Var::from_slice(&init, (4, 3), &dev).unwrap();
            let v = Var::from_slice(&init[..3], 3, &dev).unwrap();
            (m, v)
        };
        let loss = |(m, v): &(Var, Var)| {
            let d = (m.as_tensor().broadcast_mul(v.as_tensor()).unwrap() - &target).unwrap();
            let d = (d * &scales).unwrap();
            let d = d.narrow(0, 0, 3).unwrap(); // the last row gets a zero gradient
            d.sqr().unwrap().sum_all().unwrap()
        };
        let (a, b) = (make(), make());
        let mut ours = Adam::new(vec![a.0.clone(), a.1.clone()], 1e-2, 1e-7);
        let params =
            ParamsAdamW { lr: 1e-2, beta1: BETA1, beta2: BETA2, eps: 1e-7, weight_decay: 0.0 };
        let mut theirs = AdamW::new(vec![b.0.clone(), b.1.clone()], params).unwrap();
        let bits = |v: &Var| -> Vec<u32> {
            let values = v.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap();
            values.iter().map(|x| x.to_bits()).collect()
        };
        for step in 0..60 {
            ours.backward_step(&loss(&a)).unwrap();
            theirs.backward_step(&loss(&b)).unwrap();
            assert_eq!((bits(&a.0), bits(&a.1)), (bits(&b.0), bits(&b.1)), "step {step}");
        }
        let moved = a.0.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_ne!(moved[..9], init[..9], "the steps moved the variable");
        assert_eq!(moved[9..], init[9..], "a zero gradient leaves its element alone");
        assert_eq!(ours.steps(), 60);
        let (_, state) = ours.state().unwrap();
        assert!(state[0].m.iter().any(|m| *m != 0.0) && state[0].v.iter().all(|v| *v >= 0.0));
    }

    /// The update as candle ops, one op at a time (what this module did
    /// before it became one loop), with its moments in the open.
    fn reference_step(t: i32, theta: &Tensor, m: &Tensor, v: &Tensor, g: &Tensor) -> [Tensor; 3] {
        let (lr, eps) = (1e-2, 1e-7);
        let next_m = ((m * BETA1).unwrap() + (g * (1.0 - BETA1)).unwrap()).unwrap();
        let next_v = ((v * BETA2).unwrap() + (g.sqr().unwrap() * (1.0 - BETA2)).unwrap()).unwrap();
        let m_hat = (&next_m * (1f64 / (1f64 - BETA1.powi(t)))).unwrap();
        let v_hat = (&next_v * (1f64 / (1f64 - BETA2.powi(t)))).unwrap();
        let adjusted = (m_hat / (v_hat.sqrt().unwrap() + eps).unwrap()).unwrap();
        let next_theta = (theta - (adjusted * lr).unwrap()).unwrap();
        [next_theta, next_m, next_v]
    }

    #[test]
    fn moments_match_candles_ops_bit_for_bit() {
        let dev = Device::Cpu;
        let mut r = evidence::rng::Rng::new(3);
        let mut draw = |n: usize, scale: f64| -> Vec<f32> {
            (0..n)
                .map(|i| ((r.uniform() - 0.5) * scale * 10f64.powi(i as i32 % 9 - 6)) as f32)
                .collect()
        };
        let init = draw(64, 1.0);
        let var = Var::from_slice(&init, 64, &dev).unwrap();
        let mut ours = Adam::new(vec![var.clone()], 1e-2, 1e-7);
        let zeros = Tensor::zeros(64, candle_core::DType::F32, &dev).unwrap();
        let (mut theta, mut m, mut v) =
            (Tensor::new(init.as_slice(), &dev).unwrap(), zeros.clone(), zeros);
        let bits = |t: &Tensor| -> Vec<u32> {
            t.to_vec1::<f32>().unwrap().iter().map(|x| x.to_bits()).collect()
        };
        for t in 1..=40 {
            let g = Tensor::new(draw(64, 3.0).as_slice(), &dev).unwrap();
            // A loss whose gradient is exactly g.
            ours.backward_step(&(var.as_tensor() * &g).unwrap().sum_all().unwrap()).unwrap();
            [theta, m, v] = reference_step(t, &theta, &m, &v, &g);
            let (_, state) = ours.state().unwrap();
            let ours_bits = |x: &[f32]| -> Vec<u32> { x.iter().map(|x| x.to_bits()).collect() };
            assert_eq!(ours_bits(&state[0].m), bits(&m), "m at step {t}");
            assert_eq!(ours_bits(&state[0].v), bits(&v), "v at step {t}");
            assert_eq!(ours_bits(&state[0].value), bits(&theta), "theta at step {t}");
        }
    }
}
