//! Checks a release file or folder, ours or v1's, against the card's schema and the release's own
//! promises (counts, target rows, hashes). Every content defect is a `Problem` with its line; only
//! failing to read the target is an error. Lines are read with a bound, so a huge or binary file
//! yields problems, never an allocation the size of the file.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::quality::grade::norm;
use crate::release::schema::columns::{
    CATEGORY, DURABLE, GOLDS, ID, MAX_NEW, MODE, NEEDS_REVIEW, PROMPT, STALE, T, TARGET_ACTION,
    TOP_P,
};
use crate::release::schema::{card_row, column, Presence, TargetRow, COLUMNS, MAX_NEW_SCALE};
use crate::stages::item::Category;
use crate::util::digest::hex;

/// A line longer than this is reported, not parsed (v1's longest record is a few KiB).
const MAX_LINE_BYTES: usize = 1 << 20;
/// Problems kept in the report; the rest are counted in one closing problem.
const MAX_PROBLEMS: usize = 1000;
/// `manifest.json` and `SHA256SUMS` larger than this are not read.
const MAX_SIDE_FILE_BYTES: u64 = 16 << 20;
/// Numbers that should be equal are compared with this slack.
const TOLERANCE: f64 = 1e-9;

const MANIFEST: &str = "manifest.json";
const SUMS: &str = "SHA256SUMS";
/// Where the expected record count of each category comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The counts in `manifest.json` (a folder's, or the file's folder's); a short release says so there.
    FromManifest,
    /// This many records in each of the ten categories (`release.per_category`).
    PerCategory(usize),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyOptions {
    /// Our rows for the five categories the v1 card leaves open; compared only when given.
    pub our_rows: Option<BTreeMap<Category, TargetRow>>,
}

/// One content defect; `line` is the JSONL line (1-based) when it belongs to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyReport {
    /// Lines read (records or not).
    pub records: usize,
    pub problems: Vec<Problem>,
    /// Memory records with `durable` but no `stale` (v1 allows it).
    pub lacking_stale: usize,
    /// Records per known category name.
    pub counts: BTreeMap<String, usize>,
    /// SHA-256 of the JSONL bytes, hex; empty when no JSONL could be located.
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// `verify DIR` checks against `DIR/manifest.json`; `verify FILE` expects `per_category` records
/// in each category.
pub fn verify_path(
    path: &Path,
    per_category: usize,
    options: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    let expected = if path.is_dir() {
        Expected::FromManifest
    } else {
        Expected::PerCategory(per_category)
    };
    verify(path, expected, options)
}

/// Verifies a release folder (its manifest names the JSONL) or a JSONL file.
pub fn verify(
    path: &Path,
    expected: Expected,
    options: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    let metadata = fs::metadata(path).map_err(io_error(path))?;
    let (dir, named_file) = if metadata.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        (dir, Some(path.to_path_buf()))
    };

    let mut problems = Problems::default();
    let manifest = if metadata.is_dir() || expected == Expected::FromManifest {
        Some(read_manifest(&dir, &mut problems)?)
    } else {
        None
    };
    let jsonl = match (&named_file, &manifest) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(manifest)) => manifest.prompts_file.as_ref().map(|name| dir.join(name)),
        (None, None) => None,
    };
    // The manifest's hash is about the file it names, which a named file need not be.
    let manifest_sha = manifest
        .as_ref()
        .filter(|m| {
            let name = jsonl.as_ref().and_then(|path| path.file_name());
            m.prompts_file.as_deref().map(std::ffi::OsStr::new) == name
        })
        .and_then(|m| m.sha256.clone());
    let counts = match expected {
        Expected::PerCategory(n) => Some(Category::ALL.into_iter().map(|c| (c, n)).collect()),
        Expected::FromManifest => manifest.as_ref().and_then(|m| m.counts.clone()),
    };
    let flagged_prompts = manifest.map(|m| m.flagged_prompts).unwrap_or_default();

    let Some(jsonl) = jsonl else {
        return Ok(problems.into_report(Scan::default()));
    };
    let file = match File::open(&jsonl) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound && named_file.is_none() => {
            problems.push(
                None,
                format!("{MANIFEST} names {}, which is missing", jsonl.display()),
            );
            return Ok(problems.into_report(Scan::default()));
        }
        Err(source) => return Err(io_error(&jsonl)(source)),
    };
    let mut checker = Checker::new(options, counts, problems);
    checker.flagged_prompts = flagged_prompts;
    let scan = checker.scan(file).map_err(io_error(&jsonl))?;
    let mut problems = checker.finish();
    if let Some(stated) = manifest_sha.filter(|stated| *stated != scan.sha256) {
        problems.push(
            None,
            format!("SHA-256 is {}, {MANIFEST} says {stated}", scan.sha256),
        );
    }
    check_sums(&dir, &jsonl, &scan.sha256, &mut problems);
    Ok(problems.into_report(scan))
}

