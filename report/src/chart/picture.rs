//! Reads a plot's SVG back as a reader's eye would, for the tests of every
//! plot kind: no two tick labels on one axis alike, every text inside the
//! canvas and clear of every other (its box estimated from the embedded
//! font's advance widths), and no legend over a data mark drawn before it;
//! and its elements with their places and colours, for the tests that read
//! a plot's geometry.

use super::text_width;

/// A text as written: its anchor point, and its content unescaped.
#[derive(Clone, Debug)]
pub struct Text {
    pub x: f64,
    pub y: f64,
    size: f64,
    /// `start`, `middle` or `end`.
    pub anchor: String,
    dy: String,
    rotated: bool,
    pub content: String,
}

/// A rectangle as drawn (white ones only when a legend's background).
#[derive(Clone, Debug)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    /// The fill colour as written (`#RRGGBB`), or `none` for an outline.
    pub fill: String,
    /// The fill's opacity (1 when not written).
    pub opacity: f64,
    /// Whether it is a legend's background.
    pub legend: bool,
}

/// A drawn element, in document order.
#[derive(Clone, Debug)]
pub enum Element {
    Text(Text),
    Rect(Rect),
    /// The centre and the fill colour.
    Circle(f64, f64, String),
    /// A coloured line's vertices and its colour (axes and grid lines,
    /// black, are left out).
    Line(Vec<(f64, f64)>, String),
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..].split('"').next()?.to_string())
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn parse(svg: &str) -> (f64, f64, Vec<Element>) {
    let root = &svg[..svg.find('>').unwrap_or(0)];
    let (w, h) = (num(root, "width"), num(root, "height"));
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        if tag.starts_with("<text") {
            let close = rest.find("</text>").unwrap_or(end);
            out.push(Element::Text(Text {
                x: num(tag, "x"),
                y: num(tag, "y"),
                size: num(tag, "font-size"),
                anchor: attr(tag, "text-anchor").unwrap_or_else(|| "start".into()),
                dy: attr(tag, "dy").unwrap_or_default(),
                rotated: attr(tag, "transform").is_some_and(|t| t.starts_with("rotate")),
                content: unescape(rest[end..close].trim()),
            }));
        } else if tag.starts_with("<rect") {
            let legend = attr(tag, "opacity").as_deref() == Some("0.9")
                && attr(tag, "fill").as_deref() == Some("#FFFFFF");
            let white = attr(tag, "fill").as_deref() == Some("#FFFFFF");
            if legend || !white {
                out.push(Element::Rect(Rect {
                    x: num(tag, "x"),
                    y: num(tag, "y"),
                    w: num(tag, "width"),
                    h: num(tag, "height"),
                    fill: attr(tag, "fill").unwrap_or_default(),
                    opacity: attr(tag, "opacity").and_then(|v| v.parse().ok()).unwrap_or(1.0),
                    legend,
                }));
            }
        } else if tag.starts_with("<circle") {
            // A ring has no fill: its colour is its stroke's.
            let fill = attr(tag, "fill").filter(|f| f != "none");
            let colour = fill.or_else(|| attr(tag, "stroke")).unwrap_or_default();
            out.push(Element::Circle(num(tag, "cx"), num(tag, "cy"), colour));
        } else if tag.starts_with("<polyline") {
            let stroke = attr(tag, "stroke").unwrap_or_default();
            if !matches!(stroke.as_str(), "#000000" | "none" | "") {
                let points = attr(tag, "points").unwrap_or_default();
                let pts = points
                    .split_whitespace()
                    .filter_map(|p| p.split_once(','))
                    .filter_map(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .collect();
                out.push(Element::Line(pts, stroke));
            }
        }
        rest = &rest[end.min(rest.len())..];
        if end == 0 {
            break;
        }
    }
    (w, h, out)
}

/// The box a text covers: (left, top, right, bottom).
fn text_box(t: &Text) -> (f64, f64, f64, f64) {
    let w = text_width(&t.content, t.size);
    let along = match t.anchor.as_str() {
        "middle" => (-w / 2.0, w / 2.0),
        "end" => (-w, 0.0),
        _ => (0.0, w),
    };
    // The baseline, from the vertical offset plotters writes.
    let baseline = match t.dy.as_str() {
        "0.76em" => 0.76 * t.size,
        "0.5ex" => 0.25 * t.size,
        _ => 0.0,
    };
    let across = (baseline - 0.8 * t.size, baseline + 0.24 * t.size);
    match t.rotated {
        // rotate(270) about (x, y): along the text is up the page.
        true => (t.x + across.0, t.y - along.1, t.x + across.1, t.y - along.0),
        false => (t.x + along.0, t.y + across.0, t.x + along.1, t.y + across.1),
    }
}

