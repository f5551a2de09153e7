//! Durations as a fault's text writes them: `2s`, `1500ms`, `1m`, or a bare number of seconds.

use std::time::Duration;

/// Parses `2s`, `1500ms`, `1m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try 2s or 500ms)"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (use ms, s or m)")),
    };
    if !(secs.is_finite() && secs > 0.0 && secs < 86_400.0) {
        return Err(format!("`{s}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration as [`parse_duration`] reads it back: whole seconds as `3s`, else milliseconds.
pub fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
