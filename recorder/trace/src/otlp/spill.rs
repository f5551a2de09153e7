//! Pending events spilled to disk, so a file of spans is mapped in memory bounded by a batch of
//! events rather than by the file: an anonymous temporary file holding sorted segments of events
//! in a compact binary form, read back one buffered segment reader at a time by the k-way merge
//! of [`super::file`].
//!
//! A segment is the events of a contiguous range of [`Pending::id`]s, sorted by their final key
//! (see [`Held::key`]). Only what the mapping's last step reads is written: `run_id` becomes the
//! run's number, and the span's start and end (read only to rank instances, a run-wide number
//! already taken) are dropped. The file is removed by the system when its last handle closes.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::mapping::Pending;
use crate::{Event, Kind, TraceError};

/// One event waiting for the run-wide numbers: the mapping's event, the number of the span that
/// gave it, and its run's number (runs are numbered by first appearance).
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub pending: Pending,
    pub span: u64,
    pub run: u32,
}

/// Where an event goes in the run's order: by run, then by `outbox.seq` (a run whose every event
/// has it) or by (time, span, place in the span), ties broken by the order events were made.
pub(super) type Key = (u32, u64, u64, u32, u64);

impl Held {
    /// The event's key when its run is ordered by `outbox.seq` (`by_seq`) or by time.
    pub fn key(&self, by_seq: bool) -> Key {
        let p = &self.pending;
        if by_seq {
            (self.run, p.seq.unwrap_or(0), 0, 0, p.id)
        } else {
            (self.run, p.at, self.span, p.inside, p.id)
        }
    }

    /// About how many bytes the event holds in memory.
    pub fn bytes(&self) -> usize {
        let e = &self.pending.event;
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        std::mem::size_of::<Held>()
            + e.run_id.len()
            + e.scenario.len()
            + e.backend.len()
            + e.actor.len()
            + opt(&e.task_id)
            + opt(&e.event_id)
            + opt(&e.aggregate_id)
            + opt(&e.counter_key)
            + opt(&e.detail)
            + opt(&self.pending.unknown_kind)
            + opt(&self.pending.instance)
    }
}

/// One sorted segment in the spill file.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    /// Where its bytes start in the file, and how many there are.
    offset: u64,
    len: u64,
    /// How many events it holds.
    pub count: u64,
    /// Its events' ids: `lo..hi`.
    pub lo: u64,
    pub hi: u64,
    /// The runs it sorted by `outbox.seq` (all others by time).
    pub by_seq: Vec<u32>,
}

/// The spill file and its segments.
pub(super) struct Spill {
    file: Arc<File>,
    len: u64,
}

fn io_error(source: io::Error) -> TraceError {
    TraceError::Spill {
        what: "write",
        source,
    }
}

impl Spill {
    /// A new anonymous temporary file.
    pub fn new() -> Result<Self, TraceError> {
        let file = tempfile::tempfile().map_err(io_error)?;
        Ok(Spill {
            file: Arc::new(file),
            len: 0,
        })
    }

    /// Appends `events` (already sorted, ids `lo..lo + len`) as one segment.
    pub fn write(
        &mut self,
        events: &[Held],
        lo: u64,
        by_seq: Vec<u32>,
    ) -> Result<Segment, TraceError> {
        let offset = self.len;
        let mut w = Counted {
            inner: BufWriter::with_capacity(1 << 16, &*self.file),
            n: 0,
        };
        for h in events {
            encode(&mut w, h).map_err(io_error)?;
        }
        w.inner.flush().map_err(io_error)?;
        self.len += w.n;
        Ok(Segment {
            offset,
            len: w.n,
            count: events.len() as u64,
            lo,
            hi: lo + events.len() as u64,
            by_seq,
        })
    }

    /// A reader of `segment`'s events, in their order; `runs` gives each run's `run_id` back.
    pub fn reader(&self, segment: &Segment, runs: Arc<[String]>) -> SegmentReader {
        SegmentReader {
            bytes: BufReader::with_capacity(
                1 << 16,
                At {
                    file: self.file.clone(),
                    pos: segment.offset,
                    end: segment.offset + segment.len,
                },
            ),
            left: segment.count,
            runs,
        }
    }
}

/// Counts the bytes written through it.
struct Counted<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A range of the spill file, read with positioned reads (many readers share one file).
struct At {
    file: Arc<File>,
    pos: u64,
    end: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end - self.pos).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The events of one segment, read back in order.
pub(super) struct SegmentReader {
    bytes: BufReader<At>,
    left: u64,
    runs: Arc<[String]>,
}

impl SegmentReader {
    /// The next event; `None` after the last.
    pub fn next_held(&mut self) -> Result<Option<Held>, TraceError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        decode(&mut self.bytes, &self.runs)
            .map(Some)
            .map_err(|source| TraceError::Spill {
                what: "read back",
                source,
            })
    }
}

fn put_u64(w: &mut impl Write, mut n: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut i = 0;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            buf[i] = byte;
            i += 1;
            break;
        }
        buf[i] = byte | 0x80;
        i += 1;
    }
    w.write_all(&buf[..i])
}

fn put_i64(w: &mut impl Write, n: i64) -> io::Result<()> {
    put_u64(w, ((n << 1) ^ (n >> 63)) as u64)
}

fn put_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    put_u64(w, s.len() as u64)?;
    w.write_all(s.as_bytes())
}

