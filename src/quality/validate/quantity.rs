//! Reads the quantities a gold or a question writes, so that golds are compared by value: numbers
//! (thousands separators, decimals, `k`/`M`/`B` and `thousand`/`million`/`billion`, a dotted
//! version kept as text), units of time with their lengths, and times of day on the 12- and
//! 24-hour clock.

#[derive(Debug, Clone, PartialEq)]
pub enum NumberKey {
    Value(f64),
    /// A dotted version such as `2.3.1`, or digits with irregular commas.
    Text(String),
}

impl NumberKey {
    pub fn same(&self, other: &NumberKey) -> bool {
        match (self, other) {
            (NumberKey::Value(a), NumberKey::Value(b)) => same_value(*a, *b),
            (NumberKey::Text(a), NumberKey::Text(b)) => a == b,
            _ => false,
        }
    }

    /// The number as a reader would write it (`5`, `0.25`, `2.3.1`).
    pub fn written(&self) -> String {
        match self {
            NumberKey::Value(value) => value.to_string(),
            NumberKey::Text(text) => text.clone(),
        }
    }
}

pub fn same_value(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A unit of time a gold or a question names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl TimeUnit {
    /// The unit a normalised word spells (`hours`, `hr`, `min`).
    pub fn of_word(word: &str) -> Option<TimeUnit> {
        Some(match word {
            "ms" | "millisecond" | "milliseconds" => TimeUnit::Millisecond,
            "s" | "sec" | "secs" | "second" | "seconds" => TimeUnit::Second,
            "min" | "mins" | "minute" | "minutes" => TimeUnit::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" => TimeUnit::Hour,
            "day" | "days" => TimeUnit::Day,
            "week" | "weeks" => TimeUnit::Week,
            "month" | "months" => TimeUnit::Month,
            "yr" | "yrs" | "year" | "years" => TimeUnit::Year,
            _ => return None,
        })
    }

    /// The unit a normalised token names, as a word (`hours`) or after its number (`72h`).
    pub fn of_token(token: &str) -> Option<TimeUnit> {
        let suffix = token.trim_start_matches(|c: char| c.is_ascii_digit());
        TimeUnit::of_word(suffix).filter(|_| !suffix.is_empty())
    }

    pub fn plural(self) -> &'static str {
        match self {
            TimeUnit::Millisecond => "milliseconds",
            TimeUnit::Second => "seconds",
            TimeUnit::Minute => "minutes",
            TimeUnit::Hour => "hours",
            TimeUnit::Day => "days",
            TimeUnit::Week => "weeks",
            TimeUnit::Month => "months",
            TimeUnit::Year => "years",
        }
    }

    /// Its length in seconds: a month and a year by the mean Gregorian calendar.
    pub fn seconds(self) -> f64 {
        const DAY: f64 = 86_400.0;
        match self {
            TimeUnit::Millisecond => 0.001,
            TimeUnit::Second => 1.0,
            TimeUnit::Minute => 60.0,
            TimeUnit::Hour => 3_600.0,
            TimeUnit::Day => DAY,
            TimeUnit::Week => 7.0 * DAY,
            TimeUnit::Month => 365.2425 / 12.0 * DAY,
            TimeUnit::Year => 365.2425 * DAY,
        }
    }

    /// A month or a year: not a whole number of days, so it equals days or weeks only roughly.
    pub fn is_calendar(self) -> bool {
        matches!(self, TimeUnit::Month | TimeUnit::Year)
    }
}

/// A time of day, in minutes after midnight, and whether it was written with am or pm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub minutes: u32,
    pub meridiem: bool,
}

