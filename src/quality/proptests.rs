//! Property tests (proptest) for the parsers that read untrusted text: model replies, numeric
//! answers, verifier expressions, item fields and item structure. Failures proptest finds are kept as a
//! regression corpus in `proptest-regressions/` and replayed first on every run.

use crate::quality::{expr, numeric, validate};
use crate::stages::item::Category;
use crate::stages::reply;
use proptest::prelude::*;
use serde_json::{json, Value};

fn item() -> impl Strategy<Value = Value> {
    (
        "[A-Za-z0-9 ,.?%$-]{1,80}",
        prop::collection::vec("[A-Za-z0-9 .,$%-]{1,20}", 1..4),
    )
        .prop_map(|(prompt, golds)| json!({"prompt": prompt, "golds": golds}))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_reply_parser_never_panics(text in any::<String>()) {
        let _ = reply::parse_items(&text);
    }

    #[test]
    fn items_are_found_inside_prose_fences_and_think_blocks(
        items in prop::collection::vec(item(), 1..5),
        before in "[A-Za-z .\n]{0,60}",
        after in "[A-Za-z .\n]{0,60}",
        wrapping in 0usize..3,
    ) {
        let json = json!({"items": items}).to_string();
        let content = match wrapping {
            0 => format!("{before}{json}{after}"),
            1 => format!("{before}\n```json\n{json}\n```\n{after}"),
            _ => format!("<think>{before}</think>{json}"),
        };
        let parsed = reply::parse_items(&content).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed.items, items);
    }

    #[test]
    fn raw_newlines_and_tabs_inside_strings_are_read_as_escapes(
        items in prop::collection::vec(item(), 1..4),
        breaks in prop::collection::vec(0usize..80, 1..4),
    ) {
        let items: Vec<Value> = items
            .into_iter()
            .map(|mut item| {
                let prompt = item["prompt"].as_str().unwrap_or_default().to_string();
                let mut with_breaks = String::new();
                for (i, c) in prompt.chars().enumerate() {
                    if breaks.contains(&i) { with_breaks.push(if i % 2 == 0 { '\n' } else { '\t' }); }
                    with_breaks.push(c);
                }
                item["prompt"] = Value::String(with_breaks);
                item
            })
            .collect();
        let strict = json!({"items": items}).to_string();
        let raw = strict.replace("\\n", "\n").replace("\\t", "\t");
        let parsed = reply::parse_items(&raw).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed.items, items);
    }

    #[test]
    fn norm_matches_the_cards_definition_for_any_text(text in any::<String>()) {
        let card: String = text
            .chars()
            .flat_map(char::to_lowercase)
            .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == ' ' { c } else { ' ' })
            .collect();
        prop_assert_eq!(crate::quality::grade::norm(&text), card);
    }

    #[test]
    fn item_validation_never_panics(value in any_json(), category in 0usize..10) {
        let category = Category::ALL[category];
        if let Ok(fields) = validate::fields_from_value(category, &value) {
            let _ = validate::check_item(category, fields, &validate::Rules::default());
        }
    }

    #[test]
    fn structure_recognition_never_panics_on_structure_shaped_text(
        pieces in prop::collection::vec(prop::sample::select(vec![
            "Customer: ", "**Agent:** ", "[User]: ", "Q: ", "Question:", "\n", "\n\n", "[Doc 1] ",
            "Source A (wiki): ", "## ", "1. ", "- ", "• ", "```", "(", ")", "]", "{", "?", "…",
            "What is it", "Name the vendor.", "key: value", "é", "\t", " ", "Doc 7", "**",
        ]), 0..40),
        category in 0usize..10,
    ) {
        let category = Category::ALL[category];
        let prompt: String = pieces.concat();
        let _ = validate::structure(category, &prompt, &validate::Rules::default());
        let fields = validate::ItemFields {
            prompt,
            golds: vec!["400 days".into()],
            durable: Some(vec!["400 days".into()]),
            stale: Some(Vec::new()),
        };
        let _ = validate::check_item(category, fields, &validate::Rules::default());
    }

    #[test]
    fn numeric_parsing_never_panics(text in any::<String>()) {
        if let Some(q) = numeric::parse_quantity(&text) {
            prop_assert!(q.value.is_finite());
        }
        let _ = numeric::extract_answer(&text);
        let _ = numeric::extract_expr(&text);
        let _ = numeric::is_rate_question(&text);
    }

    #[test]
    fn formatted_amounts_parse_back_and_their_golds_grade_them(cents in 0u64..10_000_000_000) {
        let value = cents as f64 / 100.0;
        let whole = cents / 100;
        let grouped = {
            let digits = whole.to_string();
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 { out.push(','); }
                out.push(c);
            }
            out
        };
        let text = format!("${grouped}.{:02}", cents % 100);
        let q = numeric::parse_quantity(&text).ok_or_else(|| TestCaseError::fail(format!("{text} did not parse")))?;
        prop_assert!((q.value - value).abs() < 0.005, "{} parsed as {}", text, q.value);
        prop_assert!(numeric::agree(&q, &q, false));
        let golds = numeric::canonical_golds(&q);
        prop_assert!(crate::quality::grade::graded(&text, &golds), "{:?} do not grade {}", golds, text);
    }

    #[test]
    fn the_expression_evaluator_never_panics(text in any::<String>()) {
        if let Ok(v) = expr::eval(&text) {
            prop_assert!(v.is_finite());
        }
    }

    #[test]
    fn expressions_evaluate_like_the_arithmetic_they_spell(a in -1000i64..1000, b in 1i64..1000, c in -50i64..50) {
        let text = format!("({a} + {b}) * {c} - {a} / {b}");
        let expected = (a + b) as f64 * c as f64 - a as f64 / b as f64;
        let got = expr::eval(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!((got - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{} = {}, not {}", text, got, expected);
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("prompt".to_string()),
                    Just("golds".to_string()),
                    Just("durable".to_string()),
                    Just("stale".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
