//! Everything a server sends is untrusted: ids, file names, status strings and error texts may
//! be hostile or echo the API key. Server ids reach a URL or a local file name only through
//! [`url_segment`] and [`local_file_name`], and server bytes reach the terminal, a log or a file
//! only after [`Redactor`] has removed the key, and server text reaches the terminal only through
//! [`crate::util::printable`].

use std::borrow::Cow;

/// What replaces the key wherever a server echoes it.
pub const REDACTED: &str = "[redacted]";

/// `id` as one URL path segment: every byte outside the unreserved set is percent-encoded, so
/// `/`, `..`, `?` or `#` in an id can never change which URL is asked. `None` for the ids that no
/// encoding keeps from being a dot-segment (``, `.`, `..`).
pub fn url_segment(id: &str) -> Option<String> {
    if matches!(id, "" | "." | "..") {
        return None;
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(out)
}

/// The local file name (inside `state/downloads`) of the server file `id`: the id itself when it
/// is plainly safe (letters, digits, `_`, `-`, at most 100 of them), else a hash of it, so that
/// no id can name a path outside the folder or another file in it.
pub fn local_file_name(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        format!("{id}.jsonl")
    } else {
        format!(
            "id-{}.jsonl",
            &crate::util::digest::sha256_hex(id.as_bytes())[..32]
        )
    }
}

/// Removes the API key from server bytes: its plain form and its JSON-escaped form, wherever
/// they occur (a `Bearer …` header echoed in an error, a key pasted into an output line).
#[derive(Clone)]
pub struct Redactor {
    /// One vectorised substring search per form of the key; every downloaded byte passes
    /// through them, so they must run at memory speed.
    needles: Vec<memchr::memmem::Finder<'static>>,
}

impl Redactor {
    pub fn new(key: &str) -> Redactor {
        let mut forms = vec![key.as_bytes().to_vec()];
        let escaped = serde_json::to_string(key).unwrap_or_default();
        let escaped = escaped.trim_matches('"').as_bytes().to_vec();
        if !escaped.is_empty() && escaped != forms[0] {
            forms.push(escaped);
        }
        forms.retain(|form| !form.is_empty());
        let needles = forms
            .iter()
            .map(|form| memchr::memmem::Finder::new(form).into_owned())
            .collect();
        Redactor { needles }
    }

    /// `input` with every occurrence of the key replaced by [`REDACTED`], scanning left to
    /// right: the earliest occurrence of either form is replaced, then the scan goes on after it.
    pub fn bytes<'a>(&self, input: &'a [u8]) -> Cow<'a, [u8]> {
        let find_from = |needle: &memchr::memmem::Finder, from: usize| {
            needle.find(&input[from..]).map(|at| from + at)
        };
        let mut next: Vec<Option<usize>> = self.needles.iter().map(|n| find_from(n, 0)).collect();
        let mut out: Option<Vec<u8>> = None;
        let mut copied = 0;
        while let Some((at, len)) = next
            .iter()
            .zip(&self.needles)
            .filter_map(|(at, needle)| Some(((*at)?, needle.needle().len())))
            .min_by_key(|(at, _)| *at)
        {
            let buf = out.get_or_insert_with(|| Vec::with_capacity(input.len()));
            buf.extend_from_slice(&input[copied..at]);
            buf.extend_from_slice(REDACTED.as_bytes());
            copied = at + len;
            for (found, needle) in next.iter_mut().zip(&self.needles) {
                if found.is_some_and(|found| found < copied) {
                    *found = find_from(needle, copied);
                }
            }
        }
        match out {
            None => Cow::Borrowed(input),
            Some(mut buf) => {
                buf.extend_from_slice(&input[copied..]);
                Cow::Owned(buf)
            }
        }
    }

    pub fn text(&self, input: &str) -> String {
        String::from_utf8_lossy(&self.bytes(input.as_bytes())).into_owned()
    }

    /// A redactor for a stream that arrives in chunks (a key may span two of them).
    pub fn stream(&self) -> StreamRedactor<'_> {
        StreamRedactor {
            redactor: self,
            pending: Vec::new(),
        }
    }

    /// How many trailing bytes of `bytes` could begin a key that the next chunk completes.
    fn open_tail(&self, bytes: &[u8]) -> usize {
        let longest = self
            .needles
            .iter()
            .map(|n| n.needle().len())
            .max()
            .unwrap_or(0);
        (1..longest.min(bytes.len() + 1))
            .rev()
            .find(|&k| {
                let tail = &bytes[bytes.len() - k..];
                self.needles.iter().any(|n| n.needle().starts_with(tail))
            })
            .unwrap_or(0)
    }
}

