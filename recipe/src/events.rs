//! `train_events.csv`: `series_id,night,event,step,timestamp`, with `step`
//! and `timestamp` empty when the event is missing.

use std::collections::HashSet;

/// Which end of a night.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Onset,
    Wakeup,
}

/// One row of the events file.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub series_id: String,
    pub night: u32,
    pub kind: Kind,
    /// The step, as written; `None` when the event is missing. May be a
    /// non-integer, which the target policy treats as invalid.
    pub step: Option<f64>,
}

pub const COLUMNS: [&str; 5] = ["series_id", "night", "event", "step", "timestamp"];

#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("{file}: missing column '{column}' (header must hold {})", COLUMNS.join(","))]
    MissingColumn { file: String, column: &'static str },
    #[error("{file}: line {line}: {problem}")]
    Line { file: String, line: usize, problem: String },
    #[error("{file}: line {line}: event for series {series}, which is not in the series file")]
    UnknownSeries { file: String, line: usize, series: String },
    #[error("{file}: not UTF-8 text")]
    Encoding { file: String },
}

/// Parses the events file. `known`, when given, is the set of series ids the
/// events may refer to.
pub fn parse(
    bytes: &[u8],
    file: &str,
    known: Option<&HashSet<String>>,
) -> Result<Vec<Event>, EventsError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| EventsError::Encoding { file: file.into() })?;
    let mut lines = text.lines();
    let header: Vec<&str> =
        lines.next().unwrap_or("").trim_end_matches('\r').split(',').map(str::trim).collect();
    let mut idx = [0usize; 5];
    for (k, col) in COLUMNS.iter().enumerate() {
        idx[k] = header
            .iter()
            .position(|h| h == col)
            .ok_or(EventsError::MissingColumn { file: file.into(), column: col })?;
    }
    let mut out = Vec::new();
    for (n, line) in lines.enumerate() {
        let line_no = n + 2;
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let bad = |problem: String| EventsError::Line { file: file.into(), line: line_no, problem };
        let get = |k: usize| {
            fields.get(idx[k]).map(|s| s.trim()).ok_or_else(|| {
                bad(format!("has {} fields, header has {}", fields.len(), header.len()))
            })
        };
        let series_id = get(0)?.to_string();
        if let Some(known) = known {
            if !known.contains(&series_id) {
                return Err(EventsError::UnknownSeries {
                    file: file.into(),
                    line: line_no,
                    series: series_id,
                });
            }
        }
        let night_text = get(1)?;
        let night = night_text
            .parse::<u32>()
            .map_err(|_| bad(format!("night '{night_text}' is not a whole number")))?;
        let kind = match get(2)? {
            "onset" => Kind::Onset,
            "wakeup" => Kind::Wakeup,
            other => return Err(bad(format!("event '{other}' is neither 'onset' nor 'wakeup'"))),
        };
        let step_text = get(3)?;
        let step = if step_text.is_empty() {
            None
        } else {
            Some(
                step_text
                    .parse::<f64>()
                    .map_err(|_| bad(format!("step '{step_text}' is not a number")))?,
            )
        };
        out.push(Event { series_id, night, kind, step });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "series_id,night,event,step,timestamp\n\
        038441c925bb,1,onset,4992,2018-08-14T22:26:00-0400\n\
        038441c925bb,1,wakeup,10932,2018-08-15T06:41:00-0400\n\
        038441c925bb,2,onset,,\n";

    #[test]
    fn parses_present_and_missing_events() {
        let ev = parse(OK.as_bytes(), "e.csv", None).unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].kind, Kind::Onset);
        assert_eq!(ev[1].step, Some(10932.0));
        assert_eq!(ev[2].step, None);
    }

    #[test]
    fn names_what_is_wrong() {
        let e = parse(b"series_id,night,event,timestamp\n", "e.csv", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "e.csv: missing column 'step' (header must hold series_id,night,event,step,timestamp)"
        );
        let e = parse(OK.replace("wakeup", "nap").as_bytes(), "e.csv", None).unwrap_err();
        assert!(e.to_string().contains("line 3: event 'nap'"), "{e}");
        let e = parse(OK.replace(",2,", ",two,").as_bytes(), "e.csv", None).unwrap_err();
        assert!(e.to_string().contains("line 4: night 'two'"), "{e}");
        let known: HashSet<String> = ["aaaaaaaaaaaa".to_string()].into();
        let e = parse(OK.as_bytes(), "e.csv", Some(&known)).unwrap_err();
        assert!(
            e.to_string().contains("series 038441c925bb, which is not in the series file"),
            "{e}"
        );
    }
}
