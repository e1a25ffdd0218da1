//! Finds the next byte of a small set in a text eight bytes at a time (the word-at-a-time test
//! serde_json uses to skip through strings), and a word in any ASCII case the same way. The
//! scanners that read every byte of every prompt and reply — bracket balance, raw controls in
//! replies, sentence ends, filler words — look only where one of their bytes is.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The bytes a scanner stops at: the values in `bytes`, and every byte below `below` (`0` for
/// none, at most `0x80`).
#[derive(Debug, Clone, Copy)]
pub struct ByteSet<const N: usize> {
    pub bytes: [u8; N],
    pub below: u8,
}

impl<const N: usize> ByteSet<N> {
    /// Whether `byte` is in the set.
    pub fn contains(&self, byte: u8) -> bool {
        byte < self.below || self.bytes.contains(&byte)
    }

    /// Whether any of the eight bytes of `word` is in the set; never a false `false`.
    fn in_word(&self, word: u64) -> bool {
        let has_below = |bound: u8| word.wrapping_sub(ONES * u64::from(bound)) & !word & HIGHS != 0;
        has_below(self.below)
            || self
                .bytes
                .iter()
                .any(|&byte| zero_bytes(word ^ (ONES * u64::from(byte))) != 0)
    }

    /// The index of the first byte of `text` at or after `from` that is in the set.
    pub fn find(&self, text: &[u8], from: usize) -> Option<usize> {
        find_where(
            text,
            from,
            |word| self.in_word(word),
            |byte| self.contains(byte),
        )
    }
}

/// The high bit of each lane of `word` whose byte is zero, and perhaps of lanes above a zero
/// byte (a borrow carries); never a zero byte left out.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The eight bytes of `chunk` (eight long) as one little-endian word.
fn word_of(chunk: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(chunk);
    u64::from_le_bytes(word)
}

/// The index of the first byte at or after `from` for which `stops` holds, skipping whole words
/// for which `may_stop_in` does not (it may hold for a word without a stop, never the reverse).
fn find_where(
    text: &[u8],
    from: usize,
    may_stop_in: impl Fn(u64) -> bool,
    stops: impl Fn(u8) -> bool,
) -> Option<usize> {
    let rest = text.get(from..)?;
    let clean_words = rest
        .chunks_exact(8)
        .take_while(|chunk| !may_stop_in(word_of(chunk)))
        .count();
    let start = clean_words * 8;
    rest.get(start..)?
        .iter()
        .position(|&byte| stops(byte))
        .map(|at| from + start + at)
}

/// The ASCII digits, found eight bytes at a time: number sequences read the digit runs of every
/// prompt, and prose holds few of them.
pub fn find_digit(text: &[u8], from: usize) -> Option<usize> {
    // A byte in '0'..='9' of a word (the "has between" test of Bit Twiddling Hacks, exact for
    // bytes below 0x80; `!word` rules out the bytes from 0x80 on).
    let has_digit = |word: u64| {
        let low_bits = word & (ONES * 0x7f);
        (ONES * (0x7f + u64::from(b'9' + 1)) - low_bits)
            & !word
            & (low_bits + ONES * (0x7f - u64::from(b'0' - 1)))
            & HIGHS
            != 0
    };
    find_where(text, from, has_digit, |byte| byte.is_ascii_digit())
}

/// The words of an ASCII text, split on the whitespace `char::is_whitespace` accepts there (space,
/// tab, line feed, vertical tab, form feed, carriage return), counted eight bytes at a time: a
/// word starts at each byte that is not whitespace and follows whitespace or the start. Bytes
/// from 0x80 on count as letters, so only ASCII text gets `split_whitespace`'s count.
pub fn ascii_word_count(text: &[u8]) -> usize {
    // For ASCII bytes (below 0x80) each test sets a lane's high bit exactly when it holds for
    // that byte: every sum stays below 0x100 within its lane, so no carry crosses lanes.
    let whitespace = |word: u64| {
        let at_least = |bound: u8| (word + ONES * u64::from(0x80 - bound)) & HIGHS;
        let controls = at_least(b'\t') & !at_least(b'\r' + 1);
        let spaces = !((word ^ (ONES * u64::from(b' '))) + ONES * 0x7f) & HIGHS;
        controls | spaces
    };
    let mut words = 0;
    let mut follows_space = 0x80;
    let mut chunks = text.chunks_exact(8);
    for chunk in &mut chunks {
        let spaces = whitespace(word_of(chunk));
        words += (!spaces & (spaces << 8 | follows_space) & HIGHS).count_ones() as usize;
        follows_space = spaces >> 56;
    }
    let mut after_space = follows_space != 0;
    for &byte in chunks.remainder() {
        // The ASCII characters `char::is_whitespace` accepts: unlike `u8::is_ascii_whitespace`,
        // they include the vertical tab.
        let space = matches!(byte, b' ' | b'\t'..=b'\r');
        words += usize::from(after_space && !space);
        after_space = space;
    }
    words
}

