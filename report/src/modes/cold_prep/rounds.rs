//! Rounds of the serial-against-parallel comparison as the report lists
//! them (the coordinator's `modes::cold_prep::rounds` runs them).

use serde::{Deserialize, Serialize};

/// Which phase of a round ran first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum First {
    Serial,
    Parallel,
}

impl First {
    /// Odd rounds serial first, even rounds parallel first.
    pub fn of(round: u32) -> First {
        if round % 2 == 1 { First::Serial } else { First::Parallel }
    }
}

/// One round's walls and CPU, as the report lists them.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Round {
    pub round: u32,
    pub first: First,
    pub serial_wall_s: f64,
    pub parallel_wall_s: f64,
    pub serial_cpu_s: f64,
    pub parallel_cpu_s: f64,
    /// `serial_wall_s / parallel_wall_s`.
    pub speedup: f64,
}
