//! Source edits that remove what a code rule fires on, for `qls repair` (docs/repair.md): each
//! is a byte range of the file and its replacement, located on the syntax tree the checks read
//! (the same parse, `lang::parse`), at the place of a hit the rules found (`checks::run`), so an
//! edit is offered only where its rule fires and removes exactly that. An edit keeps the file's
//! layout (no line is added; only the `NODE_TLS_REJECT_UNAUTHORIZED` statement is removed with
//! its line) and changes nothing the code does beyond the flagged property:
//!
//! - QC003: TLS verification back on — Python `verify=False` → `verify=True` (also
//!   `session.verify = False`), aiohttp's `ssl=False` removed, Go `InsecureSkipVerify: true` →
//!   `false`, Node `rejectUnauthorized`/`strictSSL: false` → `true`, a
//!   `NODE_TLS_REJECT_UNAUTHORIZED = '0'` statement removed. Each restores the library's default.
//! - QC004: `http://` → `https://`, only when the URL names no port (a port says where a plain
//!   server listens; TLS on it is not known).
//! - QC005: a timeout of 30 s added where the rule found none (Python `timeout=30`, or `None`
//!   replaced; axios `timeout: 30000` in the request's config; a Go `http.Client{}` literal's
//!   `Timeout: 30 * time.Second` when the file imports `time`).
//! - QC008: a Python `subprocess` call with `shell=True` whose command is an f-string of plain
//!   words becomes the argument list the shell would have split it into, without `shell=True`:
//!   each word a string (an f-string when it holds a value), so the program and its constant
//!   arguments are the same and only the shell's reading of the values (splitting, globbing,
//!   metacharacters) is gone; with a `--` before the first word a value begins, where
//!   `options.rs`'s conditions hold, so no value is read as an option either (QC105).
//! - QC105: a `--` element before the first element of a command's list a value can begin
//!   (`options.rs`: only for a program that reads its own options, with no option name just
//!   before it and no constant option after it).
//!
//! - QC001, QC002, QC006: the secret moved to an environment variable, QC007: a logged
//!   credential replaced by `[redacted]` (`secrets.rs`, which says how; each checked by
//!   re-parsing and re-checking the edited text before it is offered).
//!
//! A form with no edit here (an unverified SSL context, `check_hostname`, a template's URL with a
//! port, a command with quotes or shell syntax, Go's `http.Get`…) is not offered: the repair
//! lists it as outside its space.

use crate::checks;
use crate::effects::FileCtx;
use crate::lang::{self, all_children, children};
use crate::rules::CodeRule;
use crate::Hit;
use ir::code::Language;
use tree_sitter::Node;

/// One replacement: bytes `[start, end)` of the file replaced by `insert`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    /// First byte replaced.
    pub start: usize,
    /// One past the last byte replaced.
    pub end: usize,
    /// The text put there.
    pub insert: String,
}

/// An edit of the source that removes one code finding: the finding's rule and place, the
/// replacements, and what it does in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFix {
    /// The rule whose finding the edit removes.
    pub rule: CodeRule,
    /// The finding's 1-based line.
    pub line: u32,
    /// The finding's 1-based column, in characters.
    pub column: u32,
    /// The replacements, in the file's order, none overlapping.
    pub edits: Vec<TextEdit>,
    /// What the edit does (`` `verify=False` → `verify=True` ``).
    pub what: String,
}

/// The seconds a QC005 edit waits for an answer: long enough for any API a tool calls, short
/// enough that a hung server does not hold the agent's turn.
pub const TIMEOUT_SECONDS: u32 = 30;

