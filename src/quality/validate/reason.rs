//! Every rule an authored item can fail, with its stable code (written to `rejects.jsonl`) and
//! its one-line meaning (the README's reject table is checked against it), and the rejection
//! that names the code and the offending value.

use thiserror::Error;

/// Why an item was dropped: a stable reason and a human detail naming the offending value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {detail}", reason.code())]
pub struct Rejection {
    pub reason: Reason,
    pub detail: String,
}

pub(super) fn reject<T>(reason: Reason, detail: impl Into<String>) -> Result<T, Rejection> {
    Err(Rejection {
        reason,
        detail: detail.into(),
    })
}

/// Every rule an item can fail, in the order `fields_from_value`, `check_item`, the author
/// stage's check against the template examples and `check_bloated` apply them (the golds' rule
/// against the context, `GoldsDistinctFacts` by subject, runs once the context is found), and
/// last the one note that is not a failure: a doubtful gold variant dropped from a kept item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    MissingField,
    WrongType,
    EmptyPrompt,
    PlaceholderPrompt,
    PersonalData,
    PromptTooShort,
    PromptCut,
    NoQuestion,
    EmptyGolds,
    GoldBlank,
    GoldPlaceholder,
    GoldTooShort,
    GoldMachineMade,
    GoldTooLong,
    GoldsDistinctFacts,
    GoldNotNumeric,
    QuestionNotLast,
    DocLength,
    SnippetCount,
    SnippetLabels,
    TurnStructure,
    MemoryBlock,
    TwoQuestions,
    QuestionGeneric,
    QuestionAdvice,
    GoldUnitMismatch,
    GoldReservedWord,
    GoldInPrompt,
    GoldNotInContext,
    NoDistractors,
    TwoSnippetsAnswer,
    QuestionDenied,
    GoldInQuestion,
    MissingDurable,
    DurableNotGold,
    MissingStale,
    StaleNotInPrompt,
    StaleGradedCorrect,
    KeyNotUpdated,
    QuestionOnReplacedValue,
    CopiesTemplateExample,
    NotBloated,
    GoldVariantDropped,
}

impl Reason {
    /// Whether a line of `rejects.jsonl` with reason `code` lost an item. A note (a dropped gold
    /// variant) is written beside the rejects but counted as none: its item was kept.
    pub fn is_loss(code: &str) -> bool {
        code != Reason::GoldVariantDropped.code()
    }

