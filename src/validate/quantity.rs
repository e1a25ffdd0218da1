//! Reads the numbers a gold writes, so that golds are compared by value: digit runs with `,`
//! thousands separators and `.` decimals, `k`/`M`/`B` and `thousand`/`million`/`billion`, and a
//! dotted version or irregular commas kept as text.

#[derive(Debug, Clone, PartialEq)]
pub enum NumberKey {
    Value(f64),
    /// A dotted version such as `2.3.1`, or digits with irregular commas.
    Text(String),
}

impl NumberKey {
    pub fn same(&self, other: &NumberKey) -> bool {
        match (self, other) {
            (NumberKey::Value(a), NumberKey::Value(b)) => {
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
            }
            (NumberKey::Text(a), NumberKey::Text(b)) => a == b,
            _ => false,
        }
    }
}

/// The numbers written in `text`: digit runs with `,` thousands separators and `.` decimals,
/// scaled by a following `k`/`K`, `M`, `B`/`bn`, `thousand`, `million` or `billion`.
pub fn numbers_in(text: &str) -> Vec<NumberKey> {
    // Digits, `,` and `.` are ASCII, so reading bytes finds what reading characters does and
    // every cut falls on a character boundary.
    let bytes = text.as_bytes();
    let digit_at = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_digit);
    let mut numbers = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !digit_at(at) {
            at += 1;
            continue;
        }
        let start = at;
        while digit_at(at) || (matches!(bytes.get(at), Some(b',' | b'.')) && digit_at(at + 1)) {
            at += 1;
        }
        let raw = text.get(start..at).unwrap_or_default();
        let rest = text.get(at..).unwrap_or_default();
        numbers.push(number_key(raw, magnitude(rest)));
    }
    numbers
}

fn number_key(raw: &str, scale: f64) -> NumberKey {
    let plain = if thousands_grouped(raw) {
        raw.replace(',', "")
    } else {
        raw.to_string()
    };
    match plain.parse::<f64>() {
        Ok(value) if !plain.contains(',') => NumberKey::Value(value * scale),
        _ => NumberKey::Text(plain),
    }
}

/// `1,250` and `12,345,678.9`: one to three digits, then groups of exactly three.
fn thousands_grouped(raw: &str) -> bool {
    let integer = raw.split('.').next().unwrap_or_default();
    let mut groups = integer.split(',');
    let head_ok = groups
        .next()
        .is_some_and(|head| (1..=3).contains(&head.len()));
    head_ok && raw.contains(',') && groups.all(|group| group.len() == 3)
}

fn magnitude(after_number: &str) -> f64 {
    let spaced = after_number.trim_start_matches(' ');
    let letters = spaced.bytes().take_while(u8::is_ascii_alphabetic).count();
    let word = spaced.get(..letters).unwrap_or_default();
    let attached = !after_number.starts_with(' ');
    let named = |name: &str| word.eq_ignore_ascii_case(name);
    match word {
        "k" | "K" if attached => 1e3,
        "M" if attached => 1e6,
        "B" | "bn" if attached => 1e9,
        _ if named("thousand") => 1e3,
        _ if named("million") => 1e6,
        _ if named("billion") => 1e9,
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `numbers_in` as it was before it read bytes: over a copy of the text's characters.
    fn numbers_in_by_chars(text: &str) -> Vec<NumberKey> {
        let chars: Vec<char> = text.chars().collect();
        let digit_at = |at: usize| chars.get(at).is_some_and(char::is_ascii_digit);
        let mut numbers = Vec::new();
        let mut at = 0;
        while at < chars.len() {
            if !digit_at(at) {
                at += 1;
                continue;
            }
            let start = at;
            while digit_at(at)
                || (chars.get(at).is_some_and(|c| *c == ',' || *c == '.') && digit_at(at + 1))
            {
                at += 1;
            }
            let raw: String = chars.get(start..at).unwrap_or_default().iter().collect();
            let rest: String = chars.get(at..).unwrap_or_default().iter().collect();
            numbers.push(number_key(&raw, magnitude_of_a_copy(&rest)));
        }
        numbers
    }

    /// `magnitude` as it was before it read the word in place.
    fn magnitude_of_a_copy(after_number: &str) -> f64 {
        let word: String = after_number
            .trim_start_matches(' ')
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        let attached = !after_number.starts_with(' ');
        match word.as_str() {
            "k" | "K" if attached => 1e3,
            "M" if attached => 1e6,
            "B" | "bn" if attached => 1e9,
            _ => match word.to_ascii_lowercase().as_str() {
                "thousand" => 1e3,
                "million" => 1e6,
                "billion" => 1e9,
                _ => 1.0,
            },
        }
    }

    use proptest::prelude::*;

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn numbers_in_reads_what_reading_characters_read(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    "[0-9]{1,4}",
                    proptest::sample::select(vec![
                        ",", ".", " ", "k", "K", "M", "B", "bn", " Thousand", " million",
                        "BILLION", "é", "٣", "１", "$", "%", "v",
                    ])
                    .prop_map(str::to_string),
                    any::<char>().prop_map(String::from),
                ],
                0..10,
            ),
        ) {
            let text: String = pieces.concat();
            proptest::prop_assert_eq!(numbers_in(&text), numbers_in_by_chars(&text), "{:?}", text);
        }
    }
}