/// Every source edit offered for `text`'s code findings (none for a file with syntax errors: a
/// recovered tree is not one an edit can trust).
pub fn fixes(lang: Language, text: &str) -> Vec<SourceFix> {
    let Ok(tree) = lang::parse(lang, text) else {
        return vec![];
    };
    let root = tree.root_node();
    if root.has_error() {
        return vec![];
    }
    let Ok(unit) = lang::walk(lang, text) else {
        return vec![];
    };
    let cx = FileCtx::new(lang, &unit);
    let mut hits = checks::run(&cx);
    hits.sort_by_key(|h| (h.at.byte, h.rule));
    hits.dedup_by_key(|h| (h.at.byte, h.rule));
    let f = Fixer { text, lang, root };
    let mut out = Vec::new();
    for h in &hits {
        let found = match h.rule {
            CodeRule::TlsOff => f.tls(h.at.byte),
            CodeRule::PlainHttp => f.https(h.at.byte),
            CodeRule::NoTimeout => f.timeout(h.at.byte),
            CodeRule::ShellInjection => f.argv(&cx, h.at.byte),
            CodeRule::ProviderKey | CodeRule::UrlCredentials => f.secret_literal(h.rule, h.at.byte),
            CodeRule::SecretLiteral => f.secret_value(h.at.byte),
            CodeRule::LoggedCredential => f.redact(h.at.byte),
            _ => None,
        };
        if let Some((mut edits, what)) = found {
            edits.sort_by_key(|e| e.start);
            if edits.windows(2).any(|w| w[0].end > w[1].start) {
                continue;
            }
            if secrets::rechecked(h.rule) && !closes(lang, text, &hits, h.rule, &edits) {
                continue;
            }
            out.push(SourceFix {
                rule: h.rule,
                line: h.at.line,
                column: h.at.col,
                edits,
                what,
            });
        }
    }
    // QC105 is found against the catalogue (which argument reaches the list), which this
    // function does not read: its edit is offered at every process call whose list takes one,
    // and the repair keeps it only where a QC105 finding stands at that place.
    for c in &unit.calls {
        if let Some((edits, what)) = f.end_options(&cx, c.at.byte) {
            out.push(SourceFix {
                rule: CodeRule::ArgumentInjection,
                line: c.at.line,
                column: c.at.col,
                edits,
                what,
            });
        }
    }
    out
}

/// Whether `edits` leave a file that parses without error and on which the checks find one
/// `rule` finding fewer and no other finding more: the guard of the edits whose form depends on
/// where the literal stands (a string moved to an expression, a value cut out of a log line),
/// so an edit that would not parse or would not close its finding is never offered.
fn closes(lang: Language, text: &str, before: &[Hit], rule: CodeRule, edits: &[TextEdit]) -> bool {
    let after = apply(text, edits);
    let Ok(tree) = lang::parse(lang, &after) else {
        return false;
    };
    if tree.root_node().has_error() {
        return false;
    }
    let Ok(unit) = lang::walk(lang, &after) else {
        return false;
    };
    let mut now = checks::run(&FileCtx::new(lang, &unit));
    now.sort_by_key(|h| (h.at.byte, h.rule));
    now.dedup_by_key(|h| (h.at.byte, h.rule));
    let count = |hs: &[Hit], r: CodeRule| hs.iter().filter(|h| h.rule == r).count();
    CodeRule::ALL.iter().all(|&r| {
        let (was, is) = (count(before, r), count(&now, r));
        if r == rule {
            is < was
        } else {
            is <= was
        }
    })
}

/// Applies edits (sorted, not overlapping) to `text`.
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.insert);
        at = e.end;
    }
    out.push_str(&text[at..]);
    out
}

type Found = Option<(Vec<TextEdit>, String)>;

/// The syntax tree an edit is located on, with its text.
struct Fixer<'t> {
    text: &'t str,
    lang: Language,
    root: Node<'t>,
}

fn edit(n: Node, insert: &str) -> TextEdit {
    TextEdit {
        start: n.start_byte(),
        end: n.end_byte(),
        insert: insert.to_string(),
    }
}

fn insert_at(at: usize, insert: &str) -> TextEdit {
    TextEdit {
        start: at,
        end: at,
        insert: insert.to_string(),
    }
}