/// Checks JSONL bytes against exact per-category counts (the release writer's own check).
pub(crate) fn check_jsonl(
    reader: impl Read,
    expected: &BTreeMap<Category, usize>,
    options: &VerifyOptions,
) -> io::Result<VerifyReport> {
    let mut checker = Checker::new(options, Some(expected.clone()), Problems::default());
    let scan = checker.scan(reader)?;
    Ok(checker.finish().into_report(scan))
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> VerifyError + '_ {
    move |source| VerifyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Problems collected so far, bounded.
#[derive(Default)]
struct Problems {
    kept: Vec<Problem>,
    dropped: usize,
}

impl Problems {
    fn push(&mut self, line: Option<usize>, message: impl Into<String>) {
        if self.kept.len() < MAX_PROBLEMS {
            self.kept.push(Problem {
                line,
                message: message.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    fn into_report(mut self, scan: Scan) -> VerifyReport {
        if self.dropped > 0 {
            self.kept.push(Problem {
                line: None,
                message: format!("{} more problems not listed", self.dropped),
            });
        }
        VerifyReport {
            records: scan.lines,
            problems: self.kept,
            lacking_stale: scan.lacking_stale,
            counts: scan.counts,
            sha256: scan.sha256,
        }
    }
}

/// What one pass over the JSONL measured.
#[derive(Default)]
struct Scan {
    lines: usize,
    lacking_stale: usize,
    counts: BTreeMap<String, usize>,
    sha256: String,
}

/// The manifest's list of flagged prompts' SHA-256 hashes.
const FLAGGED_PROMPTS: &str = "flagged_prompts_sha256";

struct ManifestFacts {
    prompts_file: Option<String>,
    counts: Option<BTreeMap<Category, usize>>,
    sha256: Option<String>,
    /// `flagged_prompts_sha256`: prompts a record may carry only with `_needs_review: true`.
    flagged_prompts: HashSet<String>,
}

fn read_manifest(dir: &Path, problems: &mut Problems) -> Result<ManifestFacts, VerifyError> {
    let path = dir.join(MANIFEST);
    let mut facts = ManifestFacts {
        prompts_file: None,
        counts: None,
        sha256: None,
        flagged_prompts: HashSet::new(),
    };
    let Some(text) = read_side_file(&path, problems)? else {
        return Ok(facts);
    };
    let manifest: Value = match serde_json::from_slice(&text) {
        Ok(value) => value,
        Err(err) => {
            problems.push(None, format!("{MANIFEST} is not valid JSON: {err}"));
            return Ok(facts);
        }
    };
    match manifest.get("prompts_file").and_then(Value::as_str) {
        Some(name) if is_plain_file_name(name) => facts.prompts_file = Some(name.to_string()),
        Some(name) => problems.push(
            None,
            format!("{MANIFEST} names {name:?}, which is not a file in its own folder"),
        ),
        None => problems.push(None, format!("{MANIFEST} has no \"prompts_file\" string")),
    }
    facts.sha256 = manifest
        .get("sha256")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase);
    match manifest.get("counts").and_then(Value::as_object) {
        Some(object) => facts.counts = Some(manifest_counts(object, problems)),
        None => problems.push(None, format!("{MANIFEST} has no \"counts\" object")),
    }
    match manifest.get(FLAGGED_PROMPTS) {
        None => {}
        Some(Value::Array(hashes)) => {
            for hash in hashes {
                match hash.as_str() {
                    Some(hex) => {
                        facts.flagged_prompts.insert(hex.to_ascii_lowercase());
                    }
                    None => problems.push(
                        None,
                        format!("{MANIFEST} {FLAGGED_PROMPTS} holds {hash}, not a hex string"),
                    ),
                }
            }
        }
        Some(_) => problems.push(
            None,
            format!("{MANIFEST} {FLAGGED_PROMPTS} is not a list of hex strings"),
        ),
    }
    Ok(facts)
}

fn manifest_counts(
    object: &Map<String, Value>,
    problems: &mut Problems,
) -> BTreeMap<Category, usize> {
    let mut counts = BTreeMap::new();
    for (name, value) in object {
        let category = Category::from_name(name);
        let count = value.as_u64().and_then(|n| usize::try_from(n).ok());
        match (category, count) {
            (Some(category), Some(count)) => {
                counts.insert(category, count);
            }
            (None, _) => {
                problems.push(None, format!("{MANIFEST} counts unknown category {name:?}"))
            }
            (Some(_), None) => problems.push(
                None,
                format!("{MANIFEST} count for {name} is not a non-negative integer"),
            ),
        }
    }
    for category in Category::ALL {
        if !counts.contains_key(&category) {
            problems.push(None, format!("{MANIFEST} has no count for {category}"));
        }
    }
    counts
}

/// Reads a small side file; absent or oversized files are problems (absent `manifest.json` in a
/// folder means there is nothing to verify against).
fn read_side_file(path: &Path, problems: &mut Problems) -> Result<Option<Vec<u8>>, VerifyError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            problems.push(None, format!("{} is missing", path.display()));
            return Ok(None);
        }
        Err(source) => return Err(io_error(path)(source)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_SIDE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    if bytes.len() as u64 > MAX_SIDE_FILE_BYTES {
        problems.push(
            None,
            format!(
                "{} is larger than {MAX_SIDE_FILE_BYTES} bytes",
                path.display()
            ),
        );
        return Ok(None);
    }
    Ok(Some(bytes))
}

fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

/// Compares every file `SHA256SUMS` lists (when the folder has one) with its content.
fn check_sums(dir: &Path, jsonl: &Path, jsonl_sha: &str, problems: &mut Problems) {
    let path = dir.join(SUMS);
    if !path.is_file() {
        return;
    }
    let text = match read_side_file(&path, problems) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        Ok(None) => return,
        Err(err) => {
            problems.push(None, err.to_string());
            return;
        }
    };
    let jsonl_name = jsonl.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut jsonl_listed = false;
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let Some((want, name)) = parse_sum_line(line) else {
            problems.push(
                None,
                format!("{SUMS} line {} is not `<sha256>  <file>`", index + 1),
            );
            continue;
        };
        if !is_plain_file_name(name) {
            problems.push(None, format!("{SUMS} lists {name:?}, outside its folder"));
            continue;
        }
        let have = if jsonl_name.as_deref() == Some(name) {
            jsonl_listed = true;
            Ok(jsonl_sha.to_string())
        } else {
            hash_file(&dir.join(name))
        };
        match have {
            Ok(have) if have == want => {}
            Ok(have) => problems.push(
                None,
                format!("{name}: SHA-256 is {have}, {SUMS} says {want}"),
            ),
            Err(err) => problems.push(None, format!("{name}, listed in {SUMS}: {err}")),
        }
    }
    if !jsonl_listed {
        if let Some(name) = jsonl_name {
            problems.push(None, format!("{SUMS} does not list {name}"));
        }
    }
}

/// `<64 hex>  <name>` (text mode) or `<64 hex> *<name>` (binary mode), as `sha256sum` writes.
fn parse_sum_line(line: &str) -> Option<(String, &str)> {
    let (hash, rest) = line.split_at_checked(64)?;
    if !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let name = rest
        .strip_prefix("  ")
        .or_else(|| rest.strip_prefix(" *"))?;
    let name = name.strip_prefix("./").unwrap_or(name);
    Some((hash.to_ascii_lowercase(), name))
}

fn hash_file(path: &Path) -> io::Result<String> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut hasher = Sha256::new();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(buf);
        let len = buf.len();
        reader.consume(len);
    }
}

