//! The recipe's small convolutional sleep model, trained with candle.
//!
//! [`conv`] holds the convolution as our own kernels (forward and both
//! gradients), as a candle custom op; [`net`] the model, its seeded
//! initialisation and one Adam training step; [`adam`] the optimizer,
//! whose state a checkpoint carries. Nothing here reads files or
//! measures time: the worker's model stages do.

pub mod adam;
pub mod conv;
pub mod net;
