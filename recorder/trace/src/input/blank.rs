//! Runs of blank lines (whitespace only), skipped in bulk and bounded: a blank line is input that
//! yields no row, and a file is not let to feed the reader such input without end. A run longer
//! than [`MAX_BLANK_BYTES`] (a gzip of a few megabytes can hold gigabytes of newlines) is bad
//! input, found out once that much has been read, without holding it.

use std::io::BufRead;

/// The most blank input (16 MiB of lines of whitespace only) read in one run without a line of
/// content: at the start of a text, between two of its lines, or at its end. A longer run is bad
/// input.
pub const MAX_BLANK_BYTES: usize = 16 << 20;

/// A run of blank lines skipped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// The newlines in it: the lines it ended.
    pub newlines: u64,
    /// Its bytes.
    pub bytes: usize,
}

/// Why a run of blank lines was not skipped.
#[derive(Debug)]
pub(crate) enum BlankError {
    /// The run is longer than [`MAX_BLANK_BYTES`]; the newlines read until then.
    TooLong { newlines: u64 },
    /// The stream failed.
    Io(std::io::Error),
}

impl BlankError {
    /// Why, for a message.
    pub(crate) fn reason(&self) -> String {
        match self {
            BlankError::TooLong { .. } => format!(
                "more than {} MiB of blank lines in a row (MAX_BLANK_BYTES), no row in them",
                MAX_BLANK_BYTES >> 20
            ),
            BlankError::Io(e) => format!("cannot read: {e}"),
        }
    }

    /// The 1-based number of the line where it happened, after the `before` lines read.
    pub(crate) fn line(&self, before: u64) -> u64 {
        match self {
            BlankError::TooLong { newlines } => before + newlines,
            BlankError::Io(_) => before + 1,
        }
    }
}

/// Consumes the blank lines at the head of `text`, up to the start of the next line with
/// content (whose leading whitespace on the line may go with them) or the end, appending the
/// bytes consumed to `keep` when given.
pub(crate) fn skip_blank(
    text: &mut (impl BufRead + ?Sized),
    mut keep: Option<&mut Vec<u8>>,
) -> Result<Skipped, BlankError> {
    let mut skipped = Skipped::default();
    loop {
        let available = match text.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BlankError::Io(e)),
        };
        if available.is_empty() {
            return Ok(skipped);
        }
        let content = available.iter().position(|b| !b.is_ascii_whitespace());
        let take = match content {
            // Up to the line of content, which is left whole when it starts in this buffer.
            Some(at) => memchr::memrchr(b'\n', &available[..at]).map_or(0, |nl| nl + 1),
            None => available.len(),
        };
        skipped.newlines += memchr::memchr_iter(b'\n', &available[..take]).count() as u64;
        skipped.bytes += take;
        if skipped.bytes > MAX_BLANK_BYTES {
            return Err(BlankError::TooLong {
                newlines: skipped.newlines,
            });
        }
        if let Some(keep) = keep.as_deref_mut() {
            keep.extend_from_slice(&available[..take]);
        }
        text.consume(take);
        if content.is_some() {
            return Ok(skipped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read as _};

    #[test]
    fn skips_blank_lines_counting_them_and_stops_at_content_or_past_the_bound() {
        // A small buffer: runs that cross buffer boundaries.
        let text = b"\n  \n\t\r\n  {\"a\": 1}\n\n".to_vec();
        let mut reader = BufReader::with_capacity(3, text.as_slice());
        let mut kept = Vec::new();
        let skipped = skip_blank(&mut reader, Some(&mut kept)).unwrap();
        assert_eq!(skipped.newlines, 3);
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        assert_eq!(rest.trim_start(), "{\"a\": 1}\n\n");
        assert_eq!(kept.len() + rest.len(), text.len(), "nothing lost");

        let newlines = vec![b'\n'; MAX_BLANK_BYTES + 2];
        let mut reader = BufReader::new(newlines.as_slice());
        assert!(matches!(
            skip_blank(&mut reader, None),
            Err(BlankError::TooLong { newlines }) if newlines as usize > MAX_BLANK_BYTES
        ));
        let at_the_bound = vec![b'\n'; MAX_BLANK_BYTES];
        let skipped = skip_blank(&mut at_the_bound.as_slice(), None).unwrap();
        assert_eq!(skipped.bytes, MAX_BLANK_BYTES);
    }
}