/// One line as the bounded reader returns it.
enum Line {
    Bytes(Vec<u8>),
    TooLong(u64),
}

/// The byte-order mark some editors put at the start of a UTF-8 file.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits a stream on `\n` without ever holding more than `MAX_LINE_BYTES` of one line, hashing
/// every byte on the way.
struct BoundedLines<R> {
    reader: BufReader<R>,
    hasher: Sha256,
}

impl<R: Read> BoundedLines<R> {
    fn new(reader: R) -> Self {
        BoundedLines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            hasher: Sha256::new(),
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut length: u64 = 0;
        let mut started = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(started.then(|| finish_line(kept, length)));
            }
            started = true;
            let (content, taken, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(end) => (&buf[..end], end + 1, true),
                None => (buf, buf.len(), false),
            };
            length += content.len() as u64;
            if length <= MAX_LINE_BYTES as u64 {
                kept.extend_from_slice(content);
            } else {
                kept = Vec::new();
            }
            self.hasher.update(&buf[..taken]);
            self.reader.consume(taken);
            if ended {
                return Ok(Some(finish_line(kept, length)));
            }
        }
    }

    fn sha256(self) -> String {
        hex(&self.hasher.finalize())
    }
}

fn finish_line(kept: Vec<u8>, length: u64) -> Line {
    if length > MAX_LINE_BYTES as u64 {
        Line::TooLong(length)
    } else {
        Line::Bytes(kept)
    }
}

