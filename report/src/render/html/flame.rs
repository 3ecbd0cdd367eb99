//! A flame graph (an icicle: the stage on top, what ran inside it below)
//! drawn by inferno from collapsed stacks, made fit to sit inline in a
//! page: inferno's own script and style are left out (the page's own
//! script zooms and its style draws), and its element ids get a prefix of
//! the graph's own, so several graphs share a page.

use inferno::flamegraph::{self, Direction, Options};

/// The ids inferno gives its elements.
const IDS: [&str; 8] =
    ["background", "title", "subtitle", "details", "unzoom", "search", "matched", "frames"];

/// Why inferno drew nothing.
#[derive(Debug, thiserror::Error)]
#[error("drawing a flame graph: {0}")]
pub struct FlameError(String);

/// The graph of `lines` (`a;b COUNT`, or `a;b BEFORE AFTER`, which inferno
/// draws as a differential graph: sized by AFTER, red where it grew, blue
/// where it shrank), counts in µs per trial, as an `<svg>` element with
/// ids prefixed by `id`.
pub fn svg(lines: &[String], id: &str) -> Result<String, FlameError> {
    drawn(lines, id, "µs per trial", "span:")
}

/// A differential graph of `lines` (`a;b BEFORE AFTER`), as [`svg`] draws
/// it, without inferno's own figure of a frame's change in its title
/// (`; +17.57%`, a share of the whole graph): the page gives each frame
/// the one figure its table gives the stack.
pub fn differential_svg(lines: &[String], id: &str) -> Result<String, FlameError> {
    Ok(without_deltas(&svg(lines, id)?))
}

/// A stack's line for [`differential_svg`]: `FRAMES BEFORE AFTER` in µs.
/// A stack not `coloured` gets its after figure twice: inferno colours any
/// difference.
pub fn differential_line(
    frames: &[String],
    before_us: u64,
    after_us: u64,
    coloured: bool,
) -> String {
    let before = if coloured { before_us } else { after_us };
    format!("{} {before} {after_us}", frames.join(";"))
}

/// Each `<title>` of `svg` with its trailing `; ±N.NN%` taken out.
fn without_deltas(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find("</title>") {
        let title = &rest[..at];
        let open = title.rfind(" (").unwrap_or(0);
        match title[open..].rfind("; ") {
            Some(d) if title.ends_with("%)") => {
                out.push_str(&title[..open + d]);
                out.push(')');
            }
            _ => out.push_str(title),
        }
        out.push_str("</title>");
        rest = &rest[at + "</title>".len()..];
    }
    out.push_str(rest);
    out
}

/// The graph of sampled stacks: counts are samples, frames functions.
pub fn samples_svg(lines: &[String], id: &str) -> Result<String, FlameError> {
    drawn(lines, id, "samples", "function:")
}

fn drawn(
    lines: &[String],
    id: &str,
    count_name: &str,
    name_type: &str,
) -> Result<String, FlameError> {
    let mut o = Options::default();
    o.direction = Direction::Inverted;
    o.no_javascript = true;
    // Colours by the name's hash, never at random: the same report, the same bytes.
    o.hash = true;
    o.deterministic = true;
    o.count_name = count_name.into();
    o.name_type = name_type.into();
    o.title = String::new();
    o.image_width = Some(1180);
    o.min_width = 0.5;
    let mut out = Vec::new();
    flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| FlameError(e.to_string()))?;
    let text = String::from_utf8(out).map_err(|e| FlameError(e.to_string()))?;
    Ok(inline(&text, id))
}

/// inferno's document as an inline element: from `<svg` on, without its
/// `onload` handler, `<style>` and `<script>`, without the search control
/// (the page has none), its ids prefixed.
fn inline(doc: &str, id: &str) -> String {
    let mut s = doc[doc.find("<svg").unwrap_or(0)..].replacen(" onload=\"init(evt)\"", "", 1);
    for tag in ["style", "script"] {
        if let (Some(b), Some(e)) = (s.find(&format!("<{tag}")), s.find(&format!("</{tag}>"))) {
            s.replace_range(b..e + tag.len() + 3, "");
        }
    }
    if let Some(b) = s.find("<text id=\"search\"") {
        if let Some(len) = s[b..].find("</text>") {
            s.replace_range(b..b + len + 7, "");
        }
    }
    for name in IDS {
        s = s
            .replace(&format!("id=\"{name}\""), &format!("id=\"{id}-{name}\""))
            .replace(&format!("url(#{name})"), &format!("url(#{id}-{name})"));
    }
    s.replacen("<svg ", "<svg class=\"flame\" ", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_graph_has_no_script_no_style_and_only_prefixed_ids() {
        let lines = vec!["s;run 500".to_string(), "s;run;<img src=x onerror=alert(1)> 300".into()];
        let g = svg(&lines, "fg0").unwrap();
        assert!(g.starts_with("<svg class=\"flame\" "), "{}", &g[..80]);
        for absent in ["<script", "<style", "onload", "<?xml", "<!DOCTYPE", "<img"] {
            assert!(!g.contains(absent), "{absent} in {g}");
        }
        assert!(g.contains("&lt;img src=x onerror=alert(1)&gt;"), "{g}");
        for name in IDS {
            assert!(!g.contains(&format!("id=\"{name}\"")), "{name}");
        }
        assert!(g.contains("id=\"fg0-frames\""));
        assert_eq!(g, svg(&lines, "fg0").unwrap(), "not repeatable");
    }

    #[test]
    fn a_differential_graph_keeps_each_frames_width_and_drops_infernos_change() {
        let lines = vec!["s;run 500 500".to_string(), "s;run;step 100 200".into()];
        let drawn = svg(&lines, "c0").unwrap();
        assert!(drawn.contains("%; +"), "inferno's change is there to take out: {drawn}");
        let g = differential_svg(&lines, "c0").unwrap();
        let titles: Vec<&str> =
            g.split("<title>").skip(1).map(|t| &t[..t.find("</title>").unwrap()]).collect();
        assert!(titles.len() >= 3, "{titles:?}");
        for t in &titles {
            assert!(!t.contains("; "), "{t}");
            assert!(t.ends_with("%)"), "{t}");
        }
        assert!(titles.iter().any(|t| t.starts_with("step (200 µs per trial, ")), "{titles:?}");
        // Only the titles changed: every frame is drawn where it was.
        let rects = |s: &str| s.matches("<rect").count();
        assert_eq!(rects(&g), rects(&drawn));
    }
}
