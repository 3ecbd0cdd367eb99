//! `dataset generate`: a deterministic synthetic cohort in exactly the raw
//! CMI format (`train_series.parquet`, `train_events.csv`), with the real
//! data's quirks: nights without events, daylight-saving jumps of the local
//! clock, non-wear stretches (constant anglez, zero enmo, no events),
//! occasional non-finite samples, and sleep that looks like sleep (still
//! arm, low movement) against wake (restless arm, more movement).

use crate::clock;
use crate::contract::SAMPLE_SECONDS;
use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Float32Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use evidence::rng::Rng;
use parquet::arrow::ArrowWriter;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const SERIES_FILE: &str = "train_series.parquet";
pub const EVENTS_FILE: &str = "train_events.csv";

/// Cohort sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// 8 series of 2–4 days (~0.5 M rows): for tests, seconds.
    Tiny,
    /// 36 series of 5–12 days (~6 M rows): the embedded default.
    Small,
    /// 277 series of 10–35 days (~128 M rows): the real data's size.
    Seed,
}

impl Scale {
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Seed => "seed",
        }
    }

    fn series(self) -> usize {
        match self {
            Scale::Tiny => 8,
            Scale::Small => 36,
            Scale::Seed => 277,
        }
    }

    /// Days of recording for a uniform draw `u`: min + span·√u, so that the
    /// seed scale averages ~26.7 days (≈128 M rows over 277 series).
    fn days(self, u: f64) -> f64 {
        let (min, span) = match self {
            Scale::Tiny => (2.0, 2.0),
            Scale::Small => (5.0, 7.0),
            Scale::Seed => (10.0, 25.0),
        };
        min + span * u.sqrt()
    }
}

/// A scale name that is not one of the three.
#[derive(Debug, thiserror::Error)]
#[error("unknown scale '{0}' (tiny, small, seed)")]
pub struct UnknownScale(pub String);

impl std::str::FromStr for Scale {
    type Err = UnknownScale;
    fn from_str(s: &str) -> Result<Self, UnknownScale> {
        match s {
            "tiny" => Ok(Scale::Tiny),
            "small" => Ok(Scale::Small),
            "seed" => Ok(Scale::Seed),
            _ => Err(UnknownScale(s.to_string())),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("output path '{0}' already exists; choose a new --out (nothing was written)")]
    Exists(PathBuf),
    #[error("{what}: {detail}")]
    Write { what: String, detail: String },
}

/// What a generated cohort holds.
#[derive(Debug, Clone, Copy)]
pub struct Generated {
    pub series: usize,
    pub rows: u64,
    pub events: u64,
    pub missing_events: u64,
    pub dst_series: usize,
}

const SAMPLES_PER_DAY: usize = 86_400 / SAMPLE_SECONDS as usize;

struct Series {
    id: String,
    steps: Vec<u32>,
    stamps: StringArray,
    anglez: Vec<f32>,
    enmo: Vec<f32>,
    events: String,
    events_total: u64,
    events_missing: u64,
    crosses_dst: bool,
}

/// Writes a cohort of `scale` into the new directory `out`. `progress` is
/// called with (series written, total).
pub fn generate(
    out: &Path,
    scale: Scale,
    seed: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Generated, GenerateError> {
    let fail = |e: std::io::Error, what: &str| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            GenerateError::Exists(out.to_path_buf())
        } else {
            GenerateError::Write { what: what.into(), detail: e.to_string() }
        }
    };
    let staging =
        evidence::Staging::new(out).map_err(|e| fail(e, "creating the output directory"))?;
    let g = write_cohort(staging.path(), scale, seed, progress)?;
    staging.publish().map_err(|e| fail(e, "publishing the cohort"))?;
    Ok(g)
}

