//! Edits of the inputs' own text: a repair changes agent.yaml, a catalogue or a graph as a person
//! would, one key or one list item, so comments and layout stay as written (nothing is parsed
//! and written back). The locators read just enough YAML (block mappings and sequences at an
//! indentation, flow collections) and JSON (which is flow syntax) to find a key's value, a
//! list's item or an object's place; what they cannot find is simply not offered as a change.
//! Then the unified diff of the edited files.

/// One replacement in one file: `delete` bytes at `offset` replaced by `insert`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edit {
    /// Byte offset in the original text.
    pub offset: usize,
    /// Bytes removed there.
    pub delete: usize,
    /// Text put in their place.
    pub insert: String,
}

/// A value found in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// A block collection: lines `[first, end)` at `indent`.
    Block {
        /// First line of the block.
        first: usize,
        /// One past its last line.
        end: usize,
        /// The children's indentation.
        indent: usize,
    },
    /// A flow collection (or JSON value) from its opening bracket to its closing one, inclusive.
    Flow {
        /// Offset of `{` or `[`.
        open: usize,
        /// Offset of the matching `}` or `]`.
        close: usize,
    },
    /// A scalar, its bytes `[start, end)`.
    Scalar {
        /// First byte.
        start: usize,
        /// One past the last.
        end: usize,
    },
    /// Nothing after the key (an empty block).
    Empty {
        /// The key's line.
        line: usize,
    },
}

/// A text's lines with their offsets.
pub struct Doc<'a> {
    /// The text.
    pub text: &'a str,
    /// Start offset of each line.
    starts: Vec<usize>,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The key a block-mapping line starts with (quotes removed), and where its value starts.
fn line_key(line: &str) -> Option<(String, usize)> {
    let ind = indent_of(line);
    let rest = &line[ind..];
    let (key, after) = if let Some(q) = rest.strip_prefix('"').or_else(|| rest.strip_prefix('\'')) {
        let quote = rest.as_bytes()[0] as char;
        let end = q.find(quote)?;
        (q[..end].to_string(), ind + 1 + end + 1)
    } else {
        let colon = rest.find(':')?;
        let k = &rest[..colon];
        if k.contains(' ') || k.contains('{') || k.starts_with('-') {
            return None;
        }
        (k.to_string(), ind + colon)
    };
    let tail = &line[after..];
    let tail = tail.strip_prefix(':')?;
    if !(tail.is_empty() || tail.starts_with(' ') || tail.starts_with('\t')) {
        return None;
    }
    Some((key, after + 1))
}

