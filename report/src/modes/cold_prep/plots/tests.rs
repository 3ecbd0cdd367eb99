//! The cold-prep and sweep plots read back from their SVG.

use super::*;
use crate::chart::picture::{Element, Rect, elements};

fn fixture() -> Section {
    let r: serde_json::Value =
        serde_json::from_str(include_str!("../../../render/fixtures/cold-prep-report.json"))
            .unwrap();
    serde_json::from_value(r).unwrap()
}

/// The plot's rows read back from its SVG, top to bottom: each row's
/// outline (if drawn) and its blocks, left to right.
fn drawn_rows(c: &Section) -> Vec<(Option<Rect>, Vec<Rect>)> {
    let svg = String::from_utf8(PreparationPlot(c).svg_and_png().unwrap().0).unwrap();
    let mut rows: Vec<(f64, Option<Rect>, Vec<Rect>)> = Vec::new();
    let rects = elements(&svg).into_iter().filter_map(|e| match e {
        Element::Rect(r) => Some(r),
        _ => None,
    });
    for r in rects {
        let mid = r.y + r.h / 2.0;
        let at = match rows.iter().position(|row| (row.0 - mid).abs() < 3.0) {
            Some(at) => at,
            None => {
                rows.push((mid, None, Vec::new()));
                rows.len() - 1
            }
        };
        match r.fill.as_str() {
            "none" => assert!(rows[at].1.replace(r).is_none(), "two outlines on one row"),
            _ => rows[at].2.push(r),
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let by_x = |mut b: Vec<Rect>| {
        b.sort_by(|p, q| p.x.total_cmp(&q.x));
        b
    };
    rows.into_iter().map(|(_, outline, blocks)| (outline, by_x(blocks))).collect()
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// Read back from the SVG: a row per worker (serial first, by rank), its
/// phase's wall as the outline, and a block per job where that worker's
/// timeline puts it, in alternating shades of its side's colour.
#[test]
fn each_row_draws_its_own_workers_jobs_to_scale_within_its_phase_wall() {
    let c = fixture();
    let rows = drawn_rows(&c);
    let workers = c.serial.workers.len() + c.parallel.workers.len();
    assert_eq!(rows.len(), workers, "a row per worker");
    assert_eq!(PreparationPlot(&c).rows(), workers, "the canvas sized for every row");
    let first = rows[0].0.as_ref().expect("the serial row's outline");
    // Pixels per second, from the serial outline; every other figure
    // is read at this scale.
    let (x0, scale) = (first.x, first.w / c.serial.wall_s);
    let at = |px: f64| (px - x0) / scale;
    let mut row = rows.iter();
    for (side, color) in [(&c.serial, CPU), (&c.parallel, BAR)] {
        let mut ranks: Vec<u32> = side.workers.iter().map(|w| w.rank).collect();
        ranks.sort();
        for rank in ranks {
            let (outline, blocks) = row.next().unwrap();
            let outline = outline.as_ref().expect("an outline");
            assert!((at(outline.x)).abs() * scale < 1.5, "rank {rank}: outline from 0");
            let wall = at(outline.x + outline.w);
            assert!((wall - side.wall_s).abs() * scale < 1.5, "rank {rank}: wall {wall}");
            let jobs: Vec<(f64, f64)> = side
                .timeline
                .iter()
                .filter(|s| s.rank == rank)
                .map(|s| (s.start_s, s.end_s))
                .collect();
            assert!(jobs.windows(2).all(|w| w[0].0 <= w[1].0), "the fixture's jobs in order");
            assert_eq!(blocks.len(), jobs.len(), "rank {rank}: a block per job");
            for (j, (b, job)) in blocks.iter().zip(&jobs).enumerate() {
                let (start, end) = (at(b.x), at(b.x + b.w));
                assert!(
                    (start - job.0).abs() * scale < 1.5 && (end - job.1).abs() * scale < 1.5,
                    "rank {rank} job {j}: drawn {start}..{end}, ran {}..{}",
                    job.0,
                    job.1
                );
                assert_eq!(b.fill, hex(color), "rank {rank} job {j}");
                assert_eq!(b.opacity, if j % 2 == 0 { 0.9 } else { 0.55 }, "job {j}'s shade");
            }
        }
    }
}

/// A worker of `n` jobs with gaps far under a pixel, and one wide gap
/// after the first half: drawn one block per job up to 500 jobs, and as
/// the two runs a reader can tell apart above that.
#[test]
fn a_row_of_more_than_500_jobs_draws_only_the_gaps_a_pixel_shows() {
    let blocks = |n: usize| {
        let mut c = fixture();
        let rank = c.parallel.workers[0].rank;
        let wide = 0.1 * c.parallel.wall_s;
        let each = 0.5 * c.parallel.wall_s / n as f64;
        let mut timeline: Vec<_> =
            c.parallel.timeline.drain(..).filter(|s| s.rank != rank).collect();
        let mut t = 0.0;
        for i in 0..n {
            if i == n / 2 {
                t += wide;
            }
            let mut s = c.serial.timeline[0].clone();
            (s.rank, s.start_s, s.end_s) = (rank, t, t + each * 0.999);
            timeline.push(s);
            t += each;
        }
        c.parallel.timeline = timeline;
        let rows = drawn_rows(&c);
        let at = c.serial.workers.len();
        rows[at].1.len()
    };
    assert_eq!(blocks(500), 500);
    assert_eq!(blocks(501), 2);
    assert_eq!(blocks(5000), 2);
}

/// A phase with no wall time draws no outline, and a job of no length
/// no block.
#[test]
fn nothing_is_drawn_for_no_time() {
    let mut c = fixture();
    c.serial.wall_s = 0.0;
    let rank = c.parallel.workers[0].rank;
    let mut empty = c.parallel.timeline[0].clone();
    (empty.rank, empty.start_s, empty.end_s) = (rank, 0.05, 0.05);
    c.parallel.timeline.push(empty);
    let jobs = c.parallel.timeline.iter().filter(|s| s.rank == rank && s.end_s > s.start_s);
    let jobs = jobs.count();
    let rows = drawn_rows(&c);
    assert!(rows[0].0.is_none(), "an outline for a wall of 0");
    assert!(rows[1].0.is_some(), "the parallel rows keep theirs");
    assert_eq!(rows[1].1.len(), jobs, "a block for the job of no length");
}

#[test]
fn blocks_closer_than_the_gap_merge_and_others_stay_apart() {
    let spans = [(0.0, 1.0), (1.0005, 2.0), (2.5, 3.0), (3.0001, 3.5)];
    assert_eq!(coalesce(&spans, 0.001), vec![(0.0, 2.0), (2.5, 3.5)]);
    assert_eq!(coalesce(&spans, 0.0).len(), 4);
    assert!(coalesce(&[], 1.0).is_empty());
    assert_eq!(coalesce(&[(0.0, 1.0), (2.0, 3.0)], 1.0).len(), 2, "a gap of exactly `gap` stays");
}

fn sweep_fixture() -> super::super::sweep::Sweep {
    let r: crate::modes::Report =
        serde_json::from_str(include_str!("../../../render/fixtures/sweep-report.json")).unwrap();
    let crate::Section::ColdPrep(c) = r.section else { panic!("a cold-prep report") };
    c.sweep.expect("a sweep")
}

/// The sweep plot read back from its SVG against its own figures: a dot
/// per count at its speedup, its interval as a bar, the ideal line through
/// (count, count), the Amdahl curve from the first count to the last at
/// the speedups the fit predicts, the counts above the cores shaded with
/// their note inside the shade, and the legend's samples in a column
/// inside the legend. The pixel scales are read from the ideal line. The
/// fixture's counts (1, 2, 4 on a log-2 axis, 2 cores), the same from 2
/// (2, 4, 8), and a linear axis (1, 2, 3).
#[test]
fn the_sweep_plot_draws_each_figure_where_its_value_is() {
    for counts in [[1, 2, 4], [2, 4, 8], [1, 2, 3]] {
        let mut s = sweep_fixture();
        for (p, c) in s.points.iter_mut().zip(counts) {
            p.workers = c;
        }
        let svg = String::from_utf8(SweepPlot(&s).svg_and_png().unwrap().0).unwrap();
        let elements = elements(&svg);
        let lines = |color: RGBColor| -> Vec<Vec<(f64, f64)>> {
            elements
                .iter()
                .filter_map(|e| match e {
                    Element::Line(pts, c) if *c == hex(color) => Some(pts.clone()),
                    _ => None,
                })
                .collect()
        };
        let legend = elements
            .iter()
            .position(|e| matches!(e, Element::Rect(r) if r.legend))
            .expect("a legend");
        // The ideal line: one vertex per count, at (count, count).
        let ideal = &lines(MUTED)[0];
        assert_eq!(ideal.len(), counts.len(), "{counts:?}: the ideal line's vertices");
        let px: Vec<f64> = ideal.iter().map(|v| v.0).collect();
        let (first, last) = (ideal[0], ideal[ideal.len() - 1]);
        let per = (last.1 - first.1) / f64::from(counts[2] - counts[0]);
        let y = |v: f64| first.1 + (v - f64::from(counts[0])) * per;
        for (v, c) in ideal.iter().zip(counts) {
            assert!((v.1 - y(f64::from(c))).abs() <= 1.5, "{counts:?}: ideal at {c}: {v:?}");
        }
        let axis = crate::chart::CountsAxis::new(&counts);
        let (p0, p1) = (axis.position(f64::from(counts[0])), axis.position(f64::from(counts[2])));
        for (x, c) in px.iter().zip(counts) {
            let along = (axis.position(f64::from(c)) - p0) / (p1 - p0);
            assert!((x - (px[0] + along * (px[2] - px[0]))).abs() <= 1.5, "{counts:?}: {c} at {x}");
        }
        let count_at = |x: f64| axis.count_at(p0 + (x - px[0]) / (px[2] - px[0]) * (p1 - p0));
        // The Amdahl curve: from the first count to the last, on the fit.
        let curve = &lines(CPU)[0];
        assert!(curve.len() > 50, "{counts:?}: a curve of {} vertices", curve.len());
        assert!(
            (curve[0].0 - px[0]).abs() <= 1.0,
            "{counts:?}: the curve starts at {:?}",
            curve[0]
        );
        let end = curve[curve.len() - 1];
        assert!((end.0 - px[2]).abs() <= 1.0, "{counts:?}: the curve ends at {end:?}");
        for v in curve {
            let predicted = s.amdahl.speedup(count_at(v.0)).unwrap();
            assert!(
                (v.1 - y(predicted)).abs() <= 1.5,
                "{counts:?}: curve at {v:?}, fit {predicted}"
            );
        }
        // A dot per count at its speedup, a bar over its interval.
        let dots: Vec<(f64, f64)> = elements[..legend]
            .iter()
            .filter_map(|e| match e {
                Element::Circle(x, y, c) if *c == hex(BAR) => Some((*x, *y)),
                _ => None,
            })
            .collect();
        let bars: Vec<Vec<(f64, f64)>> =
            lines(BAR).into_iter().filter(|b| b[0].0 != b[1].0 || b[0].1 != b[1].1).collect();
        assert_eq!(dots.len(), counts.len(), "{counts:?}");
        for ((dot, p), x) in dots.iter().zip(&s.points).zip(&px) {
            assert!((dot.0 - x).abs() <= 1.0 && (dot.1 - y(p.speedup)).abs() <= 1.5, "{dot:?}");
            let i = p.speedup_interval.expect("the fixture's intervals");
            let bar =
                bars.iter().find(|b| (b[0].0 - x).abs() <= 1.0 && b[0].0 == b[1].0).expect("a bar");
            assert!(
                (bar[0].1 - y(i.low)).abs() <= 1.5 && (bar[1].1 - y(i.high)).abs() <= 1.5,
                "{bar:?}"
            );
        }
        // Counts above the cores: the shade starts between the last count
        // within them and the first above, and runs to the axis' end; its
        // note sits inside it.
        let cores = s.cores.expect("the fixture's cores");
        let shade = elements
            .iter()
            .find_map(|e| match e {
                Element::Rect(r) if r.fill == hex(MUTED) => Some(r.clone()),
                _ => None,
            })
            .expect("a shade");
        let within = counts.iter().rposition(|c| *c <= cores).unwrap();
        assert!(
            shade.x > px[within] && shade.x < px[within + 1],
            "{counts:?}: shade from {}",
            shade.x
        );
        assert!(shade.x + shade.w > px[2], "{counts:?}: the shade ends at {}", shade.x + shade.w);
        let note = elements
            .iter()
            .find_map(|e| match e {
                Element::Text(t) if t.content.starts_with("more processes than") => Some(t.clone()),
                _ => None,
            })
            .expect("the shade's note");
        assert_eq!(note.anchor, "end");
        assert!(note.x > shade.x && note.x < shade.x + shade.w, "the note ends at {}", note.x);
        assert!(note.y > shade.y && note.y < shade.y + shade.h, "the note at {}", note.y);
        // The legend's samples: inside its box, in one column.
        let Element::Rect(b) = &elements[legend] else { unreachable!() };
        let centres: Vec<f64> = elements[legend..]
            .iter()
            .filter_map(|e| match e {
                Element::Circle(x, _, _) => Some(*x),
                Element::Line(pts, _) => Some((pts[0].0 + pts[pts.len() - 1].0) / 2.0),
                _ => None,
            })
            .collect();
        assert_eq!(centres.len(), 3, "{counts:?}: the legend's samples");
        for c in &centres {
            assert!(
                *c > b.x + 5.0 && *c < b.x + b.w,
                "{counts:?}: a sample at {c}, legend from {}",
                b.x
            );
            assert!((c - centres[0]).abs() <= 1.0, "{counts:?}: samples at {centres:?}");
        }
    }
}

/// The caption states the fit: its limit, that it has none, or that
/// there is no fit.
#[test]
fn the_sweep_caption_states_the_amdahl_fit() {
    let caption = |serial_fraction: Option<f64>, speedup_limit: Option<f64>| {
        let mut s = sweep_fixture();
        s.amdahl = super::super::sweep::Amdahl { serial_fraction, speedup_limit };
        let svg = String::from_utf8(SweepPlot(&s).svg_and_png().unwrap().0).unwrap();
        let texts: Vec<String> = elements(&svg)
            .into_iter()
            .filter_map(|e| match e {
                Element::Text(t) => Some(t.content),
                _ => None,
            })
            .collect();
        texts.join(" ")
    };
    let with = caption(Some(0.25), Some(4.0));
    assert!(with.contains("Amdahl fit: serial fraction 0.250, limit 4.00x"), "{with}");
    let none = caption(Some(-0.01), None);
    assert!(none.contains("Amdahl fit: serial fraction -0.010, no limit"), "{none}");
    let no_fit = caption(None, None);
    assert!(no_fit.contains("no Amdahl fit (no count above 1)"), "{no_fit}");
}

/// The count the sweep's scan recommends is ringed in green on its dot,
/// and no other; a sweep with no scan (an older report) has no ring.
#[test]
fn the_sweep_plot_rings_the_recommended_count() {
    use crate::modes::scan::{Measured, scan};
    let mut s = sweep_fixture();
    let ring = |s: &super::super::sweep::Sweep| -> Vec<(f64, f64)> {
        let svg = String::from_utf8(SweepPlot(s).svg_and_png().unwrap().0).unwrap();
        let elements = elements(&svg);
        let legend = elements.iter().position(|e| matches!(e, Element::Rect(r) if r.legend));
        elements[..legend.unwrap()]
            .iter()
            .filter_map(|e| match e {
                Element::Circle(x, y, c) if *c == hex(FASTER) => Some((*x, *y)),
                _ => None,
            })
            .collect()
    };
    assert!(ring(&s).is_empty(), "no scan, no ring");
    // Count 2 (the second point) as fast as the largest and cheaper.
    let measured: Vec<Measured> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| Measured {
            stage: format!("w{}", p.workers),
            parameters: [("workers".to_string(), p.workers.to_string())].into(),
            walls: (0..8).map(|k| [1.0, 0.5, 0.5][i] + 0.001 * k as f64).collect(),
            cpus: vec![1.0; 8],
            tree_peaks: vec![(p.workers as f64) * 1e8; 8],
            tree_peak_method: "sampled".into(),
            spans: Default::default(),
            input_wait: Vec::new(),
        })
        .collect();
    s.scan = Some(scan(vec!["workers".into()], None, &measured, "--rounds"));
    assert_eq!(s.scan.as_ref().unwrap().recommendation.stage.as_deref(), Some("w2"));
    let svg = String::from_utf8(SweepPlot(&s).svg_and_png().unwrap().0).unwrap();
    let dots: Vec<(f64, f64)> = elements(&svg)
        .iter()
        .filter_map(|e| match e {
            Element::Circle(x, y, c) if *c == hex(BAR) => Some((*x, *y)),
            _ => None,
        })
        .collect();
    let rings = ring(&s);
    assert_eq!(rings.len(), 1, "{rings:?}");
    let d = dots[1];
    assert!((rings[0].0 - d.0).abs() < 1.0 && (rings[0].1 - d.1).abs() < 1.0, "{rings:?} {dots:?}");
}
