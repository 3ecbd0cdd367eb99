//! The stagebench worker: glue between the protocol and the stages.
//!
//! [`child_signals`] gives a user's program the signal state the worker
//! was started with (nothing the worker blocked or ignored for itself).
//! [`alloc`] tells the C library's allocator to keep the memory it was given.
//! [`session`] owns the connection (handshake, assignments, replies).
//! [`measure`] wraps a stage in wall/CPU/peak-RSS measurement.
//! [`stages`] holds the work itself and knows nothing about sockets: a stage
//! talks to the outside only through the [`stages::Reporter`] it is given.
//! [`threads`] decides which thread pools do the model's arithmetic.
//! [`tree`] measures and contains a stage's whole process tree.
//! [`planted`] holds the faults tests plant on purpose (debug builds only).

pub mod alloc;
pub mod child_signals;
pub mod measure;
pub mod planted;
pub mod runtime;
pub mod session;
pub mod stages;
pub mod threads;
pub mod tree;