    pub fn all() -> &'static [Reason] {
        &[
            Reason::MissingField,
            Reason::WrongType,
            Reason::EmptyPrompt,
            Reason::PlaceholderPrompt,
            Reason::PersonalData,
            Reason::PromptTooShort,
            Reason::PromptCut,
            Reason::NoQuestion,
            Reason::EmptyGolds,
            Reason::GoldBlank,
            Reason::GoldPlaceholder,
            Reason::GoldTooShort,
            Reason::GoldMachineMade,
            Reason::GoldTooLong,
            Reason::GoldsDistinctFacts,
            Reason::GoldNotNumeric,
            Reason::QuestionNotLast,
            Reason::DocLength,
            Reason::SnippetCount,
            Reason::SnippetLabels,
            Reason::TurnStructure,
            Reason::MemoryBlock,
            Reason::TwoQuestions,
            Reason::QuestionGeneric,
            Reason::QuestionAdvice,
            Reason::GoldUnitMismatch,
            Reason::GoldReservedWord,
            Reason::GoldInPrompt,
            Reason::GoldNotInContext,
            Reason::NoDistractors,
            Reason::TwoSnippetsAnswer,
            Reason::QuestionDenied,
            Reason::GoldInQuestion,
            Reason::MissingDurable,
            Reason::DurableNotGold,
            Reason::MissingStale,
            Reason::StaleNotInPrompt,
            Reason::StaleGradedCorrect,
            Reason::KeyNotUpdated,
            Reason::QuestionOnReplacedValue,
            Reason::CopiesTemplateExample,
            Reason::NotBloated,
            Reason::GoldVariantDropped,
        ]
    }

    pub fn code(&self) -> &'static str {
        match self {
            Reason::MissingField => "missing_field",
            Reason::WrongType => "wrong_type",
            Reason::EmptyPrompt => "empty_prompt",
            Reason::PlaceholderPrompt => "placeholder_prompt",
            Reason::PersonalData => "personal_data",
            Reason::PromptTooShort => "prompt_too_short",
            Reason::PromptCut => "prompt_cut",
            Reason::EmptyGolds => "empty_golds",
            Reason::GoldBlank => "gold_blank",
            Reason::GoldPlaceholder => "gold_placeholder",
            Reason::GoldTooShort => "gold_too_short",
            Reason::GoldMachineMade => "gold_machine_made",
            Reason::GoldTooLong => "gold_too_long",
            Reason::GoldsDistinctFacts => "golds_distinct_facts",
            Reason::GoldNotNumeric => "gold_not_numeric",
            Reason::NoQuestion => "no_question",
            Reason::QuestionNotLast => "question_not_last",
            Reason::DocLength => "doc_length",
            Reason::SnippetCount => "snippet_count",
            Reason::SnippetLabels => "snippet_labels",
            Reason::TurnStructure => "turn_structure",
            Reason::MemoryBlock => "memory_block",
            Reason::TwoQuestions => "two_questions",
            Reason::QuestionGeneric => "question_generic",
            Reason::QuestionAdvice => "question_advice",
            Reason::GoldUnitMismatch => "gold_unit_mismatch",
            Reason::GoldReservedWord => "gold_reserved_word",
            Reason::GoldInPrompt => "gold_in_prompt",
            Reason::GoldNotInContext => "gold_not_in_context",
            Reason::NoDistractors => "no_distractors",
            Reason::TwoSnippetsAnswer => "two_snippets_answer",
            Reason::QuestionDenied => "question_denied",
            Reason::GoldInQuestion => "gold_in_question",
            Reason::MissingDurable => "missing_durable",
            Reason::DurableNotGold => "durable_not_gold",
            Reason::MissingStale => "missing_stale",
            Reason::StaleNotInPrompt => "stale_not_in_prompt",
            Reason::StaleGradedCorrect => "stale_graded_correct",
            Reason::KeyNotUpdated => "key_not_updated",
            Reason::QuestionOnReplacedValue => "question_on_replaced_value",
            Reason::CopiesTemplateExample => "copies_template_example",
            Reason::NotBloated => "not_bloated",
            Reason::GoldVariantDropped => "gold_variant_dropped",
        }
    }

    /// One line for the README's table of reject reasons.
    pub fn meaning(&self) -> &'static str {
        match self {
            Reason::MissingField => "the item lacks `prompt` or `golds`",
            Reason::WrongType => {
                "the item is not an object, or a field is not a string / array of strings"
            }
            Reason::EmptyPrompt => "the prompt is blank",
            Reason::PersonalData => {
                "the prompt holds what the content rules forbid as personal data: an email \
                 address, a phone number, a street address or a payment card number"
            }
            Reason::PlaceholderPrompt => {
                "the prompt is a placeholder: no letter or digit (`…`), one bracketed slot \
                 (`[prompt]`, `<your question here>`), a lone label (`Question:`), lorem ipsum \
                 or an unfilled `{{…}}` slot"
            }
            Reason::PromptTooShort => {
                "the prompt has fewer words than its category's `min_prompt_words`"
            }
            Reason::PromptCut => {
                "the prompt is cut off mid-sentence: a bracket or code fence left open or closed \
                 wrongly, or it ends on a dangling word, comma or ellipsis"
            }
            Reason::EmptyGolds => "`golds` is an empty list",
            Reason::GoldBlank => "a gold has no letter or digit, so it would match any answer",
            Reason::GoldPlaceholder => {
                "a gold is a placeholder (`TBD`, `N/A`, `unknown`, `see above`, `<answer>`, \
                 a digit run such as `123456`)"
            }
            Reason::GoldTooShort => {
                "a gold normalises to single letters (`n a`, `c`), which almost any answer contains; \
                 numbers are exempt"
            }
            Reason::GoldMachineMade => {
                "a gold looks machine-made: a long random token, a URL under a placeholder host \
                 (`example.com`, `.test`, `.invalid`), or reply debris (a bracket left open or \
                 closing nothing)"
            }
            Reason::GoldTooLong => "a gold has more words than `author.max_gold_words`",
            Reason::GoldsDistinctFacts => {
                "the golds are several distinct facts, not variants of one answer: values that \
                 differ (`3 days`, `5 days`), or each named apart in the context as the value of \
                 its own subject"
            }
            Reason::GoldNotNumeric => "a reasoning gold is not exactly one number",
            Reason::NoQuestion => {
                "the prompt asks nothing: no sentence ends with `?` (or opens with a question \
                 word), and, where the category allows one, no instruction"
            }
            Reason::QuestionNotLast => {
                "the question is not last, where the category puts it (document, snippets, dialog, \
                 memory)"
            }
            Reason::DocLength => "the document before the question is outside the allowed word range",
            Reason::SnippetCount => {
                "not the allowed number of snippets under one recurring label shape (`[Doc 1]`, \
                 `Source A:`, `## Title`, `1.` …)"
            }
            Reason::SnippetLabels => {
                "the snippets' ordinals do not run in order, only some carry one, a snippet has \
                 no body, or two snippets say the same thing word for word"
            }
            Reason::TurnStructure => {
                "the dialog is not between exactly two labelled speakers, or the asking side (the \
                 last speaker) has not the allowed number of turns, or it does not end on the asker's \
                 question, or that question repeats an earlier one of the asker's"
            }
            Reason::MemoryBlock => {
                "not the allowed number of stored facts (lines of a facts block, or sentences) \
                 before the question"
            }
            Reason::QuestionGeneric => {
                "a factual question without context asks about \"a typical\" thing or an unnamed \
                 product (\"a CRM system\", \"e-commerce platforms\", \"a life insurance \
                 policy\"): no particular thing, no single answer"
            }
            Reason::QuestionAdvice => {
                "a factual or code question asks for advice (`how can…`, `should … use`, \
                 `suggest`, `to resolve this issue`, `to increase … speed`) or for code to write (`what SQL query`)"
            }
            Reason::TwoQuestions => {
                "the question asks two things, joined by `and` and a question word (`Which \
                 vendor… and how…?`)"
            }
            Reason::GoldUnitMismatch => {
                "the question names the unit of its answer (`How many days…`) and the first gold \
                 is in another (`6 years`; `70%` for a count; a date for a time of day), or is a \
                 bare number the context counts in something else (`327,114 transactions`)"
            }
            Reason::GoldReservedWord => {
                "the question asks for a keyword argument or parameter and the first gold is a \
                 Python reserved word (`return`)"
            }
            Reason::GoldInPrompt => {
                "a gold is graded present in the prompt itself; in technical_code, the prompt \
                 states every number or code of a gold (`404`, `HTTP 404`) as a word of its own, \
                 the question names a gold (or `commits` for `commit`), the description outside the code names a gold of \
                 several words, or the question asks what to add and the code already has it"
            }
            Reason::GoldNotInContext => {
                "no gold is graded present in the item's document, snippets, earlier turns or facts"
            }
            Reason::NoDistractors => {
                "fewer than two snippets leave the key and its other forms (`2-week`) out, or every \
                 slot of a document that the key fills (`owner: …`) holds it"
            }
            Reason::TwoSnippetsAnswer => {
                "two snippets answer the question: both claim what it asks for (`the latest`, \
                 `the highest`), or one without the key holds all its words the key's holds, and \
                 a number"
            }
            Reason::QuestionDenied => {
                "the question asks about a state (`encrypted`) of something that a document says \
                 is not in it, and the key's sentence does not speak of that state"
            }
            Reason::GoldInQuestion => {
                "a gold is graded present in the question itself, or a gold is made of the \
                 question's words"
            }
            Reason::MissingDurable => "a memory item has no (or a blank) `durable` value",
            Reason::DurableNotGold => "no `durable` value is graded correct by the golds",
            Reason::MissingStale => "a memory_update item has no (or a blank) `stale` value",
            Reason::StaleNotInPrompt => "a `stale` value does not appear before the question",
            Reason::StaleGradedCorrect => {
                "a `stale` value is graded correct by the golds, so repeating it would pass"
            }
            Reason::KeyNotUpdated => {
                "a memory_update key is already the value of a stored fact above the update, so the \
                 update changes nothing the question asks"
            }
            Reason::QuestionOnReplacedValue => {
                "a memory_update question picks what it asks about by a stored value the update \
                 replaced (`for the production environment` after the deployment moved to \
                 staging): it asks about a state that no longer holds"
            }
            Reason::CopiesTemplateExample => {
                "the prompt copies its category template's example item: the same or a near \
                 duplicate prompt by the release's dedup rule (`assemble.near_dup_threshold`), a \
                 context or code item that keeps the example's question (or a near duplicate) or \
                 its opening clause (3 in 4 words in place), a memory item's facts block repeats \
                 all of the example's stored facts but one at most (at least three) or all its \
                 keys, the golds hold all of the example's (two or more), or the prompt keeps \
                 45% of a long example's words in their order (a retelling) or repeats 15 of its \
                 words in a row (a copied passage)"
            }
            Reason::NotBloated => "a bloated prompt is too short compared to its plain twin",
            Reason::GoldVariantDropped => {
                "a note, not a reject: a gold that may not be the first gold's value (a 12-hour \
                 time without am or pm, months beside days, words beside a number, another unit \
                 than asked, a number the context lacks) or that grades too much (a bare one- or \
                 two-digit number beside a key with its unit, or a bare number the context also \
                 gives to another value) was dropped, and the item kept with its other golds"
            }
        }
    }
}
