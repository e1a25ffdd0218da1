//! A JSON value read the way `serde_json::Value` reads it — the same nesting limit, the same
//! number range, the same string checks — without building it. Readers that want a few fields
//! of a large body skip the rest with [`Walked`], so they accept and refuse exactly the texts a
//! `Value` would, at a fraction of the allocations.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Any JSON value, walked and dropped. Unlike `serde::de::IgnoredAny`, which serde_json skips
/// without a depth limit or a number check, it goes through `deserialize_any` as a `Value` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked(pub Kind);

/// What a walked value was: the JSON types, as error messages name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    pub fn of(value: &serde_json::Value) -> Kind {
        use serde_json::Value;
        match value {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    /// "a string", "an array", … for error messages.
    pub fn described(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Walked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WalkVisitor).map(Walked)
    }
}

struct WalkVisitor;

impl<'de> Visitor<'de> for WalkVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Bool)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Number)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Number)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Number)
    }

    fn visit_str<E>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::String)
    }

    fn visit_none<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Kind, D::Error> {
        Walked::deserialize(deserializer).map(|walked| walked.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        while seq.next_element::<Walked>()?.is_some() {}
        Ok(Kind::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        match map.next_key::<Key<FirstKey>>()? {
            None => return Ok(Kind::Object),
            Some(Key(FirstKey::RawValueToken)) => return raw_value(map),
            Some(Key(FirstKey::Other)) => {
                map.next_value::<Walked>()?;
            }
        }
        while map.next_entry::<Walked, Walked>()?.is_some() {}
        Ok(Kind::Object)
    }
}

/// The key by which serde_json (with its `raw_value` feature, which this crate uses) marks a raw
/// value: a `Value` reads an object whose first key is this one as the JSON text in its string
/// value, and refuses it where that value is not a string of JSON.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// What a `Value` makes of an object's first key.
enum FirstKey {
    RawValueToken,
    Other,
}

impl KeyName for FirstKey {
    fn named(key: &str) -> Self {
        if key == RAW_VALUE_TOKEN {
            FirstKey::RawValueToken
        } else {
            FirstKey::Other
        }
    }
}

/// What a reader makes of an object key, told from its text without keeping it.
pub trait KeyName: Sized {
    fn named(key: &str) -> Self;
}

/// An object key read as a [`KeyName`].
pub struct Key<K>(pub K);

impl<'de, K: KeyName> Deserialize<'de> for Key<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<K>(std::marker::PhantomData<K>);
        impl<K: KeyName> Visitor<'_> for KeyVisitor<K> {
            type Value = Key<K>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_str<E>(self, key: &str) -> Result<Key<K>, E> {
                Ok(Key(K::named(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

/// Reads the value of a raw-value object as a `Value` does: the string must hold JSON, which is
/// walked in turn, and the object ends there.
fn raw_value<'de, A: MapAccess<'de>>(mut map: A) -> Result<Kind, A::Error> {
    let text: std::borrow::Cow<'de, str> = map.next_value::<BorrowedOrOwned>()?.0;
    serde_json::from_str::<Walked>(&text)
        .map(|walked| walked.0)
        .map_err(serde::de::Error::custom)
}

/// A string value, borrowed from the input where it has no escapes.
struct BorrowedOrOwned<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for BorrowedOrOwned<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = BorrowedOrOwned<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedOrOwned(std::borrow::Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(BorrowedOrOwned(std::borrow::Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn it_refuses_what_a_value_refuses_and_ignored_any_lets_through() {
        for text in [
            nested(200),
            r#"{"a": 1e400}"#.to_string(),
            r#"["\ud800"]"#.to_string(),
            format!(r#"{{"{RAW_VALUE_TOKEN}": 5}}"#),
            format!(r#"{{"{RAW_VALUE_TOKEN}": "[1,"}}"#),
            format!(r#"{{"{RAW_VALUE_TOKEN}": "1", "a": 2}}"#),
        ] {
            assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
            assert!(serde_json::from_str::<Walked>(&text).is_err(), "{text}");
        }
        assert!(
            serde_json::from_str::<serde::de::IgnoredAny>(&nested(200)).is_ok(),
            "the reason this type exists: IgnoredAny has no depth limit"
        );
        assert_eq!(
            serde_json::from_str::<Walked>(&nested(100)).unwrap(),
            Walked(Kind::Array)
        );
    }

    #[test]
    fn an_object_led_by_the_raw_value_token_is_the_json_in_its_string_as_for_a_value() {
        let text = format!(r#"{{"{RAW_VALUE_TOKEN}": "[1, {{\"a\": null}}]"}}"#);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            serde_json::json!([1, {"a": null}]),
            "serde_json's own behaviour, which the walk follows"
        );
        assert_eq!(
            serde_json::from_str::<Walked>(&text).unwrap(),
            Walked(Kind::Array)
        );
        let later = format!(r#"{{"a": 1, "{RAW_VALUE_TOKEN}": 5}}"#);
        assert!(serde_json::from_str::<Value>(&later).is_ok());
        assert!(serde_json::from_str::<Walked>(&later).is_ok());
    }

    #[test]
    fn it_names_each_kind() {
        for (text, kind) in [
            ("null", Kind::Null),
            ("true", Kind::Bool),
            ("-3.5", Kind::Number),
            ("\"x\"", Kind::String),
            ("[]", Kind::Array),
            ("{}", Kind::Object),
        ] {
            assert_eq!(serde_json::from_str::<Walked>(text).unwrap(), Walked(kind));
        }
    }

    proptest! {
        /// Over arbitrary text, nested brackets and escapes included, a walk succeeds exactly
        /// when a `Value` reads the text.
        #[test]
        fn a_walk_succeeds_exactly_when_a_value_reads_the_text(
            text in r#"[\[\]{}:,"\\u0-9a-fe.+ -]{0,40}|\[{0,140}\]{0,140}"#
        ) {
            prop_assert_eq!(
                serde_json::from_str::<Walked>(&text).is_ok(),
                serde_json::from_str::<Value>(&text).is_ok()
            );
        }
    }
}
