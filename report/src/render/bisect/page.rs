//! A bisection's report.html: its answer, the plot of the probes at their
//! place in the history, and the probes in commit order (each with its
//! verdict, median and interval, its p against each endpoint and the
//! endpoints' medians measured beside it, window by window), then the
//! boundary side by side. What summary.md says, as a page.

use super::text::{short, verdict};
use crate::fmt;
use crate::render::html::{document, plot_svg, prose, short as short_digest};
use crate::rundir::bisect::BisectReport;
use maud::{PreEscaped, html};

/// The page of `r`, its plot `svg` inline.
pub fn page(r: &BisectReport, svg: &[u8]) -> String {
    let f = |x: f64| fmt::figure(&r.figure, x);
    let mut probes: Vec<(usize, &crate::rundir::bisect::Probe)> =
        r.probes.iter().enumerate().map(|(i, p)| (i + 1, p)).collect();
    probes.sort_by_key(|(i, p)| (p.position, *i));
    let body = html! {
        header {
            h1 { "stagebench bisection" }
            p.headline { (prose(&r.answer)) }
            p.run {
                (r.commits) " commit(s) of the first-parent history, " (r.probes.len()) " probe(s); figure "
                code { (r.figure) } ", threshold " (r.threshold_pct) "%. Declaration "
                code { (short_digest(&r.declaration_sha256)) } ", environment "
                code { (short_digest(&r.environment_sha256)) } " (SHA-256, first 12 hex)."
                @if r.work_tree_dirty { " The work tree was dirty." }
            }
        }
        figure.plot data-plot="bisect" { (PreEscaped(plot_svg(svg))) }
        section id="probes" {
            h2 { "Probes in commit order" }
            p.note {
                "Position 0 is the good endpoint. Each commit between the endpoints was measured in windows \
                 beside both endpoints and judged in pairs against the endpoints' runs of its own windows (at 99%); \
                 # is the order the probes were made in."
            }
            table.sortable {
                thead { tr {
                    th.num { "position" } th { "commit" } th { "verdict" } th.num { "median" }
                    th { "interval" } th.num { "rounds" } th.num { "p good" } th.num { "p bad" }
                    th { "the endpoints beside it, window by window" } th.num { "#" }
                } }
                tbody {
                    @for (i, p) in &probes {
                        tr data-commit=(short(&p.commit)) data-verdict=(verdict(p.verdict)) {
                            td.num data-v=(p.position) { (p.position) }
                            td.nowrap { code { (short(&p.commit)) } }
                            td { span.(format!("verdict-{}", verdict(p.verdict))) { (verdict(p.verdict)) }
                                 @if let Some(why) = &p.reason { " (" (why) ")" }
                                 @if p.reused { " (reused)" } }
                            @match p.median {
                                Some(m) => td.num data-v=(m) { (f(m)) },
                                None => td.num data-v="-1" { "–" },
                            }
                            td.nowrap { (p.interval.as_ref().map(|iv| iv.cell(f)).unwrap_or_else(|| "–".into())) }
                            td.num data-v=(p.rounds) { (p.rounds) }
                            td.num { (p.p_good.map(fmt::p_value).unwrap_or_else(|| "–".into())) }
                            td.num { (p.p_bad.map(fmt::p_value).unwrap_or_else(|| "–".into())) }
                            td {
                                @for (k, w) in p.windows.iter().enumerate() {
                                    @if k > 0 { "; " }
                                    "good " (f(w.median_good)) ", probe " (f(w.median_probe)) ", bad " (f(w.median_bad))
                                }
                            }
                            td.num data-v=(i) { (i) }
                        }
                    }
                }
            }
            @if let Some(c) = &r.confirmation {
                p id="boundary" {
                    "The boundary side by side: " code { (short(&c.lower)) } " → " code { (short(&c.upper)) } ", "
                    (f(c.median_lower)) " → " (f(c.median_upper)) ", p = " (fmt::p_value(c.p)) ": "
                    (if c.held { "holds" } else { "does not hold, so no single commit is named" }) "."
                }
            }
        }
        footer {
            "Derived from report.json (" (r.schema) " " (r.schema_version) "); "
            code { "coordinator verify" } " checks this file byte for byte."
        }
    };
    document("stagebench bisection", body)
}
