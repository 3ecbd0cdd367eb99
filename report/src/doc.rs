//! What views are made of: blocks (a heading, a paragraph, a table, a
//! list) that a view fills with its figures and sentences, and that each
//! renderer only formats: as aligned text on the console, as Markdown in
//! summary.md, history.md and a comparison's Markdown, as HTML on a page
//! (`render::html::blocks`). A block never computes; its text is final.
//!
//! Text marks names as Markdown code, in backticks: Markdown keeps them,
//! HTML makes them `<code>`, the console drops the backticks.

use std::fmt::Write as _;
use std::io::{self, Write};

/// How a column's cells line up (and whether they are numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table: its columns (name and alignment) and its rows of cells, each
/// row as long as the columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Align)>,
    pub rows: Vec<Vec<Cell>>,
}

/// A cell's text, and whether it is a name (shown as code).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub text: String,
    pub code: bool,
}

impl Cell {
    /// A name: code in Markdown and HTML, plain on the console.
    pub fn code(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), code: true }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, code: false }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell { text: text.to_string(), code: false }
    }
}

impl Table {
    /// A table of these columns and no rows yet.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table { columns: columns.iter().map(|(n, a)| (n.to_string(), *a)).collect(), rows: vec![] }
    }

    /// Adds a row (as long as the columns).
    pub fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.columns.len(), "a row of another width");
        self.rows.push(cells);
    }

    /// As GitHub's Markdown: a header, its alignment row, a line a row;
    /// names in backticks, and a `|` in a cell escaped so it never splits
    /// the row.
    pub fn markdown(&self, out: &mut String) {
        let esc = |t: &str| t.replace('|', "\\|");
        let header: Vec<String> = self.columns.iter().map(|(n, _)| esc(n)).collect();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let rule: String = self
            .columns
            .iter()
            .map(|(_, a)| match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            })
            .collect();
        let _ = writeln!(out, "|{rule}");
        for row in &self.rows {
            let cells: Vec<String> = row
                .iter()
                .map(|c| match c.code {
                    true => format!("`{}`", esc(&c.text)),
                    false => esc(&c.text),
                })
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }

    /// As aligned text for a terminal, each line after `indent`, columns
    /// two spaces apart and as wide as their widest cell (in characters).
    pub fn text(&self, indent: &str, out: &mut dyn Write) -> io::Result<()> {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                let cells = self.rows.iter().map(|r| r[i].text.chars().count());
                cells.chain([self.columns[i].0.chars().count()]).max().unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| -> String {
            let parts: Vec<String> = cells
                .iter()
                .zip(&self.columns)
                .zip(&widths)
                .map(|((c, (_, a)), &w)| match a {
                    Align::Left => format!("{c:<w$}"),
                    Align::Right => format!("{c:>w$}"),
                })
                .collect();
            format!("{indent}{}", parts.join("  ").trim_end())
        };
        writeln!(out, "{}", line(self.columns.iter().map(|(n, _)| n.as_str()).collect()))?;
        for row in &self.rows {
            writeln!(out, "{}", line(row.iter().map(|c| c.text.as_str()).collect()))?;
        }
        Ok(())
    }
}

/// One block of a view.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A part's heading (`##` in Markdown); the console leaves it out.
    Heading(String),
    /// A heading within a part (`###`); the console leaves it out.
    Subheading(String),
    /// Sentences, ending as they end.
    Para(String),
    Table(Table),
    /// A list, an item a line.
    List(Vec<String>),
    /// A sentence a reader must not miss (no closing full stop).
    Warning(String),
}

/// Where a block shows: everywhere (the console too), or only in the
/// documents (summary.md and report.html), which hold every figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Everywhere,
    Documents,
}

/// A view's blocks, each with where it shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Blocks(pub Vec<(Reach, Block)>);

impl Blocks {
    /// A block every view shows.
    pub fn everywhere(&mut self, b: Block) {
        self.0.push((Reach::Everywhere, b));
    }
    /// A block the documents show, not the console.
    pub fn documents(&mut self, b: Block) {
        self.0.push((Reach::Documents, b));
    }
    /// Every block of `other`, after these.
    pub fn extend(&mut self, other: Blocks) {
        self.0.extend(other.0);
    }

    /// As Markdown: every block, each after a blank line.
    pub fn markdown(&self, out: &mut String) {
        for (_, b) in &self.0 {
            out.push('\n');
            match b {
                Block::Heading(h) => {
                    let _ = writeln!(out, "## {h}");
                }
                Block::Subheading(h) => {
                    let _ = writeln!(out, "### {h}");
                }
                Block::Para(p) => {
                    let _ = writeln!(out, "{p}");
                }
                Block::Table(t) => t.markdown(out),
                Block::List(items) => {
                    for i in items {
                        let _ = writeln!(out, "- {i}");
                    }
                }
                Block::Warning(w) => {
                    let _ = writeln!(out, "Warning: {w}.");
                }
            }
        }
    }

    /// As the console shows them: the blocks that show everywhere, a line
    /// each (a table's rows), indented by two spaces.
    pub fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for (reach, b) in &self.0 {
            if *reach == Reach::Documents {
                continue;
            }
            match b {
                Block::Heading(_) | Block::Subheading(_) => {}
                Block::Para(p) => writeln!(out, "  {}", plain(p))?,
                Block::Table(t) => t.text("  ", out)?,
                Block::List(items) => {
                    for i in items {
                        writeln!(out, "  - {}", plain(i))?;
                    }
                }
                Block::Warning(w) => writeln!(out, "  warning: {}", plain(w))?,
            }
        }
        Ok(())
    }
}

/// Text as the console shows it: names without their backticks.
pub fn plain(text: &str) -> String {
    text.replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(&[("stage", Align::Left), ("wall", Align::Right)]);
        t.row(vec![Cell::code("load|x"), "1.500 s".into()]);
        t.row(vec![Cell::code("fit"), "250.0 ms".into()]);
        t
    }

    /// One table, two formats: the same cells in each, Markdown's names in
    /// backticks with a `|` escaped, the text's columns aligned.
    #[test]
    fn a_table_reads_the_same_as_markdown_and_as_text() {
        let mut md = String::new();
        table().markdown(&mut md);
        assert_eq!(
            md,
            "| stage | wall |\n|---|---:|\n| `load\\|x` | 1.500 s |\n| `fit` | 250.0 ms |\n"
        );
        let mut text = Vec::new();
        table().text("  ", &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "  stage       wall\n  load|x   1.500 s\n  fit     250.0 ms\n"
        );
    }
}
