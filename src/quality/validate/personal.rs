//! The content rules forbid personal data in an item, invented or not: a model asked for a
//! customer record writes a name beside an email address, a phone number, a street address or
//! a payment card number, and a released benchmark must not carry them.

use super::{reject, Reason, Rejection};
use crate::stages::item::quote;

/// Street names end in one of these (`123 Elm St`, `4 Harbour Road`).
const STREET_SUFFIXES: &[&str] = &[
    "St",
    "Street",
    "Ave",
    "Avenue",
    "Rd",
    "Road",
    "Blvd",
    "Boulevard",
    "Lane",
    "Ln",
    "Drive",
    "Dr",
    "Way",
    "Court",
    "Ct",
];
/// Words of a street's name between its number and its suffix.
const STREET_NAME_MAX_WORDS: usize = 3;

/// Digits in a payment card number, as one run or in groups of four.
const CARD_DIGITS: usize = 16;

/// Rejects a prompt that holds an email address, a phone number, a street address or a payment
/// card number.
pub fn check_personal_data(prompt: &str) -> Result<(), Rejection> {
    let found = email_address(prompt)
        .map(|text| ("an email address", text))
        .or_else(|| phone_number(prompt).map(|text| ("a phone number", text)))
        .or_else(|| street_address(prompt).map(|text| ("a street address", text)))
        .or_else(|| card_number(prompt).map(|text| ("a payment card number", text)));
    match found {
        Some((kind, text)) => reject(
            Reason::PersonalData,
            format!("the prompt holds {kind}, {:?}", quote(text)),
        ),
        None => Ok(()),
    }
}

/// `name@domain.tld`: a local part, and a domain of letters, digits, dots and hyphens with a
/// dot before a top-level name of letters (so `@app.route` and `git@host:org/repo` are not).
fn email_address(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || "<>()[]\"',;".contains(c))
        .map(|token| token.trim_end_matches(['.', ':', '!', '?']))
        .find(|token| {
            let Some((local, domain)) = token.split_once('@') else {
                return false;
            };
            let tld = domain.rsplit_once('.').map(|(_, tld)| tld);
            !local.is_empty()
                && local
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
                && domain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
                && tld.is_some_and(|tld| {
                    tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
                })
        })
}

/// Sixteen digits that no other digit touches, as one run (`1234567890123456`) or in four
/// groups of four split by spaces or hyphens (`4111 1111 1111 1111`): a payment card's number,
/// which the templates forbid whether or not it is a real one.
fn card_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let digit_at = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_digit);
    (0..bytes.len()).find_map(|start| {
        if !digit_at(start) || (start > 0 && digit_at(start - 1)) {
            return None;
        }
        let run = (start..).take_while(|at| digit_at(*at)).count();
        let end = match run {
            CARD_DIGITS => start + CARD_DIGITS,
            4 => {
                let grouped = (1..4).all(|group| {
                    let at = start + group * 5;
                    matches!(bytes.get(at - 1), Some(b' ' | b'-')) && (at..at + 4).all(digit_at)
                });
                let end = start + 19;
                (grouped && !digit_at(end)).then_some(end)?
            }
            _ => return None,
        };
        text.get(start..end)
    })
}

/// A North American style number, `555-123-4567`, `(555) 123-4567` or `555.123.4567`, that no
/// other digit touches.
fn phone_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|start| {
        let after_digit = start > 0 && bytes[start - 1].is_ascii_digit();
        let end = (!after_digit).then(|| phone_at(bytes, start)).flatten()?;
        let before_digit = bytes.get(end).is_some_and(u8::is_ascii_digit);
        (!before_digit).then(|| &text[start..end])
    })
}

/// Where a phone number that starts at `at` ends.
fn phone_at(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = |from: usize, n: usize| {
        (bytes.len() >= from + n && bytes[from..from + n].iter().all(u8::is_ascii_digit))
            .then_some(from + n)
    };
    let separator =
        |from: usize| matches!(bytes.get(from), Some(b'-' | b'.' | b' ')).then_some(from + 1);
    let area_end = if bytes.get(at) == Some(&b'(') {
        let closed = digits(at + 1, 3)?;
        (bytes.get(closed) == Some(&b')')).then_some(closed + 1)?;
        let spaced = closed + 1;
        if bytes.get(spaced) == Some(&b' ') {
            spaced + 1
        } else {
            spaced
        }
    } else {
        separator(digits(at, 3)?)?
    };
    let exchange_end = separator(digits(area_end, 3)?)?;
    digits(exchange_end, 4)
}