/// The one time of day written in `gold` (`15:30 ET`, `3:30 pm`, `5 p.m.`), if it holds exactly
/// one: an hour of one or two digits with `:` and two digits of minutes, or with am or pm.
pub fn clock_time(gold: &str) -> Option<Clock> {
    let bytes = gold.as_bytes();
    let digits_from = |at: usize| {
        bytes.get(at..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut found = None;
    let mut at = 0;
    while at < bytes.len() {
        let starts_number = bytes.get(at).is_some_and(u8::is_ascii_digit)
            && at
                .checked_sub(1)
                .and_then(|before| bytes.get(before))
                .is_none_or(|b| !b.is_ascii_digit() && !matches!(b, b'.' | b':' | b','));
        if !starts_number {
            at += 1;
            continue;
        }
        let hour_digits = digits_from(at);
        let mut end = at + hour_digits;
        let minutes = (bytes.get(end) == Some(&b':') && digits_from(end + 1) == 2)
            .then(|| {
                end += 3;
                parse_digits(bytes.get(end - 2..end))
            })
            .flatten();
        let meridiem = meridiem_at(bytes.get(end..).unwrap_or_default());
        let hour = parse_digits(bytes.get(at..at + hour_digits));
        at += hour_digits;
        if (minutes.is_none() && meridiem.is_none()) || hour_digits > 2 {
            continue;
        }
        let (Some(hour), minute) = (hour, minutes.unwrap_or(0)) else {
            continue;
        };
        let hour = match meridiem {
            Some(_) if !(1..=12).contains(&hour) => continue,
            Some(pm) => hour % 12 + if pm { 12 } else { 0 },
            None => hour,
        };
        if hour > 23 || minute > 59 || found.is_some() {
            return None;
        }
        found = Some(Clock {
            minutes: hour * 60 + minute,
            meridiem: meridiem.is_some(),
        });
    }
    found
}

fn parse_digits(digits: Option<&[u8]>) -> Option<u32> {
    std::str::from_utf8(digits?).ok()?.parse().ok()
}

/// `Some(true)` for pm and `Some(false)` for am when `after` (what follows a time) opens with
/// one as a word of its own: `pm`, ` PM`, ` p.m.`.
fn meridiem_at(after: &[u8]) -> Option<bool> {
    let spaces = after.iter().take_while(|b| **b == b' ').count();
    let word = after.get(spaces..)?;
    let letter = |at: usize| word.get(at).map(u8::to_ascii_lowercase);
    let pm = match letter(0)? {
        b'a' => false,
        b'p' => true,
        _ => return None,
    };
    let length = match (letter(1), letter(2)) {
        (Some(b'm'), _) => 2,
        (Some(b'.'), Some(b'm')) => 3,
        _ => return None,
    };
    let length = if word.get(length) == Some(&b'.') {
        length + 1
    } else {
        length
    };
    word.get(length)
        .is_none_or(|b| !b.is_ascii_alphanumeric())
        .then_some(pm)
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

    #[test]
    fn times_of_day_are_read_on_the_12_and_the_24_hour_clock() {
        let read = |gold: &str| clock_time(gold).map(|clock| (clock.minutes, clock.meridiem));
        assert_eq!(read("15:30 ET"), Some((930, false)));
        assert_eq!(read("3:30 pm"), Some((930, true)));
        assert_eq!(read("5 p.m."), Some((1020, true)));
        assert_eq!(read("12:05 AM"), Some((5, true)));
        assert_eq!(read("12 pm"), Some((720, true)));
        for none in [
            "1530",
            "2 pods",
            "v1.25",
            "25:00",
            "9:75",
            "13 pm",
            "5 amps",
            "10:00 to 11:00",
        ] {
            assert_eq!(read(none), None, "{none}");
        }
    }

    #[test]
    fn time_units_are_read_as_words_or_after_their_number() {
        assert_eq!(TimeUnit::of_token("hours"), Some(TimeUnit::Hour));
        assert_eq!(TimeUnit::of_token("72h"), Some(TimeUnit::Hour));
        assert_eq!(TimeUnit::of_token("100ms"), Some(TimeUnit::Millisecond));
        for none in ["72", "s3", "2fa", "10m", "region"] {
            assert_eq!(TimeUnit::of_token(none), None, "{none}");
        }
    }
}