/// Redacts a stream chunk by chunk, holding back the few bytes that might start a key.
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    pending: Vec<u8>,
}

impl StreamRedactor<'_> {
    /// The redacted bytes of everything fed so far that no later chunk can change.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        let changed = match self.redactor.bytes(&self.pending) {
            Cow::Borrowed(_) => None,
            Cow::Owned(changed) => Some(changed),
        };
        let mut redacted = changed.unwrap_or_else(|| std::mem::take(&mut self.pending));
        let keep = self.redactor.open_tail(&redacted);
        self.pending = redacted.split_off(redacted.len() - keep);
        redacted
    }

    /// What is left once the stream has ended.
    pub fn finish(self) -> Vec<u8> {
        self.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-ABCDEF123456";

    #[test]
    fn ids_cannot_leave_their_url_segment_or_their_folder() {
        assert_eq!(url_segment("file_01abc").as_deref(), Some("file_01abc"));
        assert_eq!(
            url_segment("../../x?y#z").as_deref(),
            Some("..%2F..%2Fx%3Fy%23z")
        );
        assert_eq!(
            url_segment("/etc/passwd").as_deref(),
            Some("%2Fetc%2Fpasswd")
        );
        for dot in ["", ".", ".."] {
            assert_eq!(url_segment(dot), None, "{dot:?}");
        }
        assert_eq!(local_file_name("file_01-abc"), "file_01-abc.jsonl");
        for hostile in ["../../../x", "/abs/path", "a/b", "..", "", "x.jsonl", "é"] {
            let name = local_file_name(hostile);
            assert!(
                name.starts_with("id-") && !name.contains('/') && name.len() == 41,
                "{hostile:?} → {name}"
            );
        }
        assert_ne!(local_file_name("a/b"), local_file_name("a/c"));
    }

    #[test]
    fn the_key_is_redacted_in_plain_and_escaped_form() {
        let redactor = Redactor::new(KEY);
        let text = format!("Authorization: Bearer {KEY}; again {KEY}.");
        assert_eq!(
            redactor.text(&text),
            "Authorization: Bearer [redacted]; again [redacted]."
        );
        assert!(matches!(redactor.bytes(b"nothing here"), Cow::Borrowed(_)));
        let slashed = Redactor::new("key/with\"quote");
        assert_eq!(
            slashed.text(r#"{"m":"key/with\"quote"}"#),
            r#"{"m":"[redacted]"}"#
        );
    }

    proptest::proptest! {
        #[test]
        fn a_stream_is_redacted_the_same_however_it_is_chunked(
            parts in proptest::collection::vec("[a-zA-Z0-9 ]{0,8}", 0..6),
            cuts in proptest::collection::vec(0usize..120, 0..6),
        ) {
            let redactor = Redactor::new(KEY);
            let text = parts.join(KEY);
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut stream = redactor.stream();
            let mut out = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                out.extend(stream.feed(&bytes[start..cut]));
                start = cut;
            }
            out.extend(stream.finish());
            proptest::prop_assert_eq!(out, redactor.bytes(bytes).into_owned());
        }
    }

    /// The redaction rule written plainly, byte by byte: where a form of the key starts (the
    /// plain form first), it is replaced and the scan goes on after it.
    fn redacted_plainly(forms: &[&[u8]], input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < input.len() {
            match forms.iter().find(|form| input[at..].starts_with(form)) {
                Some(form) => {
                    out.extend_from_slice(REDACTED.as_bytes());
                    at += form.len();
                }
                None => {
                    out.push(input[at]);
                    at += 1;
                }
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn redaction_replaces_what_a_plain_byte_by_byte_scan_replaces(
            key in r#"[ab"\\]{1,4}"#,
            pieces in proptest::collection::vec(0usize..4, 0..40),
            filler in r#"[ab"\\x]{0,3}"#,
        ) {
            let redactor = Redactor::new(&key);
            let escaped = serde_json::to_string(&key).unwrap();
            let escaped = escaped.trim_matches('"');
            let mut input = String::new();
            for piece in pieces {
                input.push_str([key.as_str(), escaped, filler.as_str(), "a"][piece]);
            }
            let forms: &[&[u8]] = &[key.as_bytes(), escaped.as_bytes()];
            proptest::prop_assert_eq!(
                redactor.bytes(input.as_bytes()).into_owned(),
                redacted_plainly(forms, input.as_bytes())
            );
        }
    }
}