/// Whether `needle` occurs in `text` with its ASCII letters in any case, as
/// `text.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))` says. Eight positions are
/// tried at a time, and a position is compared in full only where the bytes under the needle's
/// first and last byte already match them, once both are lower-cased the way ASCII letters are.
pub fn contains_ignoring_ascii_case(text: &[u8], needle: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (needle.first(), needle.last()) else {
        return true;
    };
    let matches_at = |start: usize| {
        text.get(start..start + needle.len())
            .is_some_and(|window| window.eq_ignore_ascii_case(needle))
    };
    let lowered = |at: usize| word_of(&text[at..at + 8]) | (ONES * 0x20);
    let (first, last) = (
        ONES * u64::from(first | 0x20),
        ONES * u64::from(last | 0x20),
    );
    let last_offset = needle.len() - 1;
    let mut start = 0;
    while start + last_offset + 8 <= text.len() {
        let both =
            zero_bytes(lowered(start) ^ first) & zero_bytes(lowered(start + last_offset) ^ last);
        if both != 0 && (start..start + 8).any(matches_at) {
            return true;
        }
        start += 8;
    }
    (start..text.len()).any(matches_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn find_stops_where_a_byte_by_byte_search_stops(
            text in proptest::collection::vec(any::<u8>(), 0..64),
            bytes in proptest::collection::vec(any::<u8>(), 3),
            below in 0u8..=128,
            from in 0usize..70,
        ) {
            let set = ByteSet { bytes: [bytes[0], bytes[1], bytes[2]], below };
            let expected = text
                .get(from..)
                .and_then(|rest| rest.iter().position(|b| *b < below || bytes.contains(b)))
                .map(|at| from + at);
            proptest::prop_assert_eq!(set.find(&text, from), expected);
        }
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..Default::default() })]

        #[test]
        fn a_word_in_any_case_is_found_where_every_window_compared_finds_it(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "lorem", "LOREM", "lOrEm", "lorex", "xorem", "l", "m", "L", "M", ",",
                        "\u{c}", "\u{4c}", "é", "\u{212a}",
                    ])
                    .prop_map(str::to_string),
                    "[a-zA-Z ,.]{1,12}",
                    any::<char>().prop_map(String::from),
                ],
                0..12,
            ),
            needle in proptest::sample::select(vec!["lorem", "m", "ab", "l,m", "LoReM ipsum"]),
        ) {
            let text = pieces.concat();
            let expected = text
                .as_bytes()
                .windows(needle.len())
                .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()));
            proptest::prop_assert_eq!(
                contains_ignoring_ascii_case(text.as_bytes(), needle.as_bytes()),
                expected,
                "{:?} in {:?}", needle, text
            );
        }

        #[test]
        fn find_digit_stops_at_the_first_ascii_digit(
            text in proptest::collection::vec(any::<u8>(), 0..64),
            from in 0usize..70,
        ) {
            let expected = text
                .get(from..)
                .and_then(|rest| rest.iter().position(u8::is_ascii_digit))
                .map(|at| from + at);
            proptest::prop_assert_eq!(find_digit(&text, from), expected);
        }

        #[test]
        fn ascii_words_are_counted_as_split_whitespace_counts_them(
            text in proptest::collection::vec(
                proptest::prop_oneof![
                    (0u8..0x80).prop_map(|b| vec![b]),
                    proptest::sample::select(vec![b' ', b'\t', b'\n', 0x0b, 0x0c, b'\r', 0x1f, 0x08, b'!'])
                        .prop_map(|b| vec![b]),
                    "[a-z]{1,9}".prop_map(String::into_bytes),
                ],
                0..40,
            ),
        ) {
            let text = String::from_utf8(text.concat()).unwrap();
            proptest::prop_assert_eq!(ascii_word_count(text.as_bytes()), text.split_whitespace().count(), "{:?}", text);
        }
    }

    #[test]
    fn find_digit_skips_every_byte_next_to_the_digits() {
        let neighbours: Vec<u8> = (0u8..=255).filter(|b| !b.is_ascii_digit()).collect();
        for digit in b'0'..=b'9' {
            for chunk in neighbours.chunks(16) {
                let mut text = chunk.to_vec();
                text.push(digit);
                assert_eq!(find_digit(&text, 0), Some(chunk.len()), "{text:?}");
            }
        }
    }

    #[test]
    fn finds_controls_quotes_and_backslashes_in_long_text() {
        let set = ByteSet {
            bytes: [b'"', b'\\'],
            below: 0x20,
        };
        let text = format!("{}\"{}\\{}\n", "a".repeat(21), "b".repeat(9), "é".repeat(7));
        let bytes = text.as_bytes();
        assert_eq!(set.find(bytes, 0), Some(21));
        assert_eq!(set.find(bytes, 22), Some(31));
        assert_eq!(set.find(bytes, 32), Some(bytes.len() - 1));
        assert_eq!(set.find(bytes, bytes.len()), None);
    }
}
