//! Tells a reply caught in a loop, so the engine can end it at once instead of decoding it to its
//! token budget. Small models fall into loops (a memory block's lines over and over, one
//! sentence again and again); such a reply is cut at `max_tokens` and rejected whatever its
//! length, and in the 1.5B author's main job 13 of 140 replies spent 9,500 of 32,321 generated
//! tokens that way. The test is on the reply's bytes alone, so it is the same for every batch
//! shape and thread count.

/// The bytes at the end of a reply that are looked for earlier in it.
pub(super) const LOOP_WINDOW: usize = 64;

/// How many times those bytes must stand in the reply for it to be in a loop. Four documents
/// that retell one sentence, or a question that repeats a line of its context, stay below it;
/// over 1,318 distinct authoring replies of the 1.5B author, 5 that ended on their own reached it
/// (none of them released), and 122 of the 143 cut at `max_tokens` did, on average after 40% of
/// their tokens.
pub(super) const LOOP_REPEATS: usize = 5;

/// True when the last [`LOOP_WINDOW`] bytes of `text` stand in it [`LOOP_REPEATS`] times or
/// more (non-overlapping).
pub(super) fn in_a_loop(text: &[u8]) -> bool {
    if text.len() < LOOP_WINDOW * LOOP_REPEATS {
        return false;
    }
    memchr::memmem::find_iter(text, &text[text.len() - LOOP_WINDOW..])
        .take(LOOP_REPEATS)
        .count()
        >= LOOP_REPEATS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every prefix of `reply` after which the engine would end it; the first is where it stops.
    fn first_cut(reply: &str) -> Option<usize> {
        (1..=reply.len()).find(|&end| in_a_loop(&reply.as_bytes()[..end]))
    }

    #[test]
    fn a_memory_block_that_repeats_its_lines_is_a_loop() {
        // The opening of the main job's author/memory_update/r0/0000, which ran to its 700 tokens.
        let cycle = "- contact_email: support@acme.com\\n- contact_phone: 555-1234\\n- contact_role: IT Support\\n- contact_name: John Doe\\n- contact_department: IT\\n- contact_title: IT Manager\\n";
        let reply = format!(
            "{{\"items\":[{{\"prompt\":\"Memory:\\n- company: Acme Inc.\\n{}",
            cycle.repeat(12)
        );
        let cut = first_cut(&reply).expect("a loop");
        assert!(
            cut < reply.len() / 2,
            "cut at byte {cut} of {}: early in the loop",
            reply.len()
        );
    }

    #[test]
    fn a_sentence_said_again_and_again_is_a_loop() {
        let sentence = "The platform will be used to provide secure access to patient medical records for authorized healthcare providers. ";
        let reply = format!(
            "{{\"items\":[{{\"prompt\":\"Summary. {}",
            sentence.repeat(8)
        );
        assert!(first_cut(&reply).is_some());
    }

    #[test]
    fn documents_that_retell_one_sentence_are_not_a_loop() {
        // Four snippets that share their long sentence, as the released sas-local-0001 does.
        let shared =
            "The policy also requires that all documents must be stored for at least 5 years.";
        let reply = format!(
            "{{\"items\":[{{\"prompt\":\"[Doc 1] Policy\\n{shared}\\n\\n[Doc 2] Minutes\\n{shared}\\n\\n[Doc 3] Report\\n{shared}\\n\\n[Doc 4] Decision\\n{shared}\\n\\nQuestion: How long must documents be stored?\",\"golds\":[\"5 years\"]}}]}}"
        );
        assert_eq!(first_cut(&reply), None);
    }

    #[test]
    fn a_short_reply_is_never_a_loop() {
        assert!(!in_a_loop(b""));
        assert!(!in_a_loop(&[b'a'; LOOP_WINDOW * LOOP_REPEATS - 1]));
        assert!(in_a_loop(&[b'a'; LOOP_WINDOW * LOOP_REPEATS]));
    }
}