fn write_cohort(
    dir: &Path,
    scale: Scale,
    seed: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Generated, GenerateError> {
    let werr = |what: &str, e: &dyn std::fmt::Display| GenerateError::Write {
        what: what.into(),
        detail: e.to_string(),
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("series_id", DataType::Utf8, false),
        Field::new("step", DataType::UInt32, false),
        Field::new("timestamp", DataType::Utf8, false),
        Field::new("anglez", DataType::Float32, false),
        Field::new("enmo", DataType::Float32, false),
    ]));
    let file = File::create(dir.join(SERIES_FILE)).map_err(|e| werr(SERIES_FILE, &e))?;
    let mut writer =
        ArrowWriter::try_new(file, schema.clone(), Some(crate::freeze::writer_properties()))
            .map_err(|e| werr(SERIES_FILE, &e))?;
    let mut events = String::from("series_id,night,event,step,timestamp\n");
    let total = scale.series();
    let mut g = Generated { series: total, rows: 0, events: 0, missing_events: 0, dst_series: 0 };
    // Each series has its own generator, so chunks can be built in parallel
    // and the cohort is the same whatever the thread count.
    let chunk = rayon::current_num_threads().max(1) * 2;
    let mut written = 0;
    for start in (0..total).step_by(chunk) {
        let built: Vec<Series> = (start..(start + chunk).min(total))
            .into_par_iter()
            .map(|i| series(scale, seed, i))
            .collect();
        for s in built {
            let n = s.steps.len();
            let cols: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from_iter_values(std::iter::repeat_n(&s.id, n))),
                Arc::new(UInt32Array::from(s.steps)),
                Arc::new(s.stamps),
                Arc::new(Float32Array::from(s.anglez)),
                Arc::new(Float32Array::from(s.enmo)),
            ];
            let batch =
                RecordBatch::try_new(schema.clone(), cols).map_err(|e| werr(SERIES_FILE, &e))?;
            writer.write(&batch).map_err(|e| werr(SERIES_FILE, &e))?;
            events.push_str(&s.events);
            g.rows += n as u64;
            g.events += s.events_total;
            g.missing_events += s.events_missing;
            g.dst_series += s.crosses_dst as usize;
            written += 1;
            progress(written, total);
        }
    }
    let f = writer.into_inner().map_err(|e| werr(SERIES_FILE, &e))?;
    f.sync_all().map_err(|e| werr(SERIES_FILE, &e))?;
    evidence::write_atomic(&dir.join(EVENTS_FILE), events.as_bytes())
        .map_err(|e| werr(EVENTS_FILE, &e))?;
    Ok(g)
}