/// Every problem a reader would see, one line each.
pub fn problems(svg: &str) -> Vec<String> {
    let (w, h, elements) = parse(svg);
    let mut out = Vec::new();
    let texts: Vec<&Text> = elements
        .iter()
        .filter_map(|e| match e {
            Element::Text(t) => Some(t),
            _ => None,
        })
        .collect();
    for t in &texts {
        let (l, top, r, b) = text_box(t);
        if l < -0.5 || top < -0.5 || r > w + 0.5 || b > h + 0.5 {
            out.push(format!(
                "'{}' leaves the {w}x{h} canvas: its box is {l:.0},{top:.0} to {r:.0},{b:.0}",
                t.content
            ));
        }
    }
    // Two texts over each other are read as neither (a tolerance of 1 px:
    // the boxes are estimates).
    let boxes: Vec<(f64, f64, f64, f64)> = texts.iter().map(|t| text_box(t)).collect();
    for (i, a) in boxes.iter().enumerate() {
        for (j, b) in boxes.iter().enumerate().skip(i + 1) {
            let overlap_x = a.2.min(b.2) - a.0.max(b.0);
            let overlap_y = a.3.min(b.3) - a.1.max(b.1);
            if overlap_x > 1.0 && overlap_y > 1.0 {
                out.push(format!("'{}' and '{}' overlap", texts[i].content, texts[j].content));
            }
        }
    }
    // An axis's tick labels are drawn one after another: centred on one
    // line (x axis) or right-aligned on one column (y axis).
    let same_axis = |a: &Text, b: &Text| {
        a.anchor == b.anchor
            && a.rotated == b.rotated
            && match a.anchor.as_str() {
                "middle" => (a.y - b.y).abs() < 0.5,
                "end" => (a.x - b.x).abs() < 0.5,
                _ => false,
            }
    };
    let mut i = 0;
    while i < texts.len() {
        let mut j = i + 1;
        while j < texts.len() && same_axis(texts[i], texts[j]) {
            j += 1;
        }
        let run = &texts[i..j];
        for (k, a) in run.iter().enumerate() {
            if run[..k].iter().any(|b| b.content == a.content) {
                out.push(format!("tick label '{}' appears twice on one axis", a.content));
            }
        }
        i = j;
    }
    let legend = elements.iter().position(|e| matches!(e, Element::Rect(r) if r.legend));
    if let Some(at) = legend {
        let Element::Rect(Rect { x: lx, y: ly, w: lw, h: lh, .. }) = elements[at] else {
            unreachable!()
        };
        let inside = |(x, y): (f64, f64)| x > lx && x < lx + lw && y > ly && y < ly + lh;
        for e in &elements[..at] {
            let covered = match e {
                Element::Circle(x, y, _) => inside((*x, *y)),
                Element::Line(pts, _) => pts.windows(2).any(|s| {
                    (0..=20).any(|k| {
                        let t = k as f64 / 20.0;
                        inside((s[0].0 + t * (s[1].0 - s[0].0), s[0].1 + t * (s[1].1 - s[0].1)))
                    })
                }),
                Element::Rect(r) if !r.legend => {
                    r.x + r.w > lx && r.x < lx + lw && r.y + r.h > ly && r.y < ly + lh
                }
                _ => false,
            };
            if covered {
                out.push("the legend covers a data mark".to_string());
                break;
            }
        }
    }
    out
}

/// Every element a plot draws but its white background and its black
/// axes, in document order.
pub fn elements(svg: &str) -> Vec<Element> {
    parse(svg).2
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<svg width="200" height="100" viewBox="0 0 200 100" xmlns="http://www.w3.org/2000/svg">"#;

    fn text(x: u32, y: u32, anchor: &str, s: &str) -> String {
        format!(
            r##"<text x="{x}" y="{y}" dy="0.76em" text-anchor="{anchor}" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">{s}</text>"##
        )
    }

    #[test]
    fn each_problem_is_seen_and_a_clean_picture_has_none() {
        let clean = format!(
            "{HEAD}{}{}{}</svg>",
            text(50, 80, "middle", "1"),
            text(100, 80, "middle", "2"),
            text(150, 80, "middle", "4")
        );
        assert_eq!(problems(&clean), Vec::<String>::new());
        let twice =
            format!("{HEAD}{}{}</svg>", text(50, 80, "middle", "2"), text(100, 80, "middle", "2"));
        assert_eq!(problems(&twice), ["tick label '2' appears twice on one axis"]);
        let wide = format!("{HEAD}{}</svg>", text(150, 10, "start", "a title that runs off"));
        assert!(
            problems(&wide)[0].starts_with("'a title that runs off' leaves"),
            "{:?}",
            problems(&wide)
        );
        let low = format!("{HEAD}{}</svg>", text(10, 95, "start", "x"));
        assert_eq!(problems(&low).len(), 1);
        let over = format!(
            "{HEAD}{}{}</svg>",
            text(20, 40, "start", "400 ms"),
            text(40, 40, "start", "0 MiB")
        );
        assert_eq!(problems(&over), ["'400 ms' and '0 MiB' overlap"]);
        let legend = r##"<circle cx="30" cy="30" r="5" fill="#466EAA"/><rect x="10" y="10" width="50" height="40" opacity="0.9" fill="#FFFFFF" stroke="none"/>"##;
        assert_eq!(problems(&format!("{HEAD}{legend}</svg>")), ["the legend covers a data mark"]);
        let line = r##"<polyline fill="none" stroke="#DC8232" points="0,30 100,30 "/><rect x="10" y="10" width="50" height="40" opacity="0.9" fill="#FFFFFF" stroke="none"/>"##;
        assert_eq!(problems(&format!("{HEAD}{line}</svg>")), ["the legend covers a data mark"]);
        let after = r##"<rect x="10" y="10" width="50" height="40" opacity="0.9" fill="#FFFFFF" stroke="none"/><circle cx="30" cy="30" r="5" fill="#466EAA"/>"##;
        assert!(problems(&format!("{HEAD}{after}</svg>")).is_empty(), "a legend's own sample");
    }
}
