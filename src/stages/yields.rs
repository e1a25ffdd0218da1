//! What each authoring round yielded: valid items and reject codes per category and round, with
//! one example per code. The author stage prints a round's table and, for a category that got
//! less than half of what it needed, the rule that rejected most with an example, so that a
//! maintainer can fix a template instead of paying for more rounds. The manifest keeps the counts.

use crate::stages::item::Category;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One category in one round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryYield {
    /// Authoring requests of the round for this category.
    pub requests: usize,
    /// Items those requests asked for.
    #[serde(default)]
    pub items_asked: usize,
    /// Valid items the category still needed when the round started.
    pub needed: usize,
    /// Valid items the round produced.
    pub valid: usize,
    /// Rejected items and replies by reason code.
    pub rejects: BTreeMap<String, usize>,
    /// The first reject of the most frequent code, for the printed hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<Example>,
}

/// A reject shown as an example of its code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub code: String,
    pub detail: String,
    pub excerpt: String,
}

/// One round's yield, by category (only categories the round asked for).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundYield {
    pub round: u32,
    pub categories: BTreeMap<Category, CategoryYield>,
}

impl RoundYield {
    /// The counts without the example texts (for the manifest).
    pub fn counts_only(&self) -> RoundYield {
        RoundYield {
            round: self.round,
            categories: self
                .categories
                .iter()
                .map(|(category, y)| {
                    let counts = CategoryYield {
                        example: None,
                        ..y.clone()
                    };
                    (*category, counts)
                })
                .collect(),
        }
    }
}

/// One category in one round of the loop: how many of its items each stage let through, from
/// what the author was asked for to what the release holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Survival {
    /// Items the round's authoring requests asked for.
    pub asked: usize,
    /// Items that passed the author gate (validation).
    pub gate: usize,
    /// Of those, numeric keys that repair replaced with the verifiers' value.
    pub repaired: usize,
    /// Of those, items that repair flagged for review.
    pub repair_flagged: usize,
    /// Items neither repair nor the audit panel flagged.
    pub audit_passed: usize,
    /// Items left after dedup (and the flag policy): the ones the release can draw on.
    pub after_dedup: usize,
    /// Items in the release.
    pub released: usize,
}

impl Survival {
    /// The share of the items asked for that the release can draw on.
    pub fn rate(&self) -> Option<f64> {
        (self.asked > 0).then(|| self.after_dedup as f64 / self.asked as f64)
    }

    pub fn add(&mut self, other: &Survival) {
        self.asked += other.asked;
        self.gate += other.gate;
        self.repaired += other.repaired;
        self.repair_flagged += other.repair_flagged;
        self.audit_passed += other.audit_passed;
        self.after_dedup += other.after_dedup;
        self.released += other.released;
    }
}

/// One round of the loop's survival, by category (only categories the round asked for).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundSurvival {
    pub round: u32,
    pub categories: BTreeMap<Category, Survival>,
}

/// Collects yields while the author stage derives its outcomes.
#[derive(Debug, Default)]
pub struct Tally {
    rounds: BTreeMap<(u32, Category), CategoryYield>,
    /// The first example of every (round, category, code).
    examples: BTreeMap<(u32, Category, String), Example>,
}

impl Tally {
    /// A request of `round` for `category` that asked for `items` items.
    pub fn request(&mut self, round: u32, category: Category, items: usize) {
        let counts = self.rounds.entry((round, category)).or_default();
        counts.requests += 1;
        counts.items_asked += items;
    }

    pub fn valid(&mut self, round: u32, category: Category) {
        self.rounds.entry((round, category)).or_default().valid += 1;
    }

    pub fn reject(&mut self, round: u32, category: Category, code: &str, example: Example) {
        *self
            .rounds
            .entry((round, category))
            .or_default()
            .rejects
            .entry(code.to_string())
            .or_default() += 1;
        self.examples
            .entry((round, category, code.to_string()))
            .or_insert(example);
    }

    /// The rounds in order, with each category's `needed` counted from `target` and the rounds
    /// before, and the example of its most frequent reject code.
    pub fn finish(self, target: usize) -> Vec<RoundYield> {
        let mut have: BTreeMap<Category, usize> = BTreeMap::new();
        let mut rounds: BTreeMap<u32, RoundYield> = BTreeMap::new();
        for ((round, category), mut counts) in self.rounds {
            let before = have.entry(category).or_default();
            counts.needed = target.saturating_sub(*before);
            *before += counts.valid;
            counts.example = top_reject(&counts.rejects).and_then(|code| {
                self.examples
                    .get(&(round, category, code.to_string()))
                    .cloned()
            });
            rounds
                .entry(round)
                .or_insert_with(|| RoundYield {
                    round,
                    ..RoundYield::default()
                })
                .categories
                .insert(category, counts);
        }
        rounds.into_values().collect()
    }
}