/// Builds series `index` of the cohort.
fn series(scale: Scale, seed: u64, index: usize) -> Series {
    let mut rng =
        Rng::new(seed.wrapping_mul(0x1000_0000_01b3) ^ (index as u64).wrapping_mul(0x9e37_79b9));
    let id = format!("{:012x}", rng.next_u64() & 0xffff_ffff_ffff);
    let days = scale.days(rng.uniform());
    let n = (days * SAMPLES_PER_DAY as f64) as usize;
    // Start on a day between 2017-08-01 and 2019-06-30, at a local time
    // between 10:00 and 20:45 on a quarter hour.
    let day0 = clock::days_from_civil(2017, 8, 1) + rng.range(0, 698) as i64;
    let local_start = rng.range(40, 84) as i64 * 900;
    let utc0 = {
        let guess = day0 * 86_400 + local_start + 5 * 3600;
        day0 * 86_400 + local_start - clock::eastern_offset(guess)
    };

    // Non-wear: sometimes a tail of 1–3 days, sometimes a stretch mid-series.
    let mut nonwear = vec![false; n];
    if days >= 4.0 && rng.chance(0.5) {
        let tail = (rng.range(1, 4) as usize * SAMPLES_PER_DAY).min(n / 3);
        nonwear[n - tail..].iter_mut().for_each(|x| *x = true);
    }
    if rng.chance(0.15) {
        let len = rng.range(8 * 720, 36 * 720) as usize;
        let at = rng.range(0, n.saturating_sub(len).max(1) as u64) as usize;
        nonwear[at..(at + len).min(n)].iter_mut().for_each(|x| *x = true);
    }

    // Nights: onset around 22:30 local, wakeup around 06:45 (σ 45 min).
    let first_midnight = (86_400 - local_start) as f64 / SAMPLE_SECONDS as f64;
    let mut asleep = vec![false; n];
    let mut events = String::new();
    let (mut total, mut missing) = (0u64, 0u64);
    let mut night = 1u32;
    let mut k = -1i64;
    loop {
        let mid = first_midnight + k as f64 * SAMPLES_PER_DAY as f64;
        let onset = (mid - 1.5 * 720.0 + rng.normal() * 540.0).round() as i64;
        let wakeup = (mid + 6.75 * 720.0 + rng.normal() * 540.0).round() as i64;
        k += 1;
        if onset >= n as i64 {
            break;
        }
        if wakeup <= 0 {
            continue;
        }
        let (a, b) = (onset.max(0) as usize, (wakeup as usize).min(n));
        asleep[a..b].iter_mut().for_each(|x| *x = true);
        let complete = onset >= 0 && (wakeup as usize) < n;
        let worn = complete && !nonwear[a..b].iter().any(|&x| x);
        // Which events the annotators recorded.
        // Unworn nights have none; about 28% of worn nights are unlabelled.
        let (on, off) = if !worn || rng.chance(0.28) {
            (false, false)
        } else if rng.chance(0.03) {
            (true, false)
        } else {
            (true, true)
        };
        for (kind, step, present) in [("onset", onset, on), ("wakeup", wakeup, off)] {
            total += 1;
            if present {
                let mut ts = [0u8; 24];
                let utc = utc0 + step * SAMPLE_SECONDS;
                clock::format_into(utc, clock::eastern_offset(utc), &mut ts);
                let _ = writeln!(
                    events,
                    "{id},{night},{kind},{step},{}",
                    std::str::from_utf8(&ts).unwrap()
                );
            } else {
                missing += 1;
                let _ = writeln!(events, "{id},{night},{kind},,");
            }
        }
        night += 1;
    }

    let mut steps = Vec::with_capacity(n);
    let mut stamps = StringBuilder::with_capacity(n, n * 24);
    let mut anglez = Vec::with_capacity(n);
    let mut enmo = Vec::with_capacity(n);
    let mut angle = rng.normal() * 30.0;
    let parked = (rng.normal() * 20.0).clamp(-90.0, 90.0);
    let mut ts = [0u8; 24];
    let first_offset = clock::eastern_offset(utc0);
    let mut crosses_dst = false;
    for i in 0..n {
        let utc = utc0 + i as i64 * SAMPLE_SECONDS;
        let offset = clock::eastern_offset(utc);
        crosses_dst |= offset != first_offset;
        clock::format_into(utc, offset, &mut ts);
        steps.push(i as u32);
        stamps.append_value(std::str::from_utf8(&ts).unwrap());
        let (a, e) = if nonwear[i] {
            (parked, 0.0)
        } else if asleep[i] {
            if rng.chance(0.002) {
                angle = (rng.normal() * 35.0).clamp(-90.0, 90.0);
            }
            (angle + rng.normal() * 0.4, (rng.normal() * 0.002).abs())
        } else {
            angle = (0.92 * angle + rng.normal() * 9.0).clamp(-90.0, 90.0);
            (angle, (0.03 + rng.normal() * 0.04).max(0.0))
        };
        let mut a = a as f32;
        let mut e = e as f32;
        if rng.chance(2e-6) {
            a = f32::NAN;
        }
        if rng.chance(2e-6) {
            e = f32::NAN;
        }
        anglez.push(a);
        enmo.push(e);
    }
    Series {
        id,
        steps,
        stamps: stamps.finish(),
        anglez,
        enmo,
        events,
        events_total: total,
        events_missing: missing,
        crosses_dst,
    }
}