/// A house number, one to three capitalised words of a street name and a street suffix:
/// `123 Elm St`, `42 North Harbour Road`.
fn street_address(text: &str) -> Option<&str> {
    let words: Vec<(usize, &str)> = text
        .split_whitespace()
        .map(|word| (word.as_ptr() as usize - text.as_ptr() as usize, word))
        .collect();
    words.iter().enumerate().find_map(|(at, &(start, number))| {
        let is_number =
            (1..=5).contains(&number.len()) && number.bytes().all(|b| b.is_ascii_digit());
        if !is_number {
            return None;
        }
        let rest = words.get(at + 1..)?;
        let named = rest
            .iter()
            .take(STREET_NAME_MAX_WORDS)
            .take_while(|(_, word)| word.starts_with(|c: char| c.is_ascii_uppercase()))
            .count();
        (1..=named).find_map(|name_words| {
            let &(suffix_start, suffix) = rest.get(name_words)?;
            let bare = suffix.trim_end_matches(['.', ',']);
            STREET_SUFFIXES
                .contains(&bare)
                .then(|| &text[start..suffix_start + bare.len()])
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory item the 1.5B author wrote in a measured main job, which the gate and the panel
    /// passed: an invented customer with a placeholder street address.
    const CUSTOMER_RECORD: &str = "Memory:\n- customer: Joes Doe (E-Commerce customer)\n\
        - billing_plan: Premium\n- shipping_region: EU\n- payment_method: Credit card\n\
        - billing_cycle: Bi-Yearly\n- shipping_address: 123 Elm St, Anytown, USA\n\
        - payment_due: 2023-04-30\n- shipping_date: 2023-04-10\n\n\
        Question: How often does this customer get billed?";

    fn found(prompt: &str) -> Option<String> {
        check_personal_data(prompt).err().map(|r| r.detail)
    }

    /// The main job's release (seed 20261129) held this memory item: a bank account with a
    /// card-style number and an expiration date.
    #[test]
    fn a_sixteen_digit_card_number_is_personal_data() {
        let prompt = "Memory:\n- account: MyBank (Bank of America)\n- currency: USD\n- payment_method: Visa\n- account_number: 1234567890123456\n- expiration_date: 2024-12-31\n- account_type: checking\n- account_status: active\n\nQuestion: What is the account status of MyBank's checking account?";
        assert_eq!(
            found(prompt),
            Some("the prompt holds a payment card number, \"1234567890123456\"".to_string())
        );
        assert!(found("- card: 4111-1111-1111-1111").is_some());
        assert!(found("- card: 4111 1111 1111 1111").is_some());
        for other in [
            "- customer_id: 12345678901234567890",
            "- policy_number: ABC1234567890",
            "- account_id: 1234567890",
            "- card: 4111 1111 1111 11112",
        ] {
            assert_eq!(found(other), None, "{other}");
        }
    }

    #[test]
    fn emails_phone_numbers_and_street_addresses_are_personal_data() {
        for (prompt, kind) in [
            (CUSTOMER_RECORD, "a street address, \"123 Elm St\""),
            (
                "- policyholder_email: johndoe@greenfield.com",
                "an email address",
            ),
            ("- policyholder_phone: 555-123-4567", "a phone number"),
            ("Call (800) 555-1234 for support.", "a phone number"),
            (
                "Ship it to 42 North Harbour Road, Leeds.",
                "a street address",
            ),
        ] {
            let detail = found(prompt).unwrap_or_default();
            assert!(detail.contains(kind), "{prompt:?}: {detail:?}");
        }
    }

    #[test]
    fn code_versions_dates_and_addresses_of_machines_are_not() {
        for prompt in [
            "@app.route(\"/orders\") fails; git@github.com:org/repo.git clones fine.",
            "Release 2023-04-30 moved the API to 10.0.12.4 on port 8443.",
            "The cluster grew from 5 to 10 brokers; 2 TB each, replication factor 3.",
            "Set max_connections = 300 and retry 3 times within 10 minutes.",
            "Version 1.2.3 of the SDK, build 555-1234, is current.",
        ] {
            assert_eq!(found(prompt), None, "{prompt:?}");
        }
    }
}