impl<'t> Fixer<'t> {
    fn of(&self, n: Node) -> &'t str {
        &self.text[n.byte_range()]
    }

    /// The nodes of one of `kinds` that start at `byte`, smallest first.
    fn starting_at(&self, byte: usize, kinds: &[&str]) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        let mut n = self.root.descendant_for_byte_range(byte, byte);
        while let Some(x) = n {
            if x.start_byte() != byte {
                break;
            }
            if kinds.contains(&x.kind()) {
                out.push(x);
            }
            n = x.parent();
        }
        out
    }

    /// The arguments of a call node (comments aside).
    fn args(&self, call: Node<'t>) -> Vec<Node<'t>> {
        call.child_by_field_name("arguments")
            .map(children)
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a.kind() != "comment")
            .collect()
    }

    /// Python's keyword argument `name` of a call, with its value.
    fn kwarg(&self, call: Node<'t>, name: &str) -> Option<(Node<'t>, Node<'t>)> {
        self.args(call).into_iter().find_map(|a| {
            let k = a.child_by_field_name("name")?;
            (a.kind() == "keyword_argument" && self.of(k) == name)
                .then(|| a.child_by_field_name("value"))
                .flatten()
                .map(|v| (a, v))
        })
    }

    /// Removes an argument with the comma that joins it to its neighbour.
    fn remove_arg(&self, call: Node<'t>, arg: Node<'t>) -> Option<TextEdit> {
        let args = self.args(call);
        let i = args.iter().position(|a| a.id() == arg.id())?;
        let (start, end) = if i > 0 {
            (args[i - 1].end_byte(), arg.end_byte())
        } else if let Some(next) = args.get(1) {
            (arg.start_byte(), next.start_byte())
        } else {
            (arg.start_byte(), arg.end_byte())
        };
        Some(TextEdit {
            start,
            end,
            insert: String::new(),
        })
    }

    /// QC003 at `byte`.
    fn tls(&self, byte: usize) -> Found {
        match self.lang {
            Language::Python => {
                if let Some(call) = self.starting_at(byte, &["call"]).into_iter().next() {
                    let mut edits = Vec::new();
                    let mut what = Vec::new();
                    for a in self.args(call) {
                        let (Some(k), Some(v)) = (
                            a.child_by_field_name("name"),
                            a.child_by_field_name("value"),
                        ) else {
                            continue;
                        };
                        match (self.of(k), v.kind()) {
                            ("verify", "false") => {
                                edits.push(edit(v, "True"));
                                what.push("`verify=False` → `verify=True`");
                            }
                            ("ssl", "false") => {
                                edits.push(self.remove_arg(call, a)?);
                                what.push("`ssl=False` removed");
                            }
                            // A form with no edit here: the finding would stay.
                            ("cert_reqs", _) => return None,
                            _ => {}
                        }
                    }
                    let callee = call.child_by_field_name("function").map(|f| self.of(f));
                    if callee.is_some_and(|c| c.ends_with("_create_unverified_context"))
                        || edits.is_empty()
                    {
                        return None;
                    }
                    return Some((edits, what.join(", ")));
                }
                // `session.verify = False`.
                let a = self.starting_at(byte, &["assignment"]).into_iter().next()?;
                let (l, r) = (
                    a.child_by_field_name("left")?,
                    a.child_by_field_name("right")?,
                );
                (l.kind() == "attribute"
                    && l.child_by_field_name("attribute").map(|x| self.of(x)) == Some("verify")
                    && r.kind() == "false")
                    .then(|| {
                        (
                            vec![edit(r, "True")],
                            format!("`{} = False` → `True`", self.of(l)),
                        )
                    })
            }
            Language::Go => {
                let n = self
                    .starting_at(byte, &["keyed_element", "assignment_statement"])
                    .into_iter()
                    .next()?;
                let v = last_leaf(n)?;
                (v.kind() == "true").then(|| {
                    (
                        vec![edit(v, "false")],
                        "`InsecureSkipVerify: true` → `false`".to_string(),
                    )
                })
            }
            _ => {
                if let Some(p) = self.starting_at(byte, &["pair"]).into_iter().next() {
                    let v = p.child_by_field_name("value")?;
                    let k = p.child_by_field_name("key").map(|k| self.of(k))?;
                    let k = k.trim_matches(['"', '\'']);
                    return (v.kind() == "false")
                        .then(|| (vec![edit(v, "true")], format!("`{k}: false` → `{k}: true`")));
                }
                // `process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'`: the statement removed.
                let a = self
                    .starting_at(byte, &["assignment_expression"])
                    .into_iter()
                    .next()?;
                let stmt = a.parent().filter(|s| s.kind() == "expression_statement")?;
                Some((
                    vec![self.remove_statement(stmt)],
                    "the `NODE_TLS_REJECT_UNAUTHORIZED = '0'` statement removed".into(),
                ))
            }
        }
    }

    /// A statement's bytes, with its whole line when nothing else is on it.
    fn remove_statement(&self, stmt: Node) -> TextEdit {
        let (s, e) = (stmt.start_byte(), stmt.end_byte());
        let line_start = self.text[..s].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = self.text[e..]
            .find('\n')
            .map(|i| e + i + 1)
            .unwrap_or(self.text.len());
        let alone =
            self.text[line_start..s].trim().is_empty() && self.text[e..line_end].trim().is_empty();
        if alone {
            TextEdit {
                start: line_start,
                end: line_end,
                insert: String::new(),
            }
        } else {
            TextEdit {
                start: s,
                end: e,
                insert: String::new(),
            }
        }
    }

    /// QC004 at `byte`: each literal part starting with the flagged `http://` URL, when that URL
    /// names no port.
    fn https(&self, byte: usize) -> Found {
        let kinds = [
            "string",
            "template_string",
            "string_fragment",
            "interpreted_string_literal",
            "raw_string_literal",
        ];
        let lit = self.starting_at(byte, &kinds).into_iter().last()?;
        let mut edits = Vec::new();
        let mut hosts = Vec::new();
        let mut leaves = Vec::new();
        collect_leaves(lit, &mut leaves);
        for leaf in leaves {
            let raw = self.of(leaf);
            // A leaf that is the whole literal carries its quotes.
            let body = raw.trim_start_matches(['"', '\'', '`']);
            let lead = raw.len() - body.len();
            let t = body.trim_start();
            let Some(host) = checks::plain_http_host(t.trim_end_matches(['"', '\'', '`'])) else {
                continue;
            };
            if has_port(t) {
                return None; // the finding would stay
            }
            let at = leaf.start_byte() + lead + (body.len() - t.len());
            edits.push(TextEdit {
                start: at,
                end: at + "http://".len(),
                insert: "https://".into(),
            });
            hosts.push(host.to_string());
        }
        if edits.is_empty() {
            return None;
        }
        hosts.dedup();
        Some((
            edits,
            format!("`http://{}` → `https://`", hosts.join("`, `http://")),
        ))
    }

    /// QC005 at `byte`.
    fn timeout(&self, byte: usize) -> Found {
        match self.lang {
            Language::Python => {
                let call = self.starting_at(byte, &["call"]).into_iter().next()?;
                if let Some((_, v)) = self.kwarg(call, "timeout") {
                    return (v.kind() == "none").then(|| {
                        (
                            vec![edit(v, &TIMEOUT_SECONDS.to_string())],
                            format!("`timeout=None` → `timeout={TIMEOUT_SECONDS}`"),
                        )
                    });
                }
                let args = self.args(call);
                let last = args.last()?;
                if args
                    .iter()
                    .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
                    || last.kind() == "generator_expression"
                {
                    return None;
                }
                Some((
                    vec![insert_at(
                        last.end_byte(),
                        &format!(", timeout={TIMEOUT_SECONDS}"),
                    )],
                    format!("`timeout={TIMEOUT_SECONDS}` added"),
                ))
            }
            Language::Go => {
                let lit = self
                    .starting_at(byte, &["composite_literal"])
                    .into_iter()
                    .next()?;
                if !self.imports("time") {
                    return None;
                }
                let body = lit.child_by_field_name("body")?;
                let field = format!("Timeout: {TIMEOUT_SECONDS} * time.Second");
                let e = match children(body).into_iter().find(|c| c.kind() != "comment") {
                    Some(first) => insert_at(first.start_byte(), &format!("{field}, ")),
                    None => insert_at(body.start_byte() + 1, &field),
                };
                Some((vec![e], format!("`{field}` added to the client")))
            }
            _ => {
                let call = self
                    .starting_at(byte, &["call_expression"])
                    .into_iter()
                    .next()?;
                let callee = self.of(call.child_by_field_name("function")?);
                let args = self.args(call);
                let method = callee.rsplit('.').next().unwrap_or(callee);
                let at = match method {
                    "get" | "delete" | "head" | "options" => 1,
                    "post" | "put" | "patch" | "postForm" | "putForm" | "patchForm" => 2,
                    "request" => 0,
                    _ if !callee.contains('.') => {
                        usize::from(args.first().is_none_or(|a| a.kind() != "object"))
                    }
                    _ => return None,
                };
                if args.is_empty() || args.iter().any(|a| a.kind() == "spread_element") {
                    return None;
                }
                let prop = format!("timeout: {}", TIMEOUT_SECONDS * 1000);
                let e = match args.get(at) {
                    Some(o) if o.kind() == "object" => {
                        match children(*o).into_iter().find(|c| c.kind() != "comment") {
                            Some(first) => insert_at(first.start_byte(), &format!("{prop}, ")),
                            None => insert_at(o.start_byte() + 1, &format!(" {prop} ")),
                        }
                    }
                    Some(_) => return None, // a config the code builds elsewhere
                    None => {
                        let fill = ", undefined".repeat(at - args.len());
                        let last = args.last()?;
                        insert_at(last.end_byte(), &format!("{fill}, {{ {prop} }}"))
                    }
                };
                Some((
                    vec![e],
                    format!("`{prop}` (ms) added to the request's config"),
                ))
            }
        }
    }

    /// Whether the Go file imports `path` (`time`, `os`) under its own name.
    fn imports(&self, path: &str) -> bool {
        let quoted = format!("\"{path}\"");
        let mut found = false;
        lang::each_node(self.root, &mut |n| {
            if n.kind() == "import_spec"
                && n.child_by_field_name("name").is_none()
                && n.child_by_field_name("path").map(|p| self.of(p)) == Some(quoted.as_str())
            {
                found = true;
            }
        });
        found
    }

    /// QC008 at `byte`: a Python `subprocess` call with `shell=True` and an f-string of plain
    /// words, rewritten to its argument list without the shell.
    fn argv(&self, cx: &FileCtx, byte: usize) -> Found {
        if self.lang != Language::Python {
            return None;
        }
        let subprocess = [
            "subprocess.run",
            "subprocess.call",
            "subprocess.check_call",
            "subprocess.check_output",
            "subprocess.Popen",
        ];
        cx.unit
            .calls
            .iter()
            .find(|c| c.at.byte == byte && subprocess.contains(&c.callee.as_str()))?;
        let call = self.starting_at(byte, &["call"]).into_iter().next()?;
        let args = self.args(call);
        let (shell_arg, shell) = self.kwarg(call, "shell")?;
        if shell.kind() != "true"
            || self.kwarg(call, "executable").is_some()
            || args
                .iter()
                .filter(|a| a.kind() != "keyword_argument")
                .count()
                != 1
            || args
                .iter()
                .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
        {
            return None;
        }
        let cmd = args[0];
        let list = self.words(cmd)?;
        let mut edits = vec![edit(cmd, &list), self.remove_arg(call, shell_arg)?];
        edits.sort_by_key(|e| e.start);
        Some((
            edits,
            format!("`shell=True` removed, the command given as its words `{list}`"),
        ))
    }

    /// An f-string of plain words as the Python list the shell would split it into; `None` when
    /// a word has shell syntax (quotes, escapes, globs, variables, redirections, `=` in the
    /// program's place) or the program is a shell builtin or not a constant.
    fn words(&self, s: Node) -> Option<String> {
        if s.kind() != "string" {
            return None;
        }
        let parts = all_children(s);
        let start = parts.first().filter(|p| p.kind() == "string_start")?;
        let opener = self.of(*start);
        let quote = opener.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let prefix = &opener[..opener.len() - quote.len()];
        if !prefix.contains(['f', 'F']) || prefix.contains(['b', 'B']) || quote.len() != 1 {
            return None;
        }
        // Each word: its text as written and whether it holds a value.
        let mut words: Vec<(String, bool)> = vec![];
        let mut cur = String::new();
        let mut valued = false;
        for p in &parts[1..] {
            match p.kind() {
                "string_end" => break,
                "interpolation" => {
                    cur.push_str(self.of(*p));
                    valued = true;
                }
                "string_content" => {
                    if !children(*p).is_empty() {
                        return None; // an escape sequence
                    }
                    for ch in self.of(*p).chars() {
                        if ch.is_whitespace() {
                            if !cur.is_empty() {
                                words.push((std::mem::take(&mut cur), valued));
                            }
                            valued = false;
                        } else if ch.is_ascii_alphanumeric() || "-_./:,@%+=".contains(ch) {
                            cur.push(ch);
                        } else {
                            return None;
                        }
                    }
                }
                _ => return None,
            }
        }
        if !cur.is_empty() {
            words.push((cur, valued));
        }
        let (program, false) = words.first()? else {
            return None;
        };
        if program.contains('=') || SHELL_WORDS.contains(&program.as_str()) {
            return None;
        }
        let mut items: Vec<String> = words
            .iter()
            .map(|(w, valued)| {
                let p = if *valued { prefix } else { "" };
                format!("{p}{quote}{w}{quote}")
            })
            .collect();
        // A value the shell split into a word of its own is, without the shell, an element a
        // value starting with `-` turns into an option (QC105): a `--` before the first such
        // word, where it changes nothing else (`options.rs`'s conditions).
        let open = |(w, valued): &(String, bool)| {
            *valued
                && w.split('{')
                    .next()
                    .is_some_and(|c| c.chars().all(|x| x == '-'))
        };
        let option = |(w, valued): &(String, bool)| !*valued && w.starts_with('-');
        if let Some(i) = words.iter().position(open) {
            let plain = crate::argv::plain_program(&crate::argv::program_base(program));
            let ended = words[..i].iter().any(|(w, v)| !*v && w == "--");
            // An option name awaiting its value: a `-` word without `=`.
            let (before, _) = &words[i - 1];
            let option_name = before.starts_with('-') && !before.contains('=');
            if plain && !ended && !option_name && !words[i + 1..].iter().any(option) {
                items.insert(i, format!("{quote}--{quote}"));
            }
        }
        Some(format!("[{}]", items.join(", ")))
    }
}

