//! Finds every quantity written in a text, with its byte range. It is the one reader of how
//! numbers, signs, multipliers, units and approximation marks are written, so `parse` (the one
//! quantity a text means) and `answer_line` (a reply's last number) read numbers alike.
//!
//! What it reads:
//! - digits with optional `,` thousands groups (exactly three digits each), a decimal part, an
//!   exponent (`1.5e6`), a leading `.5`; `a/b` fractions and `a b/c` mixed numbers (proper
//!   fraction, one space); a sign `-`, `−` or `+` when it does not join two words or numbers
//!   (`10-20` is a range, `gpt-4` an identifier, `(-17)` a negative number).
//! - multipliers: attached `k`/`K` (×10³), `M` (×10⁶), `B`/`bn` (×10⁹); spaced words `thousand`,
//!   `million`, `billion`, `trillion`.
//! - units after the number (attached, after spaces, or after a hyphen for words): `%`,
//!   `percent`, `per cent`, `pct`, `percentage point(s)` → Percent; currency symbols before or after
//!   the number (`$ € £ ¥ ₹`), currency codes before or after it and currency words after it
//!   → Currency with the ISO code as `unit_word`; duration words → Duration (word kept as written,
//!   lower-cased); a list of count nouns → Count (word kept); anything else → Plain.
//! - `~ ≈ ≃ ∼`, `approximately`, `approx(.)`, `about`, `around`, `roughly`, `circa`, `ca.`,
//!   `nearly`, `almost` just before the number set `approximate`.
//! - Not numbers: digits glued to a letter on the left (`v2`, `H100`, `x86`), dotted runs
//!   (`1.2.3`, `10.0.0.1`), ordinals (`2nd`), slash chains (`12/31/2024`), colon pairs (`2:30`,
//!   `3:1`: a clock time or a ratio, too ambiguous to guess), `x/0`, values that overflow f64.
//! - Read as two numbers: a decimal comma (`1,5`) and thousands grouped by spaces (`1 234`).

use super::vocabulary::{
    currency_by_code, currency_by_symbol, currency_by_word, fold_duration, is_count_noun,
    APPROXIMATE_ABBREVIATIONS, APPROXIMATE_MARKS, APPROXIMATE_WORDS, MARKDOWN, ORDINAL_SUFFIXES,
};
use super::{Quantity, UnitClass};

/// Every quantity in `text`, in text order.
pub(super) fn quantities(text: &str) -> Vec<Found> {
    Scanner::new(text).all()
}

/// A quantity found in a text, with its byte range (prefixes and unit included).
pub(super) struct Found {
    pub(super) quantity: Quantity,
    pub(super) start: usize,
    pub(super) end: usize,
}

struct Mantissa {
    value: f64,
    end: usize,
    /// Only digits: may start a fraction or mixed number.
    whole_digits: bool,
}

struct Prefix {
    negative: bool,
    currency: Option<&'static str>,
    approximate: bool,
    start: usize,
}

struct Suffix {
    unit: Option<(UnitClass, Option<String>)>,
    end: usize,
}

/// Walks a text by char index; every rejection returns the index to resume from, always past
/// the start, so scanning ends on any input.
struct Scanner<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
}

fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{a0}' | '\u{202f}')
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            chars: text.char_indices().collect(),
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).map(|&(_, c)| c)
    }

    fn before(&self, i: usize) -> Option<char> {
        i.checked_sub(1).and_then(|j| self.at(j))
    }

    fn is(&self, i: usize, predicate: impl Fn(char) -> bool) -> bool {
        self.at(i).is_some_and(predicate)
    }

    fn offset(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.text.len(), |&(at, _)| at)
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.text
            .get(self.offset(from)..self.offset(to))
            .unwrap_or_default()
    }

    /// First index at or after `i` whose char fails `predicate`.
    fn run_end(&self, i: usize, predicate: impl Fn(char) -> bool) -> usize {
        let mut j = i;
        while self.is(j, &predicate) {
            j += 1;
        }
        j
    }

    /// First index of the run of `predicate` chars that ends just before `i`.
    fn run_start(&self, i: usize, predicate: impl Fn(char) -> bool) -> usize {
        let mut j = i;
        while self.before(j).is_some_and(&predicate) {
            j -= 1;
        }
        j
    }

    fn all(&self) -> Vec<Found> {
        let mut found = Vec::new();
        let mut i = 0;
        while i < self.chars.len() {
            if !self.starts_number(i) {
                i += 1;
                continue;
            }
            i = match self.quantity_at(i) {
                Ok((quantity, next)) => {
                    found.push(quantity);
                    next.max(i + 1)
                }
                Err(resume) => resume.max(i + 1),
            };
        }
        found
    }

    fn starts_number(&self, i: usize) -> bool {
        let after_digit = |j: usize| self.before(j).is_some_and(is_digit);
        match self.at(i) {
            Some(c) if c.is_ascii_digit() => {
                let continues_decimal = self.before(i) == Some('.') && after_digit(i - 1);
                !(after_digit(i) || continues_decimal)
            }
            Some('.') => self.is(i + 1, is_digit) && !after_digit(i),
            _ => false,
        }
    }

    fn quantity_at(&self, i: usize) -> Result<(Found, usize), usize> {
        let glued_left = self
            .before(i)
            .is_some_and(|c| c.is_alphabetic() || c == '_');
        let hyphenated = matches!(self.before(i), Some('-' | '−'))
            && self.before(i - 1).is_some_and(char::is_alphabetic);
        if glued_left || hyphenated {
            return Err(self.run_end(i, |c| c.is_alphanumeric() || matches!(c, '_' | '.')));
        }
        let mantissa = self.mantissa(i)?;
        let (value, after_number) = self.fraction(i, &mantissa)?;
        if self.at(after_number) == Some(':') && self.is(after_number + 1, is_digit) {
            return Err(self.run_end(i, |c| c.is_ascii_digit() || matches!(c, ':' | '.')));
        }
        let (multiplier, after_multiplier) = self.multiplier(after_number);
        let suffix = self.unit_suffix(after_multiplier)?;
        let prefix = self.prefix(i);
        let magnitude = value * multiplier;
        let value = if prefix.negative {
            -magnitude
        } else {
            magnitude
        };
        if !value.is_finite() {
            return Err(suffix.end);
        }
        let (unit, unit_word) = match (prefix.currency, suffix.unit) {
            (Some(code), _) => (UnitClass::Currency, Some(code.to_string())),
            (None, Some(unit)) => unit,
            (None, None) => (UnitClass::Plain, None),
        };
        let found = Found {
            quantity: Quantity {
                value,
                unit,
                unit_word,
                approximate: prefix.approximate,
            },
            start: self.offset(prefix.start),
            end: self.offset(suffix.end),
        };
        Ok((found, suffix.end))
    }

    fn mantissa(&self, i: usize) -> Result<Mantissa, usize> {
        let integer_end = self.run_end(i, is_digit);
        let mut literal = if integer_end == i {
            "0".to_string()
        } else {
            self.slice(i, integer_end).to_string()
        };
        let mut j = integer_end;
        let mut whole_digits = integer_end > i;
        if (1..=3).contains(&(integer_end - i)) {
            while self.at(j) == Some(',') && self.run_end(j + 1, is_digit) == j + 4 {
                literal.push_str(self.slice(j + 1, j + 4));
                j += 4;
                whole_digits = false;
            }
        }
        if self.at(j) == Some('.') && self.is(j + 1, is_digit) {
            let decimals_end = self.run_end(j + 1, is_digit);
            literal.push_str(self.slice(j, decimals_end));
            j = decimals_end;
            whole_digits = false;
            if self.at(j) == Some('.') && self.is(j + 1, is_digit) {
                return Err(self.run_end(j, |c| c.is_ascii_digit() || c == '.'));
            }
        }
        if self.is(j, |c| matches!(c, 'e' | 'E')) {
            let digits = if self.is(j + 1, |c| matches!(c, '+' | '-')) {
                j + 2
            } else {
                j + 1
            };
            if self.is(digits, is_digit) {
                let exponent_end = self.run_end(digits, is_digit);
                literal.push('e');
                literal.push_str(self.slice(j + 1, exponent_end));
                j = exponent_end;
                whole_digits = false;
            }
        }
        let value = literal.parse::<f64>().map_err(|_| j)?;
        Ok(Mantissa {
            value,
            end: j,
            whole_digits,
        })
    }

    /// `a/b` at `i`: numerator, denominator (non-zero) and end; `None` when not a lone fraction.
    fn simple_fraction(&self, i: usize) -> Option<(f64, f64, usize)> {
        let numerator_end = self.run_end(i, is_digit);
        if numerator_end == i || self.at(numerator_end) != Some('/') {
            return None;
        }
        let denominator_end = self.run_end(numerator_end + 1, is_digit);
        if denominator_end == numerator_end + 1 || self.at(denominator_end) == Some('/') {
            return None;
        }
        let numerator = self.slice(i, numerator_end).parse::<f64>().ok()?;
        let denominator = self
            .slice(numerator_end + 1, denominator_end)
            .parse::<f64>()
            .ok()?;
        (denominator != 0.0).then_some((numerator, denominator, denominator_end))
    }

    /// The value and end of the number at `i`, reading `a/b` and `a b/c` after plain digits.
    fn fraction(&self, i: usize, mantissa: &Mantissa) -> Result<(f64, usize), usize> {
        let j = mantissa.end;
        if !mantissa.whole_digits {
            return Ok((mantissa.value, j));
        }
        if self.at(j) == Some(' ') && self.is(j + 1, is_digit) {
            if let Some((numerator, denominator, end)) = self.simple_fraction(j + 1) {
                if numerator < denominator {
                    return Ok((mantissa.value + numerator / denominator, end));
                }
            }
        }
        if self.at(j) == Some('/') && self.is(j + 1, is_digit) {
            return match self.simple_fraction(i) {
                Some((numerator, denominator, end)) => Ok((numerator / denominator, end)),
                None => Err(self.run_end(i, |c| c.is_ascii_digit() || c == '/')),
            };
        }
        Ok((mantissa.value, j))
    }

    fn multiplier(&self, j: usize) -> (f64, usize) {
        let attached_end = self.run_end(j, is_letter);
        if attached_end > j {
            let factor = match self.slice(j, attached_end) {
                "k" | "K" => 1e3,
                "M" => 1e6,
                "B" | "bn" | "Bn" => 1e9,
                _ => return (1.0, j),
            };
            return (factor, attached_end);
        }
        let word_start = self.run_end(j, is_space);
        let word_end = self.run_end(word_start, is_letter);
        if word_start == j {
            return (1.0, j);
        }
        let factor = match self
            .slice(word_start, word_end)
            .to_ascii_lowercase()
            .as_str()
        {
            "thousand" => 1e3,
            "million" => 1e6,
            "billion" => 1e9,
            "trillion" => 1e12,
            _ => return (1.0, j),
        };
        (factor, word_end)
    }

    /// The spaced word right after `j` when it is one of `words`; its end.
    fn next_word_in(&self, j: usize, words: &[&str]) -> Option<usize> {
        let start = self.run_end(j, is_space);
        let end = self.run_end(start, is_letter);
        (start > j && words.contains(&self.slice(start, end).to_ascii_lowercase().as_str()))
            .then_some(end)
    }

    fn unit_suffix(&self, j: usize) -> Result<Suffix, usize> {
        let hyphen = self.at(j) == Some('-') && self.is(j + 1, is_letter);
        let start = if hyphen {
            j + 1
        } else {
            self.run_end(j, is_space)
        };
        let attached = start == j;
        let unit = |unit, word: Option<String>, end| {
            Ok(Suffix {
                unit: Some((unit, word)),
                end,
            })
        };
        let Some(c) = self.at(start) else {
            return Ok(Suffix { unit: None, end: j });
        };
        if !hyphen && c == '%' {
            return unit(UnitClass::Percent, None, start + 1);
        }
        if let Some(code) = currency_by_symbol(c).filter(|_| !hyphen) {
            return unit(UnitClass::Currency, Some(code.to_string()), start + 1);
        }
        if !c.is_ascii_alphabetic() {
            return Ok(Suffix { unit: None, end: j });
        }
        let word_end = self.run_end(start, is_letter);
        let word = self.slice(start, word_end).to_ascii_lowercase();
        let percent_end = match word.as_str() {
            "percent" | "percentage" | "pct" => Some(
                self.next_word_in(word_end, &["point", "points"])
                    .unwrap_or(word_end),
            ),
            "per" => self.next_word_in(word_end, &["cent"]),
            _ => None,
        };
        if let Some(end) = percent_end {
            return unit(UnitClass::Percent, None, end);
        }
        if let Some(code) = currency_by_word(&word) {
            return unit(UnitClass::Currency, Some(code.to_string()), word_end);
        }
        if fold_duration(&word).is_some() {
            return unit(UnitClass::Duration, Some(word), word_end);
        }
        if is_count_noun(&word) {
            return unit(UnitClass::Count, Some(word), word_end);
        }
        if attached && ORDINAL_SUFFIXES.contains(&word.as_str()) {
            return Err(word_end);
        }
        let end = if attached { word_end } else { j };
        Ok(Suffix { unit: None, end })
    }

    /// Sign, currency symbol or code, and approximation marker before the digits at `i`.
    fn prefix(&self, i: usize) -> Prefix {
        let mut k = i;
        let mut currency = self.before(k).and_then(currency_by_symbol);
        if currency.is_some() {
            k -= 1;
        }
        let mut negative = false;
        if let Some(sign @ ('-' | '−' | '+')) = self.before(k) {
            if !self.before(k - 1).is_some_and(char::is_alphanumeric) {
                negative = sign != '+';
                k -= 1;
            }
        }
        if currency.is_none() {
            currency = self.before(k).and_then(currency_by_symbol);
            if currency.is_some() {
                k -= 1;
            }
        }
        let spaces_start = self.run_start(k, is_space);
        if currency.is_none() && spaces_start < k {
            let word_start = self.run_start(spaces_start, is_letter);
            if let Some(code) = self.before(spaces_start).and_then(currency_by_symbol) {
                currency = Some(code);
                k = spaces_start - 1;
            } else if word_start < spaces_start {
                currency = currency_by_code(self.slice(word_start, spaces_start));
                if currency.is_some() {
                    k = word_start;
                }
            }
        }
        let (approximate, start) = self.approximation_before(k);
        Prefix {
            negative,
            currency,
            approximate,
            start,
        }
    }

    /// Whether an approximation marker (or word) stands just before `k`, and where it starts.
    fn approximation_before(&self, k: usize) -> (bool, usize) {
        let m = self.run_start(k, |c| c.is_whitespace() || MARKDOWN.contains(&c));
        match self.before(m) {
            Some(c) if APPROXIMATE_MARKS.contains(&c) => (true, m - 1),
            Some('.') => {
                let word_start = self.run_start(m - 1, is_letter);
                let word = self.slice(word_start, m - 1).to_ascii_lowercase();
                if APPROXIMATE_ABBREVIATIONS.contains(&word.as_str()) {
                    (true, word_start)
                } else {
                    (false, k)
                }
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let word_start = self.run_start(m, is_letter);
                let word = self.slice(word_start, m).to_ascii_lowercase();
                if APPROXIMATE_WORDS.contains(&word.as_str()) {
                    (true, word_start)
                } else {
                    (false, k)
                }
            }
            _ => (false, k),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::quality::numeric::tests::{q, quantity};
    use crate::quality::numeric::{parse_quantity, UnitClass};

    #[test]
    fn parses_every_documented_format() {
        let cases: [(&str, f64, UnitClass, Option<&str>); 31] = [
            ("12.5%", 12.5, UnitClass::Percent, None),
            ("12.5 %", 12.5, UnitClass::Percent, None),
            ("12.5 percent", 12.5, UnitClass::Percent, None),
            ("3 per cent", 3.0, UnitClass::Percent, None),
            ("2.5 percentage points", 2.5, UnitClass::Percent, None),
            ("43.2 minutes", 43.2, UnitClass::Duration, Some("minutes")),
            ("43.2min", 43.2, UnitClass::Duration, Some("min")),
            (
                "a 5-Minute window",
                5.0,
                UnitClass::Duration,
                Some("minute"),
            ),
            ("300ms", 300.0, UnitClass::Duration, Some("ms")),
            ("$1,234.50", 1234.5, UnitClass::Currency, Some("USD")),
            ("1,234.5 USD", 1234.5, UnitClass::Currency, Some("USD")),
            ("USD 1,234.50", 1234.5, UnitClass::Currency, Some("USD")),
            ("1234.50 dollars", 1234.5, UnitClass::Currency, Some("USD")),
            ("€99.90", 99.9, UnitClass::Currency, Some("EUR")),
            ("99.90 €", 99.9, UnitClass::Currency, Some("EUR")),
            ("-$5", -5.0, UnitClass::Currency, Some("USD")),
            ("$-5", -5.0, UnitClass::Currency, Some("USD")),
            ("$ 50", 50.0, UnitClass::Currency, Some("USD")),
            ("1.2k", 1200.0, UnitClass::Plain, None),
            ("1.5M", 1_500_000.0, UnitClass::Plain, None),
            ("$2B", 2e9, UnitClass::Currency, Some("USD")),
            (
                "1.2 million dollars",
                1_200_000.0,
                UnitClass::Currency,
                Some("USD"),
            ),
            ("3/4", 0.75, UnitClass::Plain, None),
            ("2 1/2", 2.5, UnitClass::Plain, None),
            ("-17", -17.0, UnitClass::Plain, None),
            ("−17", -17.0, UnitClass::Plain, None),
            ("(-17)", -17.0, UnitClass::Plain, None),
            ("1.5e6", 1_500_000.0, UnitClass::Plain, None),
            ("1,200 requests", 1200.0, UnitClass::Count, Some("requests")),
            ("12 servers", 12.0, UnitClass::Count, Some("servers")),
            ("42", 42.0, UnitClass::Plain, None),
        ];
        for (text, value, unit, word) in cases {
            assert_eq!(q(text), quantity(value, unit, word), "parsing {text:?}");
        }
    }

    #[test]
    fn approximation_markers() {
        for text in [
            "≈ 43",
            "~43",
            "approximately 43",
            "approx. 43",
            "about $43",
            "≈ **43**",
        ] {
            let parsed = q(text);
            assert!(parsed.approximate, "{text:?}");
            assert_eq!(parsed.value, 43.0, "{text:?}");
        }
        assert!(!q("43").approximate);
        assert!(!q("the 43").approximate);
    }

    #[test]
    fn ignores_identifiers_versions_and_ordinals() {
        assert_eq!(parse_quantity("v2 on H100 with x86"), None);
        assert_eq!(parse_quantity("version 1.2.3"), None);
        assert_eq!(parse_quantity("the 2nd"), None);
        assert_eq!(parse_quantity("gpt-4"), None);
        assert_eq!(parse_quantity("12/31/2024"), None);
        assert_eq!(parse_quantity("1/0"), None);
        assert_eq!(parse_quantity("no numbers here"), None);
        assert_eq!(parse_quantity(""), None);
        assert_eq!(parse_quantity("1e999"), None);
        assert_eq!(q("10-20").value, 10.0);
        assert_eq!(parse_quantity("2:30"), None);
        assert_eq!(parse_quantity("a 3:1 ratio"), None);
    }
}
