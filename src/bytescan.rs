//! Finds the next byte of a small set in a text eight bytes at a time (the word-at-a-time test
//! serde_json uses to skip through strings). The scanners that read every byte of every prompt
//! and reply — bracket balance, raw controls in replies, sentence ends — look only where one of
//! their bytes is.

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
        let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS != 0;
        has_below(self.below)
            || self
                .bytes
                .iter()
                .any(|&byte| has_zero(word ^ (ONES * u64::from(byte))))
    }

    /// The index of the first byte of `text` at or after `from` that is in the set.
    pub fn find(&self, text: &[u8], from: usize) -> Option<usize> {
        let rest = text.get(from..)?;
        let clean_words = rest
            .chunks_exact(8)
            .take_while(|chunk| {
                let mut word = [0; 8];
                word.copy_from_slice(chunk);
                !self.in_word(u64::from_le_bytes(word))
            })
            .count();
        let start = clean_words * 8;
        rest.get(start..)?
            .iter()
            .position(|&byte| self.contains(byte))
            .map(|at| from + start + at)
    }
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
