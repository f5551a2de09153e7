//! A check as JUnit XML (`analyzer check --junit FILE`), the format CI test reporters read
//! (GitLab, Jenkins, Azure DevOps, Buildkite, GitHub's reporters): one `<testsuite>` per scenario,
//! one `<testcase>` per invariant. A FAIL is a `<failure>` whose message is the violation's line
//! and whose text is its witness chain; `unknown` is `<skipped>` with its reason (a CI must not
//! show it green); a named fault that never fired is a `<testcase>` of its own, skipped, with why;
//! the scenario's faults go into `<properties>`.

use std::io::{self, Write};

use crate::check::{Outcome, Report, ScenarioReport, Verdict};
use crate::explain;
use crate::explain::text::violation_text;

/// Writes the JUnit document of `report`.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let suites: Vec<String> = report.scenarios.iter().map(|s| suite(report, s)).collect();
    let count =
        |pick: fn(&ScenarioReport) -> usize| report.scenarios.iter().map(pick).sum::<usize>();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="analyzer check" tests="{}" failures="{}" errors="0">"#,
        count(tests),
        count(failures)
    )?;
    for s in suites {
        out.write_all(s.as_bytes())?;
    }
    writeln!(out, "</testsuites>")
}

fn tests(s: &ScenarioReport) -> usize {
    s.outcomes
        .iter()
        .filter(|o| o.verdict != Verdict::Skipped)
        .count()
        + s.coverage.unfired_named().count()
}

fn failures(s: &ScenarioReport) -> usize {
    s.outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .count()
}

fn skipped(s: &ScenarioReport) -> usize {
    s.outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Unknown)
        .count()
        + s.coverage.unfired_named().count()
}

fn suite(report: &Report, s: &ScenarioReport) -> String {
    let names = &report.loaded.names;
    let h = &report.loaded.histories[s.history];
    let scenario = names.name(h.scenario);
    let name = format!("{}/{scenario}", names.name(h.run_id));
    let mut x = format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        escape(&name),
        tests(s),
        failures(s),
        skipped(s)
    );
    if !s.coverage.faults.is_empty() {
        x.push_str("    <properties>\n");
        for f in &s.coverage.faults {
            let mut value = format!("{}: fired {}", f.origin.as_str(), f.fired);
            if let Some(why) = &f.why {
                value.push_str(&format!(" ({why})"));
            }
            x.push_str(&format!(
                "      <property name=\"fault {}\" value=\"{}\"/>\n",
                escape(&f.spec),
                escape(&value)
            ));
        }
        x.push_str("    </properties>\n");
    }
    for o in s.outcomes.iter().filter(|o| o.verdict != Verdict::Skipped) {
        x.push_str(&case(scenario, o, report, s));
    }
    for f in s.coverage.unfired_named() {
        let why = f.why.as_deref().unwrap_or("the producer gave no reason");
        x.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"fault {}\">\n      <skipped message=\"never fired: {}\"/>\n    </testcase>\n",
            escape(scenario),
            escape(&f.spec),
            escape(why)
        ));
    }
    x.push_str("  </testsuite>\n");
    x
}

fn case(scenario: &str, o: &Outcome, report: &Report, s: &ScenarioReport) -> String {
    let names = &report.loaded.names;
    let h = &report.loaded.histories[s.history];
    let mut x = format!(
        "    <testcase classname=\"{}\" name=\"{}\">\n",
        escape(scenario),
        o.invariant.id()
    );
    match o.verdict {
        Verdict::Fail => {
            let mut lines = Vec::new();
            let mut text = String::new();
            for v in &o.violations {
                let (line, chain) = violation_text(o, v, h, names);
                text.push_str(&format!("{line}\n{chain}\n\n"));
                lines.push(line);
            }
            if o.more > 0 {
                text.push_str(&format!("{} more violation(s)\n", o.more));
            }
            let message = lines
                .first()
                .cloned()
                .unwrap_or_else(|| format!("FAIL {}", o.invariant.id()));
            x.push_str(&format!(
                "      <failure message=\"{}\" type=\"FAIL\">{}</failure>\n",
                escape(&message),
                escape(&text)
            ));
        }
        Verdict::Unknown => {
            let reason = o
                .reason
                .as_ref()
                .map_or_else(|| "undecided".to_string(), explain::reason);
            x.push_str(&format!(
                "      <skipped message=\"unknown: {}\"/>\n",
                escape(&reason)
            ));
        }
        Verdict::Pass | Verdict::Skipped => {}
    }
    x.push_str("    </testcase>\n");
    x
}

/// `text` as XML character data or an attribute value: the contract's one XML escaping.
fn escape(text: &str) -> String {
    outbox_trace::output::escape::xml(text)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn special_and_control_characters_are_escaped_or_replaced() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}\u{fffe}\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\u{fffd}\u{fffd}\n"
        );
    }
}
