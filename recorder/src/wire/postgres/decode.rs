//! The bodies of the PostgreSQL messages a listening reader reads: Parse, Bind, Execute, Close
//! and Query from the process; RowDescription, DataRow, CommandComplete and ReadyForQuery from
//! the server. Each is read from the body as kept; a field cut off (a body kept in part) or
//! malformed reads as `None`.

/// Reads a message body field by field.
pub(super) struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `body`.
    pub(super) fn new(body: &'a [u8]) -> Cursor<'a> {
        Cursor { rest: body }
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(taken)
    }

    /// A NUL-terminated string, as text.
    pub(super) fn text(&mut self) -> Option<String> {
        let end = self.rest.iter().position(|&b| b == 0)?;
        let text = String::from_utf8_lossy(&self.rest[..end]).into_owned();
        self.rest = &self.rest[end + 1..];
        Some(text)
    }

    /// A big-endian 16-bit integer.
    pub(super) fn int16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    /// A big-endian 32-bit integer.
    fn int32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    /// A count (a 16-bit integer that is not negative).
    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.int16()?).ok()
    }

    /// A value preceded by its 32-bit length: `Some(None)` for a NULL (length -1).
    fn value(&mut self) -> Option<Option<&'a [u8]>> {
        match self.int32()? {
            -1 => Some(None),
            len => Some(Some(self.take(usize::try_from(len).ok()?)?)),
        }
    }
}

/// The format codes of a list of values (a Bind's parameters or results): none means all text,
/// one applies to all, else one for each value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Formats(Vec<i16>);

impl Formats {
    /// Whether value `at` is sent in binary format (code 1).
    pub(super) fn binary(&self, at: usize) -> bool {
        match self.0.as_slice() {
            [] => false,
            [all] => *all == 1,
            each => each.get(at).is_some_and(|&code| code == 1),
        }
    }

    /// Reads a count, then as many format codes.
    fn read(cursor: &mut Cursor<'_>) -> Option<Formats> {
        let n = cursor.count()?;
        (0..n)
            .map(|_| cursor.int16())
            .collect::<Option<_>>()
            .map(Formats)
    }
}

/// A value as text: `None` for a NULL or a binary value.
fn as_text(value: Option<&[u8]>, binary: bool) -> Option<String> {
    match value {
        Some(bytes) if !binary => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// A Parse: the statement's name and its SQL (`None` when cut off).
pub(super) fn parse(body: &[u8]) -> Option<(String, Option<String>)> {
    let mut cursor = Cursor::new(body);
    let name = cursor.text()?;
    Some((name, cursor.text()))
}

/// A Bind, as the listener keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Bind {
    /// The portal it makes (empty: the unnamed one).
    pub(super) portal: String,
    /// The statement it binds (empty: the unnamed one).
    pub(super) statement: String,
    /// Its parameters as text (`None` for a NULL or a binary value); `None` when cut off.
    pub(super) params: Option<Vec<Option<String>>>,
    /// The formats it asks for the result columns.
    pub(super) results: Formats,
}

/// A Bind: its names, then (when not cut off) its parameters and result formats.
pub(super) fn bind(body: &[u8]) -> Option<Bind> {
    let mut cursor = Cursor::new(body);
    let portal = cursor.text()?;
    let statement = cursor.text()?;
    let rest = bind_values(&mut cursor);
    let (params, results) = match rest {
        Some((params, results)) => (Some(params), results),
        None => (None, Formats::default()),
    };
    Some(Bind {
        portal,
        statement,
        params,
        results,
    })
}

/// A Bind's parameters (as text) and result formats, after its names.
fn bind_values(cursor: &mut Cursor<'_>) -> Option<(Vec<Option<String>>, Formats)> {
    let formats = Formats::read(cursor)?;
    let n = cursor.count()?;
    let params = (0..n)
        .map(|at| Some(as_text(cursor.value()?, formats.binary(at))))
        .collect::<Option<Vec<_>>>()?;
    Some((params, Formats::read(cursor)?))
}

/// A RowDescription: each column's name and whether it comes in binary format.
pub(super) fn row_description(body: &[u8]) -> Option<(Vec<String>, Formats)> {
    let mut cursor = Cursor::new(body);
    let n = cursor.count()?;
    let mut names = Vec::with_capacity(n.min(1024));
    let mut formats = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        names.push(cursor.text()?);
        // Table oid, column number, type oid, type size, type modifier.
        cursor.take(4 + 2 + 4 + 2 + 4)?;
        formats.push(cursor.int16()?);
    }
    Some((names, Formats(formats)))
}