/// Skips a quoted string starting at `i` (its opening quote); returns the offset after it.
fn skip_string(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' && q == b'"' {
            j += 2;
            continue;
        }
        if b[j] == q {
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// The matching close bracket of the one at `open`.
fn matching(text: &str, open: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                i = skip_string(b, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// One entry of a flow collection: its item's bytes and, in a mapping, its key and value.
#[derive(Clone, Debug)]
pub struct Item {
    /// First byte of the item (after whitespace).
    pub start: usize,
    /// One past its last byte (before whitespace and the comma).
    pub end: usize,
    /// The key, unquoted, in a mapping.
    pub key: Option<String>,
    /// The value's first byte (in a mapping, after the colon and spaces).
    pub value: usize,
}

/// The items of the flow collection whose bracket is at `open`.
pub fn flow_items(text: &str, open: usize) -> Vec<Item> {
    let b = text.as_bytes();
    let Some(close) = matching(text, open) else {
        return vec![];
    };
    let mut items = Vec::new();
    let mut i = open + 1;
    let ws = |c: u8| c == b' ' || c == b'\n' || c == b'\r' || c == b'\t';
    loop {
        while i < close && ws(b[i]) {
            i += 1;
        }
        if i >= close {
            break;
        }
        let start = i;
        let mut key = None;
        let mut value = start;
        let mut depth = 0usize;
        while i < close {
            match b[i] {
                b'"' | b'\'' => {
                    i = skip_string(b, i);
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                b':' if depth == 0 && key.is_none() => {
                    let k = text[start..i].trim().trim_matches('"').trim_matches('\'');
                    key = Some(k.to_string());
                    value = i + 1;
                    while value < close && ws(b[value]) {
                        value += 1;
                    }
                }
                b',' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        let mut end = i;
        while end > start && ws(b[end - 1]) {
            end -= 1;
        }
        items.push(Item {
            start,
            end,
            key,
            value,
        });
        if i < close {
            i += 1; // the comma
        }
    }
    items
}

impl<'a> Doc<'a> {
    /// The document.
    pub fn new(text: &'a str) -> Doc<'a> {
        let mut starts = vec![0];
        for (i, c) in text.bytes().enumerate() {
            if c == b'\n' && i + 1 < text.len() {
                starts.push(i + 1);
            }
        }
        Doc { text, starts }
    }

    fn line(&self, n: usize) -> &'a str {
        let s = self.starts[n];
        let e = self.starts.get(n + 1).copied().unwrap_or(self.text.len());
        self.text[s..e]
            .trim_end_matches('\n')
            .trim_end_matches('\r')
    }

    fn lines(&self) -> usize {
        self.starts.len()
    }

    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// The whole YAML document as a block at indentation 0, or a JSON document's top object.
    pub fn root(&self) -> Val {
        let trimmed = self.text.trim_start_matches('\u{feff}').trim_start();
        if trimmed.starts_with('{') {
            let open = self.text.len() - trimmed.len();
            if let Some(close) = matching(self.text, open) {
                return Val::Flow { open, close };
            }
        }
        Val::Block {
            first: 0,
            end: self.lines(),
            indent: 0,
        }
    }

    /// The value of `key` in the mapping `within`.
    pub fn get(&self, within: Val, key: &str) -> Option<Val> {
        match within {
            Val::Block { first, end, indent } => {
                for n in first..end {
                    let l = self.line(n);
                    if blank(l) || indent_of(l) != indent {
                        continue;
                    }
                    let Some((k, vstart)) = line_key(l) else {
                        continue;
                    };
                    if k == key {
                        return Some(self.value_at(n, vstart, indent, end));
                    }
                }
                None
            }
            Val::Flow { open, .. } => {
                let item = flow_items(self.text, open)
                    .into_iter()
                    .find(|it| it.key.as_deref() == Some(key))?;
                Some(self.flow_value(item.value, item.end))
            }
            _ => None,
        }
    }

    fn flow_value(&self, start: usize, end: usize) -> Val {
        let b = self.text.as_bytes();
        if start < b.len() && (b[start] == b'{' || b[start] == b'[') {
            if let Some(close) = matching(self.text, start) {
                return Val::Flow { open: start, close };
            }
        }
        Val::Scalar { start, end }
    }

    /// The value of a block-mapping key on line `n` whose value text starts at column `vstart`.
    fn value_at(&self, n: usize, vstart: usize, indent: usize, end: usize) -> Val {
        let l = self.line(n);
        let rest = &l[vstart..];
        let lead = rest.len() - rest.trim_start().len();
        let v = rest.trim_start();
        let at = self.starts[n] + vstart + lead;
        if v.is_empty() || v.starts_with('#') {
            // A block below (children deeper, or a sequence at the same indentation).
            let mut m = n + 1;
            while m < end && blank(self.line(m)) {
                m += 1;
            }
            if m >= end {
                return Val::Empty { line: n };
            }
            let ci = indent_of(self.line(m));
            let seq_same = ci == indent && self.line(m)[ci..].starts_with("- ");
            if ci <= indent && !seq_same {
                return Val::Empty { line: n };
            }
            let mut last = m;
            let mut k = m;
            while k < end {
                let lk = self.line(k);
                if !blank(lk) {
                    let i = indent_of(lk);
                    if i < ci || (i == ci && seq_same && !lk[i..].starts_with("- ")) {
                        break;
                    }
                    last = k;
                }
                k += 1;
            }
            return Val::Block {
                first: m,
                end: last + 1,
                indent: ci,
            };
        }
        if v.starts_with('{') || v.starts_with('[') {
            if let Some(close) = matching(self.text, at) {
                return Val::Flow { open: at, close };
            }
        }
        // A plain scalar ends before a comment.
        let mut len = v.len();
        if !(v.starts_with('"') || v.starts_with('\'')) {
            if let Some(h) = v.find(" #") {
                len = h;
            }
        } else {
            len = skip_string(v.as_bytes(), 0).min(v.len());
        }
        let s = v[..len].trim_end();
        Val::Scalar {
            start: at,
            end: at + s.len(),
        }
    }

    /// The scalar text of a value.
    pub fn scalar(&self, v: Val) -> Option<&'a str> {
        match v {
            Val::Scalar { start, end } => {
                Some(self.text[start..end].trim_matches('"').trim_matches('\''))
            }
            _ => None,
        }
    }

    /// The items of a sequence: each item's byte span (whole line for a block item).
    pub fn seq_items(&self, v: Val) -> Vec<(String, usize, usize)> {
        match v {
            Val::Flow { open, .. } => flow_items(self.text, open)
                .into_iter()
                .map(|it| {
                    let t = self.text[it.start..it.end]
                        .trim_matches('"')
                        .trim_matches('\'')
                        .to_string();
                    (t, it.start, it.end)
                })
                .collect(),
            Val::Block { first, end, indent } => (first..end)
                .filter(|&n| {
                    let l = self.line(n);
                    !blank(l) && indent_of(l) == indent && l[indent..].starts_with("- ")
                })
                .map(|n| {
                    let l = self.line(n);
                    let t = l[indent + 2..].split(" #").next().unwrap_or("").trim();
                    let t = t.trim_matches('"').trim_matches('\'').to_string();
                    let s = self.starts[n];
                    let e = self.starts.get(n + 1).copied().unwrap_or(self.text.len());
                    (t, s, e)
                })
                .collect(),
            _ => vec![],
        }
    }

    /// The edit that removes the sequence item named `name` from `v`.
    pub fn remove_item(&self, v: Val, name: &str) -> Option<Edit> {
        let items = self.seq_items(v);
        let i = items.iter().position(|(t, _, _)| t == name)?;
        if matches!(v, Val::Block { .. }) {
            let (_, s, e) = items[i];
            return Some(Edit {
                offset: s,
                delete: e - s,
                insert: String::new(),
            });
        }
        let Val::Flow { open, close } = v else {
            return None;
        };
        let fi = flow_items(self.text, open);
        let (s, e) = if fi.len() == 1 {
            (open + 1, close)
        } else if i + 1 < fi.len() {
            (fi[i].start, fi[i + 1].start)
        } else {
            (fi[i - 1].end, fi[i].end)
        };
        Some(Edit {
            offset: s,
            delete: e - s,
            insert: String::new(),
        })
    }

    /// The flow element (a JSON object in an array) at `index` in the array `v`, as an edit that
    /// removes it with its comma.
    pub fn remove_element(&self, v: Val, index: usize) -> Option<Edit> {
        let Val::Flow { open, close } = v else {
            return None;
        };
        let fi = flow_items(self.text, open);
        let it = fi.get(index)?;
        let (s, e) = if fi.len() == 1 {
            (open + 1, close)
        } else if index + 1 < fi.len() {
            (it.start, fi[index + 1].start)
        } else {
            (fi[index - 1].end, it.end)
        };
        Some(Edit {
            offset: s,
            delete: e - s,
            insert: String::new(),
        })
    }

    /// The element at `index` of the flow array `v`.
    pub fn element(&self, v: Val, index: usize) -> Option<Val> {
        let Val::Flow { open, .. } = v else {
            return None;
        };
        let it = flow_items(self.text, open).into_iter().nth(index)?;
        Some(self.flow_value(it.start, it.end))
    }

    /// The element of array `v` (JSON objects) whose `key` is the string `value`.
    pub fn element_with(&self, v: Val, key: &str, value: &str) -> Option<Val> {
        let Val::Flow { open, .. } = v else {
            return None;
        };
        flow_items(self.text, open).into_iter().find_map(|it| {
            let e = self.flow_value(it.start, it.end);
            let k = self.get(e, key)?;
            (self.scalar(k)? == value).then_some(e)
        })
    }

    /// The edit that sets `key` to `value` (YAML text, or JSON text in a JSON document) in the
    /// mapping `within`: the scalar replaced where the key is there, else a new entry as the
    /// mapping's first (in a block, a line at the children's indentation). `None` when the key
    /// holds a collection (a person should merge that by hand).
    pub fn set(&self, within: Val, key: &str, value: &str, json: bool) -> Option<Edit> {
        if let Some(v) = self.get(within, key) {
            return match v {
                Val::Scalar { start, end } => Some(Edit {
                    offset: start,
                    delete: end - start,
                    insert: value.to_string(),
                }),
                _ => None,
            };
        }
        let entry = if json {
            format!("\"{key}\": {value}")
        } else {
            format!("{key}: {value}")
        };
        match within {
            Val::Block { first, end, indent } => {
                let n = (first..end).find(|&n| !blank(self.line(n)))?;
                if self.line(n)[indent_of(self.line(n))..].starts_with("- ") {
                    return None;
                }
                Some(Edit {
                    offset: self.starts[n],
                    delete: 0,
                    insert: format!("{}{entry}\n", " ".repeat(indent)),
                })
            }
            Val::Flow { open, close } => {
                let items = flow_items(self.text, open);
                match items.first() {
                    None => Some(Edit {
                        offset: open + 1,
                        delete: close - open - 1,
                        insert: entry,
                    }),
                    Some(first) => {
                        let fl = self.line_of(first.start);
                        if fl != self.line_of(open) {
                            // An entry on its own line, at the first entry's indentation.
                            let ls = self.starts[fl - 1];
                            let ind = &self.text[ls..first.start];
                            Some(Edit {
                                offset: ls,
                                delete: 0,
                                insert: format!("{ind}{entry},\n"),
                            })
                        } else {
                            Some(Edit {
                                offset: first.start,
                                delete: 0,
                                insert: format!("{entry}, "),
                            })
                        }
                    }
                }
            }
            Val::Empty { line } => {
                // `key:` with nothing below: a flow mapping after it.
                let l = self.line(line);
                let end = self.starts[line] + l.len();
                Some(Edit {
                    offset: end,
                    delete: 0,
                    insert: format!(" {{{entry}}}"),
                })
            }
            Val::Scalar { .. } => None,
        }
    }

    /// The edit that appends a top-level `key: {entry}` block at the end of a YAML document.
    pub fn append_top(&self, key: &str, entry: &str) -> Edit {
        let nl = if self.text.ends_with('\n') || self.text.is_empty() {
            ""
        } else {
            "\n"
        };
        Edit {
            offset: self.text.len(),
            delete: 0,
            insert: format!("{nl}{key}:\n  {entry}\n"),
        }
    }
}

/// `text` with `edits` applied (they must not overlap; at one offset, in the order given). One
/// insertion that two changes each make (a Python module's `import os` for two secrets moved
/// to the environment) is made once.
pub fn apply(text: &str, edits: &[&Edit]) -> String {
    let mut sorted: Vec<(usize, &Edit)> = edits.iter().copied().enumerate().collect();
    sorted.sort_by_key(|(i, e)| (e.offset, *i));
    let mut inserted: Vec<&Edit> = Vec::new();
    sorted.retain(|(_, e)| {
        let again = e.delete == 0 && inserted.contains(e);
        if e.delete == 0 && !again {
            inserted.push(e);
        }
        !again
    });
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (_, e) in sorted {
        if e.offset < at {
            continue; // overlapping: the earlier edit won (never offered together)
        }
        out.push_str(&text[at..e.offset]);
        out.push_str(&e.insert);
        at = e.offset + e.delete;
    }
    out.push_str(&text[at.min(text.len())..]);
    out
}

/// A unified diff of one file (`git apply` reads it), three lines of context, as `diff -u`.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    // The edit script by the longest common subsequence (the inputs are small).
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // Ops: (tag, a index, b index).
    let mut ops: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', i, j));
            i += 1;
        } else {
            ops.push(('+', i, j));
            j += 1;
        }
    }
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let ctx = 3;
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let mut k = 0;
    while k < changed.len() {
        let lo = changed[k].saturating_sub(ctx);
        let mut hi = changed[k];
        while k < changed.len() && changed[k] <= hi + 2 * ctx + 1 {
            hi = changed[k];
            k += 1;
        }
        let hi = (hi + ctx).min(ops.len() - 1);
        let span = &ops[lo..=hi];
        let a_start = span[0].1;
        let b_start = span[0].2;
        let a_len = span.iter().filter(|o| o.0 != '+').count();
        let b_len = span.iter().filter(|o| o.0 != '-').count();
        let start = |s: usize, len: usize| if len == 0 { s } else { s + 1 };
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            start(a_start, a_len),
            a_len,
            start(b_start, b_len),
            b_len
        ));
        for &(t, ai, bj) in span {
            let line = if t == '+' { b[bj] } else { a[ai] };
            out.push(t);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAT: &str = "# a comment\ntools:\n  get_order:\n    effect: read\n    args: {type: object}\n  refund:\n    effect: write   # money\n    trust: external\n  ping: {effect: read, args: {type: object}}\n";

    #[test]
    fn a_block_key_is_replaced_or_inserted_and_comments_stay() {
        let d = Doc::new(CAT);
        let tools = d.get(d.root(), "tools").unwrap();
        let refund = d.get(tools, "refund").unwrap();
        assert_eq!(d.scalar(d.get(refund, "effect").unwrap()), Some("write"));
        let e = d.set(refund, "trust", "agent", false).unwrap();
        let out = apply(CAT, &[&e]);
        assert!(out.contains("    trust: agent\n"), "{out}");
        assert!(out.contains("effect: write   # money"));
        let e = d
            .set(refund, "requires_confirmation", "true", false)
            .unwrap();
        let out = apply(CAT, &[&e]);
        assert!(
            out.contains("  refund:\n    requires_confirmation: true\n    effect: write"),
            "{out}"
        );
        // A flow mapping gets the entry first.
        let ping = d.get(tools, "ping").unwrap();
        let e = d.set(ping, "requires_confirmation", "true", false).unwrap();
        let out = apply(CAT, &[&e]);
        assert!(
            out.contains("ping: {requires_confirmation: true, effect: read"),
            "{out}"
        );
        // Replacing a flow key.
        let e = d.set(ping, "effect", "write", false).unwrap();
        assert!(apply(CAT, &[&e]).contains("ping: {effect: write, args"));
    }

    #[test]
    fn sequence_items_and_json_elements_are_removed_with_their_commas() {
        let y = "agents:\n  desk:\n    tools: [a, b, c]\n    hands_off_to:\n      - x\n      - y\n";
        let d = Doc::new(y);
        let desk = d.get(d.get(d.root(), "agents").unwrap(), "desk").unwrap();
        let tools = d.get(desk, "tools").unwrap();
        for (name, want) in [("a", "[b, c]"), ("b", "[a, c]"), ("c", "[a, b]")] {
            let out = apply(y, &[&d.remove_item(tools, name).unwrap()]);
            assert!(out.contains(want), "{name}: {out}");
        }
        let h = d.get(desk, "hands_off_to").unwrap();
        let out = apply(y, &[&d.remove_item(h, "x").unwrap()]);
        assert!(out.ends_with("hands_off_to:\n      - y\n"), "{out}");
        let j = "{\n \"edges\": [\n  {\"from\": \"a\"},\n  {\"from\": \"b\"}\n ],\n \"nodes\": [\n  {\n   \"id\": \"t\",\n   \"guarded\": false\n  }\n ]\n}\n";
        let d = Doc::new(j);
        let edges = d.get(d.root(), "edges").unwrap();
        let out = apply(j, &[&d.remove_element(edges, 1).unwrap()]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["edges"].as_array().unwrap().len(), 1);
        let out = apply(j, &[&d.remove_element(edges, 0).unwrap()]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["edges"][0]["from"], "b");
        let nodes = d.get(d.root(), "nodes").unwrap();
        let t = d.element_with(nodes, "id", "t").unwrap();
        let out = apply(j, &[&d.set(t, "guarded", "true", true).unwrap()]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["nodes"][0]["guarded"], true);
        let out = apply(j, &[&d.set(t, "trust", "\"agent\"", true).unwrap()]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["nodes"][0]["trust"], "agent");
    }

    #[test]
    fn the_unified_diff_has_hunks_git_reads() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n";
        let d = unified("x.yaml", old, new);
        assert_eq!(
            d,
            "--- a/x.yaml\n+++ b/x.yaml\n@@ -1,10 +1,11 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n i\n j\n+k\n"
        );
        assert_eq!(unified("x", "a\n", "a\n"), "");
    }
}