/// The category row as first seen in the file, with its line.
struct SeenRow {
    action: [f64; 5],
    line: usize,
}

struct Checker<'a> {
    options: &'a VerifyOptions,
    expected: Option<BTreeMap<Category, usize>>,
    problems: Problems,
    lines: usize,
    lacking_stale: usize,
    counts: BTreeMap<Category, usize>,
    ids: HashMap<String, usize>,
    prompts: HashMap<[u8; 32], usize>,
    rows: BTreeMap<Category, SeenRow>,
    flagged_prompts: HashSet<String>,
}

impl<'a> Checker<'a> {
    fn new(
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

    fn scan(&mut self, reader: impl Read) -> io::Result<Scan> {
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

    fn finish(mut self) -> Problems {
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

    fn check_line(&mut self, line: usize, bytes: &[u8]) {
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

    fn check_record(&mut self, line: usize, record: &Map<String, Value>) {
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
    fn flagged_without_flag(&mut self, line: usize, record: &Map<String, Value>, prompt: &str) {
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

    fn text<'v>(
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

    fn string_list<'v>(
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

    fn golds(&mut self, line: usize, record: &Map<String, Value>) {
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

    fn annotations(&mut self, line: usize, record: &Map<String, Value>, category: Category) {
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
    fn target(&mut self, line: usize, record: &Map<String, Value>) -> Option<[f64; 5]> {
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

    fn action(&mut self, line: usize, record: &Map<String, Value>) -> Option<[f64; 5]> {
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

    fn number(&mut self, line: usize, record: &Map<String, Value>, key: &str) -> Option<f64> {
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
    fn row(&mut self, line: usize, category: Category, action: [f64; 5]) {
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

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOLERANCE
}

fn same_action(a: &[f64; 5], b: &[f64; 5]) -> bool {
    a.iter().zip(b).all(|(x, y)| close(*x, *y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::schema::TargetRow;
    use crate::release::test_support::{all_rows, card_example_line, info, records};
    use crate::release::write_release;
    use serde_json::json;
    use std::io::Write;

    const PER_CATEGORY: usize = 3;

    /// v1-shaped lines built from the card's example record: ten categories × `PER_CATEGORY`, the
    /// first memory record of each memory category with `durable` only, as 24 of v1's 200 are.
    fn v1_lines() -> Vec<Value> {
        let example: Value = serde_json::from_str(&card_example_line()).expect("card example");
        let rows = all_rows();
        let mut lines = Vec::new();
        for category in Category::ALL {
            let row = rows[&category];
            for i in 0..PER_CATEGORY {
                let mut record = example.clone();
                let n = lines.len();
                record["id"] = json!(format!("sas1k-{n:04}"));
                record["category"] = json!(category.name());
                record["prompt"] = json!(format!(
                    "{} (variant {n})",
                    example["prompt"].as_str().unwrap_or("")
                ));
                record["target_action"] = json!(row.target_action());
                record["T"] = json!(row.t);
                record["top_p"] = json!(row.p);
                record["mode"] = json!(row.mode());
                record["max_new"] = json!(row.l);
                let object = record.as_object_mut().expect("object");
                if !category.is_memory() {
                    object.remove("durable");
                    object.remove("stale");
                } else if i == 0 {
                    object.remove("stale");
                }
                lines.push(record);
            }
        }
        lines
    }

    fn write_lines(dir: &Path, lines: &[Value]) -> PathBuf {
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        write_text(dir, &text)
    }

    fn write_text(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("prompts.jsonl");
        fs::write(&path, text).expect("write fixture");
        path
    }

    fn verify_lines(lines: &[Value], options: &VerifyOptions) -> VerifyReport {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_lines(dir.path(), lines);
        verify_path(&path, PER_CATEGORY, options).expect("readable")
    }

    fn messages(report: &VerifyReport) -> String {
        report.problems.iter().map(|p| format!("{p}\n")).collect()
    }

    #[test]
    fn v1_shaped_file_verifies_clean_and_counts_records_lacking_stale() {
        let report = verify_lines(&v1_lines(), &VerifyOptions::default());
        assert!(report.problems.is_empty(), "{}", messages(&report));
        assert_eq!(report.records, 10 * PER_CATEGORY);
        assert_eq!(report.lacking_stale, 2);
        assert_eq!(report.counts.len(), 10);
        assert!(report.counts.values().all(|n| *n == PER_CATEGORY));
        assert_eq!(report.sha256.len(), 64);
    }

    /// Each mutation of one clean line and the problem it must produce.
    #[test]
    fn every_problem_kind_is_detected() {
        type Mutation = fn(&mut Vec<Value>);
        let cases: Vec<(&str, Mutation, &str)> = vec![
            (
                "invalid json",
                |l| l[0] = json!("PLACEHOLDER-INVALID"),
                "not valid JSON",
            ),
            (
                "not an object",
                |l| l[0] = json!([1, 2]),
                "not a JSON object",
            ),
            (
                "missing field",
                |l| remove(&mut l[0], "golds"),
                "missing field golds",
            ),
            (
                "wrong type",
                |l| l[0]["T"] = json!("0.3"),
                "T must be a number",
            ),
            (
                "golds not strings",
                |l| l[0]["golds"] = json!([1]),
                "golds must be an array of strings",
            ),
            (
                "empty golds",
                |l| l[0]["golds"] = json!([]),
                "golds is empty",
            ),
            (
                "blank gold",
                |l| l[0]["golds"] = json!(["?!"]),
                "normalises to blanks",
            ),
            (
                "unknown category",
                |l| l[0]["category"] = json!("trivia"),
                "unknown category \"trivia\"",
            ),
            (
                "extra field",
                |l| l[0]["domain"] = json!("fintech"),
                "field \"domain\" is not in the schema",
            ),
            (
                "duplicate id",
                |l| l[1]["id"] = l[0]["id"].clone(),
                "duplicate id",
            ),
            (
                "duplicate prompt after norm",
                |l| {
                    l[1]["prompt"] = json!(l[0]["prompt"]
                        .as_str()
                        .map(|p| p.to_uppercase().replace('.', "!")))
                },
                "duplicate prompt after normalisation (first on line 1)",
            ),
            (
                "count",
                |l| {
                    l.pop();
                },
                "memory_update: 2 records, expected 3",
            ),
            (
                "T vs action",
                |l| l[0]["T"] = json!(0.5),
                "T 0.5 disagrees with target_action[1]",
            ),
            (
                "top_p vs action",
                |l| l[0]["top_p"] = json!(0.5),
                "top_p 0.5 disagrees",
            ),
            (
                "mode vs d",
                |l| l[0]["mode"] = json!("DEEP"),
                "mode DEEP disagrees with d = 0",
            ),
            (
                "mode value",
                |l| l[0]["mode"] = json!("FAST"),
                "neither DEEP nor STRICT",
            ),
            (
                "d not 0/1",
                |l| l[0]["target_action"][3] = json!(2),
                "(d) is 2, not 0 or 1",
            ),
            (
                "max_new vs L",
                |l| l[0]["max_new"] = json!(100),
                "max_new 100 disagrees",
            ),
            (
                "max_new type",
                |l| l[0]["max_new"] = json!(128.5),
                "max_new must be a non-negative integer",
            ),
            (
                "action shape",
                |l| l[0]["target_action"] = json!([0.1, 0.3]),
                "array of 5 numbers",
            ),
            (
                "two rows in a category",
                |l| set_row(&mut l[4], 0.31, 0.9),
                "differs from",
            ),
            (
                "card row",
                |l| {
                    for r in l.iter_mut().take(3) {
                        set_row(r, 0.3, 0.8)
                    }
                },
                "differs from the v1 card's",
            ),
            (
                "flag false",
                |l| l[0]["_needs_review"] = json!(false),
                "_needs_review must be true",
            ),
            (
                "flag type",
                |l| l[0]["_gold_repaired"] = json!("yes"),
                "_gold_repaired must be true",
            ),
            (
                "memory without durable",
                |l| remove(&mut l[27], "durable"),
                "missing field durable",
            ),
            (
                "stale not strings",
                |l| l[28]["stale"] = json!("1.22"),
                "stale must be an array of strings",
            ),
            (
                "annotation off memory",
                |l| l[0]["durable"] = json!(["x"]),
                "durable on simple_factual",
            ),
            (
                "empty line",
                |l| l[0] = json!("PLACEHOLDER-EMPTY"),
                "empty line",
            ),
        ];
        for (name, mutate, expected) in cases {
            let mut lines = v1_lines();
            mutate(&mut lines);
            let text: String = lines
                .iter()
                .map(|line| match line.as_str() {
                    Some("PLACEHOLDER-INVALID") => "{\"id\": \n".to_string(),
                    Some("PLACEHOLDER-EMPTY") => "\n".to_string(),
                    _ => format!("{line}\n"),
                })
                .collect();
            let dir = tempfile::tempdir().expect("temp dir");
            let path = write_text(dir.path(), &text);
            let report =
                verify_path(&path, PER_CATEGORY, &VerifyOptions::default()).expect("readable");
            assert!(
                report.problems.iter().any(|p| p.message.contains(expected)),
                "{name}: no problem containing {expected:?}; got:\n{}",
                messages(&report)
            );
        }
    }

    fn remove(record: &mut Value, key: &str) {
        if let Some(object) = record.as_object_mut() {
            object.remove(key);
        }
    }

    /// Gives `record` another consistent row: `c` and `T` changed, the rest derived.
    fn set_row(record: &mut Value, c: f64, t: f64) {
        let row = TargetRow {
            c,
            t,
            p: 0.9,
            d: 0,
            l: 128,
        };
        record["target_action"] = json!(row.target_action());
        record["T"] = json!(row.t);
        record["mode"] = json!(row.mode());
        record["max_new"] = json!(row.l);
    }

    #[test]
    fn our_rows_are_compared_only_on_request() {
        let mut lines = v1_lines();
        for record in lines.iter_mut().skip(3).take(3) {
            set_row(record, 0.31, 0.3); // bloated_factual: ours says c = 0.30
        }
        let loose = verify_lines(&lines, &VerifyOptions::default());
        assert!(loose.problems.is_empty(), "{}", messages(&loose));
        let strict = verify_lines(
            &lines,
            &VerifyOptions {
                our_rows: Some(all_rows()),
            },
        );
        assert_eq!(strict.problems.len(), 1, "{}", messages(&strict));
        assert!(strict.problems[0].message.contains("bloated_factual"));
        assert!(strict.problems[0].message.contains("differs from our row"));
        assert_eq!(strict.problems[0].line, Some(4));
    }

    #[test]
    fn a_ten_megabyte_line_is_a_problem_not_an_allocation() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("huge.jsonl");
        let mut file = File::create(&path).expect("create");
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..10 {
            file.write_all(&chunk).expect("write");
        }
        file.write_all(b"\n").expect("write");
        drop(file);
        let report = verify_path(&path, 1, &VerifyOptions::default()).expect("readable");
        assert_eq!(report.records, 1);
        assert_eq!(report.problems[0].line, Some(1));
        assert!(report.problems[0]
            .message
            .contains("10485760 bytes, over the 1048576-byte line limit"));
        assert_eq!(
            report.sha256,
            crate::util::digest::sha256_hex(&fs::read(&path).expect("read"))
        );
    }

    #[test]
    fn a_binary_file_gives_problems() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("blob.bin");
        let mut state: u32 = 12345;
        let bytes: Vec<u8> = (0..200_000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 16) as u8
            })
            .collect();
        fs::write(&path, &bytes).expect("write");
        let report = verify_path(&path, 100, &VerifyOptions::default()).expect("readable");
        assert!(report.records > 0);
        assert!(report
            .problems
            .iter()
            .any(|p| p.message.starts_with("not UTF-8 text: invalid byte")));
        assert!(report
            .problems
            .iter()
            .any(|p| p.message.contains("expected 100")));
    }

    #[test]
    fn problems_beyond_the_cap_are_counted_not_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_text(dir.path(), &"[]\n".repeat(MAX_PROBLEMS + 500));
        let report = verify_path(&path, 0, &VerifyOptions::default()).expect("readable");
        assert_eq!(report.problems.len(), MAX_PROBLEMS + 1);
        assert_eq!(
            report.problems[MAX_PROBLEMS].message,
            "500 more problems not listed"
        );
    }

    #[test]
    fn a_missing_path_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = verify_path(&dir.path().join("nope.jsonl"), 1, &VerifyOptions::default())
            .expect_err("missing");
        assert!(err.to_string().contains("nope.jsonl"));
    }

    #[test]
    fn a_folder_without_manifest_is_a_problem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let report = verify_path(dir.path(), 1, &VerifyOptions::default()).expect("readable");
        assert!(report.problems[0]
            .message
            .contains("manifest.json is missing"));
        assert_eq!(report.records, 0);
    }

    fn written_release() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = records(2);
        let written = write_release(dir.path(), &records, &info(&records, 2)).expect("written");
        (dir, written.jsonl_name)
    }

    #[test]
    fn a_record_whose_prompt_the_manifest_lists_as_flagged_must_carry_needs_review() {
        use crate::release::{FlagOutcome, FlaggedItem};
        let release = |needs_review: bool| {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut records = records(2);
            records[0].needs_review = needs_review;
            let mut info = info(&records, 2);
            info.flagged = vec![FlaggedItem {
                item_id: "author/simple_factual/0/0".to_string(),
                category: Category::SimpleFactual,
                prompt_sha256: crate::util::digest::sha256_hex(records[0].prompt.as_bytes()),
                stage: "audit".to_string(),
                reason: "panel_disagrees".to_string(),
                detail: String::new(),
                excerpt: String::new(),
                outcome: FlagOutcome::Released(records[0].id.clone()),
            }];
            write_release(dir.path(), &records, &info).expect("written");
            let report = verify_path(dir.path(), 2, &VerifyOptions::default()).expect("readable");
            (dir, report)
        };
        let (_dir, flagged) = release(true);
        assert!(flagged.problems.is_empty(), "{}", messages(&flagged));
        let (_dir, unflagged) = release(false);
        assert_eq!(unflagged.problems.len(), 1, "{}", messages(&unflagged));
        assert_eq!(unflagged.problems[0].line, Some(1));
        assert!(unflagged.problems[0]
            .message
            .contains("flagged_prompts_sha256, but the record lacks \"_needs_review\": true"));
    }

    #[test]
    fn a_folder_uses_manifest_counts_and_checks_sums() {
        let (dir, jsonl_name) = written_release();
        let clean = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert!(clean.problems.is_empty(), "{}", messages(&clean));
        let as_file = verify_path(&dir.path().join(&jsonl_name), 2, &VerifyOptions::default())
            .expect("readable");
        assert!(as_file.problems.is_empty(), "{}", messages(&as_file));

        let readme = dir.path().join("README.md");
        let mut text = fs::read_to_string(&readme).expect("card");
        text.push_str("edited\n");
        fs::write(&readme, text).expect("edit");
        let edited = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert_eq!(edited.problems.len(), 1, "{}", messages(&edited));
        assert!(edited.problems[0]
            .message
            .starts_with("README.md: SHA-256 is"));
    }

    #[test]
    fn a_changed_jsonl_fails_its_hash() {
        let (dir, jsonl_name) = written_release();
        let path = dir.path().join(&jsonl_name);
        let text = fs::read_to_string(&path)
            .expect("jsonl")
            .replacen("quota", "Quota", 1);
        fs::write(&path, text).expect("edit");
        let report = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.message.starts_with(&format!("{jsonl_name}: SHA-256 is"))),
            "{}",
            messages(&report)
        );
        assert!(
            report.problems.iter().any(|p| p
                .message
                .ends_with(&format!("{MANIFEST} says {}", report_sha(&dir)))),
            "{}",
            messages(&report)
        );
    }

    /// The JSONL hash the release's manifest states.
    fn report_sha(dir: &tempfile::TempDir) -> String {
        let text = fs::read_to_string(dir.path().join(MANIFEST)).expect("manifest");
        let manifest: Value = serde_json::from_str(&text).expect("json");
        manifest["sha256"].as_str().expect("sha256").to_string()
    }

    #[test]
    fn a_manifest_cannot_point_outside_its_folder() {
        let (dir, _) = written_release();
        let path = dir.path().join(MANIFEST);
        let mut manifest: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("manifest")).expect("json");
        manifest["prompts_file"] = json!("../elsewhere.jsonl");
        manifest["counts"]["reasoning"] = json!("many");
        fs::write(&path, manifest.to_string()).expect("edit");
        let report = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        let text = messages(&report);
        assert!(text.contains("not a file in its own folder"), "{text}");
        assert!(
            text.contains("count for reasoning is not a non-negative integer"),
            "{text}"
        );
        assert_eq!(report.records, 0);
    }

    #[test]
    fn sums_lines_are_parsed_as_sha256sum_writes_them() {
        let hash = "ab".repeat(32);
        assert_eq!(
            parse_sum_line(&format!("{hash}  a.jsonl")),
            Some((hash.clone(), "a.jsonl"))
        );
        assert_eq!(
            parse_sum_line(&format!("{hash} *./a.jsonl")),
            Some((hash.clone(), "a.jsonl"))
        );
        assert_eq!(parse_sum_line(&format!("{hash} a.jsonl")), None);
        assert_eq!(parse_sum_line("short  a.jsonl"), None);
        assert_eq!(parse_sum_line(&format!("{}  a", "zz".repeat(32))), None);
    }
}
