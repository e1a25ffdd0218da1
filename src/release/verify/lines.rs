//! The bounded line reader: splits a stream on `\n` without holding more than
//! `MAX_LINE_BYTES` of one line, hashing every byte on the way, so a huge or binary file yields
//! problems, never an allocation the size of the file.

use super::*;

/// One line as the bounded reader returns it.
pub(super) enum Line {
    Bytes(Vec<u8>),
    TooLong(u64),
}

/// The byte-order mark some editors put at the start of a UTF-8 file.
pub(super) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits a stream on `\n` without ever holding more than `MAX_LINE_BYTES` of one line, hashing
/// every byte on the way.
pub(super) struct BoundedLines<R> {
    pub(super) reader: BufReader<R>,
    pub(super) hasher: Sha256,
}

impl<R: Read> BoundedLines<R> {
    pub(super) fn new(reader: R) -> Self {
        BoundedLines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            hasher: Sha256::new(),
        }
    }

    pub(super) fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut length: u64 = 0;
        let mut started = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(started.then(|| finish_line(kept, length)));
            }
            started = true;
            let (content, taken, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(end) => (&buf[..end], end + 1, true),
                None => (buf, buf.len(), false),
            };
            length += content.len() as u64;
            if length <= MAX_LINE_BYTES as u64 {
                kept.extend_from_slice(content);
            } else {
                kept = Vec::new();
            }
            self.hasher.update(&buf[..taken]);
            self.reader.consume(taken);
            if ended {
                return Ok(Some(finish_line(kept, length)));
            }
        }
    }

    pub(super) fn sha256(self) -> String {
        hex(&self.hasher.finalize())
    }
}

pub(super) fn finish_line(kept: Vec<u8>, length: u64) -> Line {
    if length > MAX_LINE_BYTES as u64 {
        Line::TooLong(length)
    } else {
        Line::Bytes(kept)
    }
}