/// The most frequent code (the first in code order on a tie).
fn top_reject(rejects: &BTreeMap<String, usize>) -> Option<&str> {
    rejects
        .iter()
        .fold(
            None,
            |best: Option<(&String, usize)>, (code, n)| match best {
                Some((_, most)) if most >= *n => best,
                _ => Some((code, *n)),
            },
        )
        .map(|(code, _)| code.as_str())
}

/// How many reject codes a round's table names per category.
const TOP_CODES: usize = 3;
/// Characters of an example shown in a hint.
const EXAMPLE_CHARS: usize = 160;

/// The round's table: per category, needed, valid, and the top reject codes.
pub fn render(round: &RoundYield) -> String {
    let mut lines = vec![
        format!("author: round {} yield:", round.round),
        format!(
            "  {:<20} {:>8} {:>6} {:>6}  top reject codes",
            "category", "requests", "needed", "valid"
        ),
    ];
    for (category, y) in &round.categories {
        lines.push(
            format!(
                "  {:<20} {:>8} {:>6} {:>6}  {}",
                category.name(),
                y.requests,
                y.needed,
                y.valid,
                top_codes(&y.rejects)
            )
            .trim_end()
            .to_string(),
        );
    }
    lines.join("\n")
}

fn top_codes(rejects: &BTreeMap<String, usize>) -> String {
    let mut ranked: Vec<(&String, &usize)> = rejects.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    ranked
        .iter()
        .take(TOP_CODES)
        .map(|(code, n)| format!("{code} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One hint per category whose round yield is below half of what it needed: the rule that
/// rejected most, and an example.
pub fn hints(round: &RoundYield) -> Vec<String> {
    round
        .categories
        .iter()
        .filter(|(_, y)| y.needed > 0 && y.valid * 2 < y.needed)
        .map(|(category, y)| {
            let most = match &y.example {
                Some(example) => format!(
                    "most rejects were {} ({} of {}): {}\n    e.g. {}",
                    example.code,
                    y.rejects.get(&example.code).copied().unwrap_or(0),
                    y.rejects.values().sum::<usize>(),
                    example.detail,
                    crate::stages::item::excerpt(&example.excerpt, EXAMPLE_CHARS)
                ),
                None => "no item was rejected: the replies held too few items".to_string(),
            };
            format!(
                "author: {category} yielded {} of the {} it needed in round {}; {most}\n    \
                 fix prompts/{category}.md (or the rule's limit) before paying for more rounds",
                y.valid, y.needed, round.round
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(code: &str) -> Example {
        Example {
            code: code.into(),
            detail: format!("{code} detail"),
            excerpt: format!("{code} excerpt"),
        }
    }

    #[test]
    fn needed_counts_down_across_rounds_and_the_top_code_keeps_its_first_example() {
        let mut tally = Tally::default();
        for _ in 0..2 {
            tally.request(0, Category::Conversational, 3);
        }
        tally.valid(0, Category::Conversational);
        tally.reject(
            0,
            Category::Conversational,
            "turn_structure",
            example("first"),
        );
        tally.reject(
            0,
            Category::Conversational,
            "turn_structure",
            example("second"),
        );
        tally.reject(0, Category::Conversational, "no_question", example("other"));
        tally.request(1, Category::Conversational, 3);
        tally.valid(1, Category::Conversational);
        let rounds = tally.finish(10);
        let first = &rounds[0].categories[&Category::Conversational];
        assert_eq!(
            (first.requests, first.items_asked, first.needed, first.valid),
            (2, 6, 10, 1)
        );
        assert_eq!(
            first.example.as_ref().map(|e| e.detail.as_str()),
            Some("first detail")
        );
        let second = &rounds[1].categories[&Category::Conversational];
        assert_eq!((second.needed, second.valid), (9, 1));
        assert!(
            rounds[0].counts_only().categories[&Category::Conversational]
                .example
                .is_none()
        );
    }

    #[test]
    fn a_round_below_half_its_need_gets_a_hint_naming_the_rule_and_an_example() {
        let mut tally = Tally::default();
        tally.request(0, Category::MemoryRecall, 1);
        tally.reject(
            0,
            Category::MemoryRecall,
            "memory_block",
            example("memory_block"),
        );
        tally.request(0, Category::SimpleFactual, 5);
        for _ in 0..5 {
            tally.valid(0, Category::SimpleFactual);
        }
        let rounds = tally.finish(6);
        let hints = hints(&rounds[0]);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].contains("memory_recall yielded 0 of the 6"),
            "{}",
            hints[0]
        );
        assert!(hints[0].contains("most rejects were memory_block (1 of 1)"));
        assert!(hints[0].contains("e.g. memory_block excerpt"));
        let table = render(&rounds[0]);
        assert!(table.contains("memory_recall"), "{table}");
        assert!(table.contains("memory_block 1"), "{table}");
    }
}
