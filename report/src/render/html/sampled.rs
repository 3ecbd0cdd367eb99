//! Per sampled stage (`--sample`): the flame graph of its Python stacks
//! (lanes on top: the program's `main`, its forked workers, other
//! children), and its top functions by self share, sortable.

use super::flame::{self, FlameError};
use crate::modes::Report;
use crate::render::sampled::{By, COLUMNS, flame_lines, inside_lines, line, rows, stages};
use maud::{Markup, PreEscaped, html};

pub(super) fn view(r: &Report) -> Result<Markup, FlameError> {
    let all = stages(r);
    if all.is_empty() {
        return Ok(html! {});
    }
    let mut graphs = Vec::new();
    for (i, (_, _, x)) in all.iter().enumerate() {
        graphs.push(flame::samples_svg(&flame_lines(x), &format!("sg{i}"))?);
    }
    Ok(html! {
        section id="sampled" {
            h2 { "Sampled stacks" }
            p { "Where each stage's Python spent its running time, sampled from outside by py-spy: \
                 one lane per kind of process (" code { "main" } ", " code { "forked" }
                " children such as DataLoader workers, other children by their program), each function \
                 below its caller, a frame's width its samples over the trials (or a preparation's programs). Hover a frame for its samples, \
                 click it to zoom." }
            @for ((key, st, x), graph) in all.iter().zip(&graphs) {
                div.stage-sampled data-stage=(key) {
                    h3 { code { (key) } }
                    p.note { (super::prose(&line(x))) }
                    @let inside = inside_lines(st, x);
                    @if !inside.is_empty() {
                        ul.inside { @for l in &inside { li { (super::prose(l)) } } }
                    }
                    div.flame-box { (PreEscaped(graph)) }
                    @for by in By::BOTH {
                    h4 { "Top functions " (by.title()) }
                    table.sortable.calls data-by=(by.title()) {
                        thead { tr { th { "lane" } th { "function" } @for c in COLUMNS { th.num { (c) } } } }
                        tbody {
                            @for row in rows(x, by) {
                                tr data-function=(row.function) {
                                    td { (row.lane) }
                                    td { code { (row.function) } }
                                    @for (c, k) in row.cells.iter().zip(row.keys) {
                                        td.num data-v=(k) { (c) }
                                    }
                                }
                            }
                        }
                    }
                    }
                }
            }
        }
    })
}
