//! What a release folder states about its JSONL: the manifest's facts (prompts file, counts,
//! flagged prompts) and the `SHA256SUMS` lines, each checked against the file itself.

use super::*;

/// The manifest's list of flagged prompts' SHA-256 hashes.
pub(super) const FLAGGED_PROMPTS: &str = "flagged_prompts_sha256";

pub(super) struct ManifestFacts {
    pub(super) prompts_file: Option<String>,
    pub(super) counts: Option<BTreeMap<Category, usize>>,
    pub(super) sha256: Option<String>,
    /// `flagged_prompts_sha256`: prompts a record may carry only with `_needs_review: true`.
    pub(super) flagged_prompts: HashSet<String>,
}

pub(super) fn read_manifest(
    dir: &Path,
    problems: &mut Problems,
) -> Result<ManifestFacts, VerifyError> {
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

pub(super) fn manifest_counts(
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
pub(super) fn read_side_file(
    path: &Path,
    problems: &mut Problems,
) -> Result<Option<Vec<u8>>, VerifyError> {
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

pub(super) fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

/// Compares every file `SHA256SUMS` lists (when the folder has one) with its content.
pub(super) fn check_sums(dir: &Path, jsonl: &Path, jsonl_sha: &str, problems: &mut Problems) {
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
pub(super) fn parse_sum_line(line: &str) -> Option<(String, &str)> {
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

pub(super) fn hash_file(path: &Path) -> io::Result<String> {
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