/// Shell builtins and keywords: without a shell they do not run as they did.
const SHELL_WORDS: &[&str] = &[
    "cd", "echo", "export", "source", ".", "exit", "set", "unset", "ulimit", "type", "alias",
    "eval", "exec", "read", "test", "[", "if", "for", "while", "case", "time", "umask", "trap",
    "wait", "kill", "printf", "pwd", "command", "builtin", "let", "local", "shift", "return",
];

/// The leaves of a literal: the nodes with no named child (its fragments and contents).
fn collect_leaves<'a>(n: Node<'a>, out: &mut Vec<Node<'a>>) {
    let kids: Vec<Node> = children(n)
        .into_iter()
        .filter(|c| {
            !matches!(
                c.kind(),
                "interpolation" | "template_substitution" | "escape_sequence"
            )
        })
        .collect();
    if kids.is_empty() {
        out.push(n);
    } else {
        kids.into_iter().for_each(|c| collect_leaves(c, out));
    }
}

/// The last leaf of a node (a keyed element's or an assignment's value).
fn last_leaf(n: Node) -> Option<Node> {
    let mut cur = n;
    while let Some(c) = children(cur).into_iter().last() {
        cur = c;
    }
    (cur.id() != n.id()).then_some(cur)
}

/// Whether an `http://` URL names a port (`http://api.shop.com:8080/x`).
fn has_port(url: &str) -> bool {
    let rest = &url["http://".len().min(url.len())..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let after_brackets = host_port.rsplit(']').next().unwrap_or(host_port);
    after_brackets.contains(':')
}

/// `text` fixed by every edit offered for it (for the tests).
#[cfg(test)]
fn fixed(lang: Language, text: &str) -> (String, Vec<SourceFix>) {
    let fx = fixes(lang, text);
    let mut all: Vec<TextEdit> = fx.iter().flat_map(|f| f.edits.clone()).collect();
    all.sort_by_key(|e| e.start);
    (apply(text, &all), fx)
}

mod options;
mod secrets;
#[cfg(test)]
mod tests;