/// A DataRow's values as text (`None` for a NULL or a binary value, by `formats`).
pub(super) fn data_row(body: &[u8], formats: &Formats) -> Option<Vec<Option<String>>> {
    let mut cursor = Cursor::new(body);
    let n = cursor.count()?;
    (0..n)
        .map(|at| Some(as_text(cursor.value()?, formats.binary(at))))
        .collect()
}

/// A message whose body is one string (a Query's SQL, a CommandComplete's tag): up to its NUL,
/// or all of the body kept.
pub(super) fn string(body: &[u8]) -> String {
    let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
    String::from_utf8_lossy(&body[..end]).into_owned()
}

/// What a Close closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Closed {
    /// A prepared statement, by name.
    Statement(String),
    /// A portal, by name.
    Portal(String),
}

/// A Close: a statement or a portal, by name.
pub(super) fn close(body: &[u8]) -> Option<Closed> {
    let (&what, rest) = body.split_first()?;
    let name = Cursor::new(rest).text()?;
    match what {
        b'S' => Some(Closed::Statement(name)),
        b'P' => Some(Closed::Portal(name)),
        _ => None,
    }
}

/// An Execute: the portal it runs.
pub(super) fn execute(body: &[u8]) -> Option<String> {
    Cursor::new(body).text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_reads_text_params_and_tells_nulls_and_binary_values_as_none() {
        let mut body = b"portal\0stmt\0".to_vec();
        // Formats: text, binary, text.
        body.extend([0, 3, 0, 0, 0, 1, 0, 0]);
        body.extend([0, 3]);
        body.extend(2i32.to_be_bytes());
        body.extend(b"42");
        body.extend(4i32.to_be_bytes());
        body.extend([0, 0, 0, 7]);
        body.extend((-1i32).to_be_bytes());
        body.extend([0, 0]);
        let bound = bind(&body).expect("a bind");
        assert_eq!(
            (bound.portal.as_str(), bound.statement.as_str()),
            ("portal", "stmt")
        );
        assert_eq!(bound.params, Some(vec![Some("42".to_string()), None, None]));
        let cut = bind(&body[..body.len() - 6]).expect("its names");
        assert_eq!((cut.statement.as_str(), cut.params), ("stmt", None));
    }

    #[test]
    fn a_row_description_and_a_data_row_read_names_and_text_values() {
        let mut description = vec![0, 2];
        for (name, format) in [("id", 0u8), ("blob", 1)] {
            description.extend(name.as_bytes());
            description.push(0);
            description.extend([0; 16]);
            description.extend([0, format]);
        }
        let (names, formats) = row_description(&description).expect("a description");
        assert_eq!(names, ["id", "blob"]);
        let mut row = vec![0, 2];
        row.extend(1i32.to_be_bytes());
        row.push(b'7');
        row.extend(1i32.to_be_bytes());
        row.push(9);
        assert_eq!(
            data_row(&row, &formats),
            Some(vec![Some("7".to_string()), None])
        );
        assert_eq!(data_row(&row[..5], &formats), None, "cut off");
    }

    #[test]
    fn close_parse_and_execute_read_their_names() {
        assert_eq!(close(b"Sname\0"), Some(Closed::Statement("name".into())));
        assert_eq!(close(b"P\0"), Some(Closed::Portal(String::new())));
        assert_eq!(close(b"X\0"), None);
        assert_eq!(
            parse(b"s1\0SELECT 1\0\0\0"),
            Some(("s1".into(), Some("SELECT 1".into())))
        );
        assert_eq!(parse(b"s1\0SELECT"), Some(("s1".into(), None)));
        assert_eq!(execute(b"\0\0\0\0\0").as_deref(), Some(""));
        assert_eq!(string(b"INSERT 0 1\0"), "INSERT 0 1");
    }
}
