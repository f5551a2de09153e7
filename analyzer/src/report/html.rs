//! The HTML report: one self-contained file that works opened from disk. The page's data
//! ([`crate::report::page::Page`]) is embedded as JSON, each scenario's rows in a script element of
//! their own so the browser parses them only when a view needs them, and so is what the script
//! draws with ([`crate::report::drawing::Drawing`]); the stylesheet and the script (`html/*.js`,
//! plain JavaScript, no library) are compiled in. Nothing is fetched: no font, no script, no image.
//!
//! The script lists the scenarios and violations, shows a chain drawn in advance when there is one
//! and otherwise lays out and draws the chain from the embedded rows the way
//! [`crate::render::layout`] and [`crate::render::chain_figure`] do, and draws the run's timeline
//! at any zoom.

use std::fmt::Write as _;

use crate::report::drawing::Drawing;
use crate::report::page::Page;
use crate::views::coverage::{Matrix, State};

const CSS: &str = include_str!("html/report.css");

/// The script's parts, in order: its data, chains, the timeline, the page's views and start. They
/// run as one function's body, in one scope.
const SCRIPT: [&str; 4] = [
    include_str!("html/data.js"),
    include_str!("html/chain.js"),
    include_str!("html/timeline.js"),
    include_str!("html/page.js"),
];

/// Text safe inside an HTML element or a quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `value` as JSON that can sit inside a `<script>` element: `<` only occurs inside JSON strings,
/// where `\u003c` means the same, so no `</script>` or `<!--` can end or confuse the element.
fn script_json<T: serde::Serialize>(value: &T) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string(value)?.replace('<', "\\u003c"))
}

/// The whole document.
pub fn to_html(page: &Page) -> Result<String, serde_json::Error> {
    let names: Vec<String> = page
        .traces
        .iter()
        .map(|t| {
            std::path::Path::new(t)
                .file_name()
                .map_or_else(|| t.clone(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    let title = escape(&format!("outbox-trace report · {}", names.join(", ")));
    let coverage = coverage_table(&page.coverage);
    let mut html = String::with_capacity(1 << 16);
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{title}</title>
<style>
{CSS}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<p id="traces"></p>
</header>
<main>
<section id="scenarios-section">
<h2>Scenarios</h2>
<div id="scenarios"></div>
</section>
<div id="workbench">
<section id="violations-section">
<h2>Violations</h2>
<p id="violations-note"></p>
<ol id="violations"></ol>
</section>
<section id="chain-section">
<h2>Chain</h2>
<label for="filter">Task, event or aggregate id</label>
<input id="filter" type="search" autocomplete="off" spellcheck="false" placeholder="an exact task, event or aggregate id">
<div id="suggest"></div>
<p id="chain-status">Click a violation, or type an id.</p>
<div id="chain"></div>
</section>
</div>
{coverage}<section id="timeline-section">
<h2>Timeline</h2>
<div id="timeline-controls"></div>
<div id="timeline"></div>
<p id="timeline-note"></p>
</section>
<section id="details-section">
<h2>Invariants and figures per scenario</h2>
<div id="details"></div>
</section>
<section id="caps-section">
<h2>What this page leaves out</h2>
<ul id="caps"></ul>
</section>
</main>
<noscript><p>This report needs JavaScript to show its contents.</p></noscript>
"#
    );
    let _ = writeln!(
        html,
        r#"<script id="draw-data" type="application/json">{}</script>"#,
        script_json(&Drawing::new())?
    );
    let _ = writeln!(
        html,
        r#"<script id="page-data" type="application/json">{}</script>"#,
        script_json(page)?
    );
    for (i, rows) in page.rows.iter().enumerate() {
        if let Some(rows) = rows {
            let _ = writeln!(
                html,
                r#"<script id="rows-{i}" type="application/json">{}</script>"#,
                script_json(rows)?
            );
        }
    }
    html.push_str("<script>\n\"use strict\";\n(function () {\n");
    for part in SCRIPT {
        html.push_str(part);
    }
    html.push_str("})();\n</script>\n</body>\n</html>\n");
    Ok(html)
}

/// The coverage matrix as a table (nothing when no scenario recorded what it tried): each cell
/// names what its scenarios found and links to the worst one's first violation, or to the
/// scenario; its title lists the faults in it.
fn coverage_table(m: &Matrix) -> String {
    if m.rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"coverage-section\">\n<h2>Coverage</h2>\n<p>What the scenarios tried, \
         fault by fault: each cell the worst its scenarios found.</p>\n\
         <table id=\"coverage\">\n<thead><tr><th>target · step</th>",
    );
    for col in &m.columns {
        let _ = write!(out, "<th>{}</th>", escape(col));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &m.rows {
        let _ = write!(out, "<tr><th>{}</th>", escape(&row.label));
        for cell in &row.cells {
            match cell {
                None => out.push_str("<td class=\"cov-none\">-</td>"),
                Some(c) => {
                    let href = match c.violation.filter(|_| c.state == State::Violation) {
                        Some(n) => format!("#violation-{n}"),
                        None => format!("#scenario-{}", c.scene),
                    };
                    let class = match c.state {
                        State::Fired => "cov-fired",
                        State::NeverFired => "cov-never",
                        State::Unknown => "cov-unknown",
                        State::Violation => "cov-fail",
                    };
                    let _ = write!(
                        out,
                        "<td class=\"{class}\" title=\"{}\"><a href=\"{href}\">{}</a></td>",
                        escape(&c.faults.join("\n")),
                        c.state.as_str()
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use outbox_trace::Kind;

    use super::*;
    use crate::render::steps;

    /// The script names kinds only as `KIND.<name>`, from the page's table of `Kind::ALL`: every
    /// such name must be a kind of the contract. A step's label comes from its kind's look
    /// ([`steps::look`]) unless the look leaves it to the row (no words): each such kind must
    /// have its case in the script, so renaming a kind fails here instead of drawing it unnamed.
    #[test]
    fn the_script_names_only_contract_kinds_and_draws_each_one() {
        let js = SCRIPT.concat();
        let named: BTreeSet<&str> = js
            .split("KIND.")
            .skip(1)
            .map(|rest| {
                let end = rest
                    .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                    .unwrap_or(rest.len());
                &rest[..end]
            })
            .collect();
        for name in &named {
            assert!(name.parse::<Kind>().is_ok(), "KIND.{name} is no kind");
        }
        let cased: BTreeSet<&str> = js
            .split("case KIND.")
            .skip(1)
            .map(|rest| rest.split(':').next().unwrap())
            .collect();
        let from_rows: BTreeSet<&str> = Kind::ALL
            .iter()
            .filter(|k| steps::look(**k).words.is_empty())
            .map(|k| k.as_str())
            .collect();
        assert_eq!(cased, from_rows);
    }

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        let text = script_json(&"</script><!-- x").unwrap();
        assert!(!text.contains('<'), "{text}");
        let back: String = serde_json::from_str(&text).unwrap();
        assert_eq!(back, "</script><!-- x");
    }

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
