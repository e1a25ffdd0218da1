//! The checks of each record against the card's schema, its category's target row and the
//! release's promises, collected as problems with their line numbers.

use super::*;

/// The category row as first seen in the file, with its line.
pub(super) struct SeenRow {
    pub(super) action: [f64; 5],
    pub(super) line: usize,
}

pub(super) struct Checker<'a> {
    pub(super) options: &'a VerifyOptions,
    pub(super) expected: Option<BTreeMap<Category, usize>>,
    pub(super) problems: Problems,
    pub(super) lines: usize,
    pub(super) lacking_stale: usize,
    pub(super) counts: BTreeMap<Category, usize>,
    pub(super) ids: HashMap<String, usize>,
    pub(super) prompts: HashMap<[u8; 32], usize>,
    pub(super) rows: BTreeMap<Category, SeenRow>,
    pub(super) flagged_prompts: HashSet<String>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(
        options: &'a VerifyOptions,
        expected: Option<BTreeMap<Category, usize>>,
        problems: Problems,
    ) -> Self {
        Checker {
            options,
            expected,
            problems,
            lines: 0,
            lacking_stale: 0,
            counts: BTreeMap::new(),
            ids: HashMap::new(),
            prompts: HashMap::new(),
            rows: BTreeMap::new(),
            flagged_prompts: HashSet::new(),
        }
    }

    pub(super) fn scan(&mut self, reader: impl Read) -> io::Result<Scan> {
        let mut lines = BoundedLines::new(reader);
        while let Some(line) = lines.next_line()? {
            self.lines += 1;
            let number = self.lines;
            match line {
                Line::TooLong(length) => self.problems.push(
                    Some(number),
                    format!("{length} bytes, over the {MAX_LINE_BYTES}-byte line limit"),
                ),
                Line::Bytes(bytes) => self.check_line(number, &bytes),
            }
        }
        Ok(Scan {
            lines: self.lines,
            lacking_stale: self.lacking_stale,
            counts: self
                .counts
                .iter()
                .map(|(category, n)| (category.name().to_string(), *n))
                .collect(),
            sha256: lines.sha256(),
        })
    }

    pub(super) fn finish(mut self) -> Problems {
        if let Some(expected) = self.expected.take() {
            for (category, want) in expected {
                let have = self.counts.get(&category).copied().unwrap_or(0);
                if have != want {
                    self.problems
                        .push(None, format!("{category}: {have} records, expected {want}"));
                }
            }
        }
        self.problems
    }

    pub(super) fn check_line(&mut self, line: usize, bytes: &[u8]) {
        let bytes = match bytes.strip_prefix(UTF8_BOM) {
            Some(rest) if line == 1 => {
                self.problems.push(
                    Some(line),
                    "the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSONL readers reject: save the file without it (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`)",
                );
                rest
            }
            _ => bytes,
        };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let at = crate::util::fsio::utf8_error_position(bytes, &e);
                self.problems.push(
                    Some(line),
                    format!(
                        "not UTF-8 text: invalid byte 0x{:02X} at column {}; save the file as UTF-8",
                        at.byte, at.column
                    ),
                );
                return;
            }
        };
        if text.trim().is_empty() {
            self.problems.push(Some(line), "empty line");
            return;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(record)) => self.check_record(line, &record),
            Ok(_) => self.problems.push(Some(line), "not a JSON object"),
            Err(err) => self
                .problems
                .push(Some(line), format!("not valid JSON: {err}")),
        }
    }

    pub(super) fn check_record(&mut self, line: usize, record: &Map<String, Value>) {
        for key in record.keys() {
            if column(key).is_none() {
                self.problems
                    .push(Some(line), format!("field {key:?} is not in the schema"));
            }
        }
        let id = self.text(line, record, ID.name);
        let category = self.text(line, record, CATEGORY.name).and_then(|name| {
            let category = Category::from_name(name);
            if category.is_none() {
                self.problems
                    .push(Some(line), format!("unknown category {name:?}"));
            }
            category
        });
        let prompt = self.text(line, record, PROMPT.name);
        self.golds(line, record);
        for flag in COLUMNS.iter().filter(|c| c.presence == Presence::WhenTrue) {
            if record
                .get(flag.name)
                .is_some_and(|value| value != &Value::Bool(true))
            {
                self.problems.push(
                    Some(line),
                    format!("{} must be true when present", flag.name),
                );
            }
        }
        if let Some(id) = id {
            match self.ids.get(id) {
                Some(first) => self.problems.push(
                    Some(line),
                    format!("duplicate id {id:?} (first on line {first})"),
                ),
                None => {
                    self.ids.insert(id.to_string(), line);
                }
            }
        }
        if let Some(prompt) = prompt {
            self.flagged_without_flag(line, record, prompt);
            let key: [u8; 32] = Sha256::digest(norm(prompt).as_bytes()).into();
            match self.prompts.get(&key) {
                Some(first) => self.problems.push(
                    Some(line),
                    format!("duplicate prompt after normalisation (first on line {first})"),
                ),
                None => {
                    self.prompts.insert(key, line);
                }
            }
        }
        let action = self.target(line, record);
        let Some(category) = category else { return };
        *self.counts.entry(category).or_default() += 1;
        self.annotations(line, record, category);
        if let Some(action) = action {
            self.row(line, category, action);
        }
    }

    /// A record whose prompt the manifest lists as flagged must say so.
    pub(super) fn flagged_without_flag(
        &mut self,
        line: usize,
        record: &Map<String, Value>,
        prompt: &str,
    ) {
        if self.flagged_prompts.is_empty()
            || record.get(NEEDS_REVIEW.name) == Some(&Value::Bool(true))
        {
            return;
        }
        if self
            .flagged_prompts
            .contains(&crate::util::digest::sha256_hex(prompt.as_bytes()))
        {
            self.problems.push(
                Some(line),
                format!(
                    "its prompt is one {MANIFEST} lists in {FLAGGED_PROMPTS}, but the record lacks \"{}\": true",
                    NEEDS_REVIEW.name
                ),
            );
        }
    }

    pub(super) fn text<'v>(
        &mut self,
        line: usize,
        record: &'v Map<String, Value>,
        key: &str,
    ) -> Option<&'v str> {
        match record.get(key) {
            Some(Value::String(text)) if !text.trim().is_empty() => Some(text),
            Some(Value::String(_)) => {
                self.problems.push(Some(line), format!("{key} is empty"));
                None
            }
            Some(_) => {
                self.problems
                    .push(Some(line), format!("{key} must be a string"));
                None
            }
            None => {
                self.problems
                    .push(Some(line), format!("missing field {key}"));
                None
            }
        }
    }

    pub(super) fn string_list<'v>(
        &mut self,
        line: usize,
        record: &'v Map<String, Value>,
        key: &str,
    ) -> Option<Vec<&'v str>> {
        let Some(value) = record.get(key) else {
            self.problems
                .push(Some(line), format!("missing field {key}"));
            return None;
        };
        let strings: Option<Vec<&str>> = value
            .as_array()
            .and_then(|items| items.iter().map(Value::as_str).collect());
        if strings.is_none() {
            self.problems
                .push(Some(line), format!("{key} must be an array of strings"));
        }
        strings
    }

    pub(super) fn golds(&mut self, line: usize, record: &Map<String, Value>) {
        let Some(golds) = self.string_list(line, record, GOLDS.name) else {
            return;
        };
        if golds.is_empty() {
            self.problems.push(Some(line), "golds is empty");
        }
        if let Some(blank) = golds.iter().find(|gold| norm(gold).trim().is_empty()) {
            self.problems.push(
                Some(line),
                format!("gold {blank:?} normalises to blanks and would match any answer"),
            );
        }
    }

    pub(super) fn annotations(
        &mut self,
        line: usize,
        record: &Map<String, Value>,
        category: Category,
    ) {
        if category.is_memory() {
            self.string_list(line, record, DURABLE.name);
            if record.contains_key(STALE.name) {
                self.string_list(line, record, STALE.name);
            } else {
                self.lacking_stale += 1;
            }
        } else {
            for key in [DURABLE.name, STALE.name] {
                if record.contains_key(key) {
                    self.problems.push(
                        Some(line),
                        format!("{key} on {category}, which is not a memory category"),
                    );
                }
            }
        }
    }

    /// `target_action` and the four fields derived from it; returns the action when well-formed.
    pub(super) fn target(&mut self, line: usize, record: &Map<String, Value>) -> Option<[f64; 5]> {
        let action = self.action(line, record);
        let t = self.number(line, record, T.name);
        let top_p = self.number(line, record, TOP_P.name);
        let mode = self.text(line, record, MODE.name);
        let max_new = match record.get(MAX_NEW.name) {
            Some(value) => {
                let max_new = value.as_u64();
                if max_new.is_none() {
                    self.problems
                        .push(Some(line), "max_new must be a non-negative integer");
                }
                max_new
            }
            None => {
                self.problems.push(Some(line), "missing field max_new");
                None
            }
        };
        if let Some(mode) = mode {
            if mode != "DEEP" && mode != "STRICT" {
                self.problems.push(
                    Some(line),
                    format!("mode {mode:?} is neither DEEP nor STRICT"),
                );
            }
        }
        let action = action?;
        let [_, action_t, action_p, d, scaled_l] = action;
        if let Some(t) = t.filter(|&t| !close(t, action_t)) {
            self.problems.push(
                Some(line),
                format!("T {t} disagrees with target_action[1] {action_t}"),
            );
        }
        if let Some(top_p) = top_p.filter(|&p| !close(p, action_p)) {
            self.problems.push(
                Some(line),
                format!("top_p {top_p} disagrees with target_action[2] {action_p}"),
            );
        }
        let derived_mode = if close(d, 1.0) {
            Some("DEEP")
        } else if close(d, 0.0) {
            Some("STRICT")
        } else {
            self.problems.push(
                Some(line),
                format!("target_action[3] (d) is {d}, not 0 or 1"),
            );
            None
        };
        if let (Some(mode), Some(derived)) = (mode, derived_mode) {
            if mode != derived {
                self.problems.push(
                    Some(line),
                    format!("mode {mode} disagrees with d = {d} (expected {derived})"),
                );
            }
        }
        let derived_max_new = (scaled_l * MAX_NEW_SCALE).round();
        if let Some(max_new) = max_new.filter(|&m| !close(m as f64, derived_max_new)) {
            self.problems.push(
                Some(line),
                format!(
                    "max_new {max_new} disagrees with target_action[4] × 2048 = {derived_max_new}"
                ),
            );
        }
        Some(action)
    }

    pub(super) fn action(&mut self, line: usize, record: &Map<String, Value>) -> Option<[f64; 5]> {
        let Some(value) = record.get(TARGET_ACTION.name) else {
            self.problems
                .push(Some(line), "missing field target_action");
            return None;
        };
        let numbers: Option<Vec<f64>> = value
            .as_array()
            .and_then(|items| items.iter().map(Value::as_f64).collect());
        let action = numbers.and_then(|numbers| <[f64; 5]>::try_from(numbers).ok());
        if action.is_none() {
            self.problems
                .push(Some(line), "target_action must be an array of 5 numbers");
        }
        action
    }

    pub(super) fn number(
        &mut self,
        line: usize,
        record: &Map<String, Value>,
        key: &str,
    ) -> Option<f64> {
        match record.get(key) {
            Some(value) => {
                let number = value.as_f64();
                if number.is_none() {
                    self.problems
                        .push(Some(line), format!("{key} must be a number"));
                }
                number
            }
            None => {
                self.problems
                    .push(Some(line), format!("missing field {key}"));
                None
            }
        }
    }

    /// One row per category: the first record fixes it (and is held to the card's and, on
    /// request, our rows); every later record must repeat it.
    pub(super) fn row(&mut self, line: usize, category: Category, action: [f64; 5]) {
        if let Some(seen) = self.rows.get(&category) {
            if !same_action(&seen.action, &action) {
                self.problems.push(
                    Some(line),
                    format!(
                        "{category} target_action {action:?} differs from {:?} on line {}",
                        seen.action, seen.line
                    ),
                );
            }
            return;
        }
        self.rows.insert(category, SeenRow { action, line });
        if let Some(card) = card_row(category) {
            if !same_action(&card.target_action(), &action) {
                self.problems.push(
                    Some(line),
                    format!(
                        "{category} target_action {action:?} differs from the v1 card's {:?}",
                        card.target_action()
                    ),
                );
            }
            return;
        }
        let ours = self
            .options
            .our_rows
            .as_ref()
            .and_then(|rows| rows.get(&category));
        if let Some(ours) = ours {
            if !same_action(&ours.target_action(), &action) {
                self.problems.push(
                    Some(line),
                    format!(
                        "{category} target_action {action:?} differs from our row {:?}",
                        ours.target_action()
                    ),
                );
            }
        }
    }
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOLERANCE
}

pub(super) fn same_action(a: &[f64; 5], b: &[f64; 5]) -> bool {
    a.iter().zip(b).all(|(x, y)| close(*x, *y))
}
