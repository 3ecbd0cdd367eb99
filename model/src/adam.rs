//! Adam with its state in the open, so a checkpoint can hold it.
//!
//! The update is candle-nn's `AdamW` at weight decay 0, operation for
//! operation (the same tensors, in the same order, so the same bits), but
//! its moments and step count can be read out and put back: a training run
//! resumed from a checkpoint continues exactly as the uninterrupted one.

use candle_core::{Result, Tensor, Var, backprop::GradStore};

pub const BETA1: f64 = 0.9;
pub const BETA2: f64 = 0.999;

struct Slot {
    var: Var,
    m: Var,
    v: Var,
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
    pub fn new(vars: Vec<Var>, lr: f64, eps: f64) -> Result<Adam> {
        let slots = vars
            .into_iter()
            .map(|var| {
                let zeros = || Var::zeros(var.shape(), var.dtype(), var.device());
                Ok(Slot { m: zeros()?, v: zeros()?, var })
            })
            .collect::<Result<_>>()?;
        Ok(Adam { slots, step_t: 0, lr, eps })
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
        let scale_m = 1f64 / (1f64 - BETA1.powi(t));
        let scale_v = 1f64 / (1f64 - BETA2.powi(t));
        for s in &self.slots {
            let Some(g) = grads.get(&s.var) else { continue };
            let next_m = ((s.m.as_tensor() * BETA1)? + (g * (1.0 - BETA1))?)?;
            let next_v = ((s.v.as_tensor() * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?;
            let m_hat = (&next_m * scale_m)?;
            let v_hat = (&next_v * scale_v)?;
            // AdamW's decay factor is 1 − lr·0 = 1, and x·1 = x exactly.
            let adjusted = (m_hat / (v_hat.sqrt()? + self.eps)?)?;
            let next_theta = (s.var.as_tensor() - (adjusted * self.lr)?)?;
            s.m.set(&next_m)?;
            s.v.set(&next_v)?;
            s.var.set(&next_theta)?;
        }
        Ok(())
    }

    /// Every variable's values and moments, in order, and the step count.
    pub fn state(&self) -> Result<(u64, Vec<SlotState>)> {
        let flat = |v: &Var| v.as_tensor().flatten_all()?.to_vec1::<f32>();
        let slots = self
            .slots
            .iter()
            .map(|s| Ok(SlotState { value: flat(&s.var)?, m: flat(&s.m)?, v: flat(&s.v)? }))
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
        for (s, st) in self.slots.iter().zip(state) {
            let shape = s.var.shape().clone();
            for (var, values) in [(&s.var, &st.value), (&s.m, &st.m), (&s.v, &st.v)] {
                if values.len() != shape.elem_count() {
                    candle_core::bail!("a checkpoint variable does not match the model's shape");
                }
                var.set(&Tensor::from_slice(values, &shape, var.device())?)?;
            }
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
        let init: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        let target = Tensor::arange(0f32, 12f32, &dev).unwrap();
        let (a, b) =
            (Var::from_slice(&init, 12, &dev).unwrap(), Var::from_slice(&init, 12, &dev).unwrap());
        let mut ours = Adam::new(vec![a.clone()], 1e-2, 1e-7).unwrap();
        let params =
            ParamsAdamW { lr: 1e-2, beta1: BETA1, beta2: BETA2, eps: 1e-7, weight_decay: 0.0 };
        let mut theirs = AdamW::new(vec![b.clone()], params).unwrap();
        let loss = |v: &Var| (v.as_tensor() - &target).unwrap().sqr().unwrap().sum_all().unwrap();
        for _ in 0..5 {
            ours.backward_step(&loss(&a)).unwrap();
            theirs.backward_step(&loss(&b)).unwrap();
        }
        let bits = |v: &Var| v.as_tensor().to_vec1::<f32>().unwrap();
        assert_eq!(bits(&a), bits(&b));
        assert_ne!(bits(&a), init, "the steps moved the variable");
        assert_eq!(ours.steps(), 5);
        let (_, state) = ours.state().unwrap();
        assert!(state[0].m.iter().any(|m| *m != 0.0) && state[0].v.iter().all(|v| *v >= 0.0));
    }
}