/// An optional value: 0 for `None`, else 1 and the value.
fn put_opt<W: Write, T>(
    w: &mut W,
    v: Option<T>,
    put: impl FnOnce(&mut W, T) -> io::Result<()>,
) -> io::Result<()> {
    match v {
        None => w.write_all(&[0]),
        Some(v) => {
            w.write_all(&[1])?;
            put(w, v)
        }
    }
}

fn encode<W: Write>(w: &mut W, h: &Held) -> io::Result<()> {
    let p = &h.pending;
    let e = &p.event;
    put_u64(w, p.id)?;
    put_u64(w, h.span)?;
    put_u64(w, u64::from(h.run))?;
    put_u64(w, p.at)?;
    put_u64(w, u64::from(p.inside))?;
    put_opt(w, p.seq, |w, v| put_u64(w, v))?;
    put_opt(w, p.incarnation, |w, v| put_u64(w, u64::from(v)))?;
    put_opt(w, p.instance.as_deref(), |w, v| put_str(w, v))?;
    put_opt(w, p.unknown_kind.as_deref(), |w, v| put_str(w, v))?;
    put_str(w, e.kind.as_str())?;
    put_str(w, &e.scenario)?;
    put_str(w, &e.backend)?;
    put_str(w, &e.actor)?;
    put_opt(w, e.task_id.as_deref(), |w, v| put_str(w, v))?;
    put_opt(w, e.event_id.as_deref(), |w, v| put_str(w, v))?;
    put_opt(w, e.aggregate_id.as_deref(), |w, v| put_str(w, v))?;
    put_opt(w, e.aggregate_seq, |w, v| put_u64(w, v))?;
    put_opt(w, e.attempt, |w, v| put_u64(w, u64::from(v)))?;
    put_opt(w, e.broker_seq, |w, v| put_u64(w, v))?;
    put_opt(w, e.partition, |w, v| put_i64(w, i64::from(v)))?;
    put_opt(w, e.store_rev, |w, v| put_i64(w, v))?;
    put_opt(w, e.amount, |w, v| put_i64(w, v))?;
    put_opt(w, e.counter, |w, v| put_i64(w, v))?;
    put_opt(w, e.counter_key.as_deref(), |w, v| put_str(w, v))?;
    put_opt(w, e.detail.as_deref(), |w, v| put_str(w, v))
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn get_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        n |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err(bad("a number longer than 64 bits"))
}

fn get_u32(r: &mut impl Read) -> io::Result<u32> {
    u32::try_from(get_u64(r)?).map_err(|_| bad("a number out of range"))
}

fn get_i64(r: &mut impl Read) -> io::Result<i64> {
    let z = get_u64(r)?;
    Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
}

fn get_i32(r: &mut impl Read) -> io::Result<i32> {
    i32::try_from(get_i64(r)?).map_err(|_| bad("a number out of range"))
}

fn get_str(r: &mut impl Read) -> io::Result<String> {
    let len = usize::try_from(get_u64(r)?).map_err(|_| bad("a text too long"))?;
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    String::from_utf8(bytes).map_err(|_| bad("text that is not UTF-8"))
}

fn get_opt<R: Read, T>(
    r: &mut R,
    get: impl FnOnce(&mut R) -> io::Result<T>,
) -> io::Result<Option<T>> {
    let mut tag = [0u8; 1];
    r.read_exact(&mut tag)?;
    match tag[0] {
        0 => Ok(None),
        1 => get(r).map(Some),
        _ => Err(bad("an optional value's tag is neither 0 nor 1")),
    }
}

fn decode(r: &mut impl Read, runs: &[String]) -> io::Result<Held> {
    let id = get_u64(r)?;
    let span = get_u64(r)?;
    let run = get_u32(r)?;
    let at = get_u64(r)?;
    let inside = get_u32(r)?;
    let seq = get_opt(r, get_u64)?;
    let incarnation = get_opt(r, get_u32)?;
    let instance = get_opt(r, get_str)?;
    let unknown_kind = get_opt(r, get_str)?;
    let kind: Kind = get_str(r)?
        .parse()
        .map_err(|_| bad("a kind the contract does not define"))?;
    let mut e = Event::new(kind);
    e.run_id = runs
        .get(run as usize)
        .cloned()
        .ok_or_else(|| bad("a run number out of range"))?;
    e.scenario = get_str(r)?;
    e.backend = get_str(r)?;
    e.actor = get_str(r)?;
    e.task_id = get_opt(r, get_str)?;
    e.event_id = get_opt(r, get_str)?;
    e.aggregate_id = get_opt(r, get_str)?;
    e.aggregate_seq = get_opt(r, get_u64)?;
    e.attempt = get_opt(r, get_u32)?;
    e.broker_seq = get_opt(r, get_u64)?;
    e.partition = get_opt(r, get_i32)?;
    e.store_rev = get_opt(r, get_i64)?;
    e.amount = get_opt(r, get_i64)?;
    e.counter = get_opt(r, get_i64)?;
    e.counter_key = get_opt(r, get_str)?;
    e.detail = get_opt(r, get_str)?;
    Ok(Held {
        pending: Pending {
            id,
            event: e,
            unknown_kind,
            at,
            span_start: 0,
            span_end: 0,
            inside,
            seq,
            incarnation,
            instance,
        },
        span,
        run,
    })
}

/// When the pending events held in memory are sorted and spilled as one segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    /// At this many events,
    pub events: usize,
    /// or at about this many bytes of them.
    pub bytes: usize,
}

impl Default for Bound {
    fn default() -> Self {
        Bound {
            events: 1 << 18,
            bytes: 16 << 20,
        }
    }
}
