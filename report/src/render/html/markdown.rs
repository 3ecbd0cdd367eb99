//! A part of summary.md as HTML, so a page shows a mode's own tables and
//! sentences exactly as summary.md words them (one formatter for both).
//! CommonMark with tables, by pulldown-cmark; raw HTML in the text is
//! turned into text (escaped), and links and images into their text, so
//! a name a program chose can neither run nor fetch anything.

use maud::{Markup, PreEscaped};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd, html};

/// `text` (Markdown) as HTML.
pub fn markdown(text: &str) -> Markup {
    let events = Parser::new_ext(text, Options::ENABLE_TABLES).filter_map(|e| match e {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link { .. } | Tag::Image { .. }) => None,
        Event::End(TagEnd::Link | TagEnd::Image) => None,
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    PreEscaped(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_code_render_and_raw_html_and_links_are_text() {
        let md = "| a | b |\n|---|---:|\n| `<script>x</script>` | 1 |\n\n<img src=x onerror=alert(1)> and [a link](http://example.com) ![i](http://example.com/i.png)\n";
        let html = markdown(md).into_string();
        assert!(
            html.contains("<table>")
                && html.contains("<code>&lt;script&gt;x&lt;/script&gt;</code>"),
            "{html}"
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
        assert!(
            !html.contains("<img") && !html.contains("href") && !html.contains("src=\""),
            "{html}"
        );
        assert!(html.contains("a link"), "{html}");
    }
}
