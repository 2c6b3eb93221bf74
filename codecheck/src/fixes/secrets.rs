//! The source edits for a secret in the source and a credential in a log:
//!
//! - QC001 (a provider key), QC002 (a secret-looking literal bound to a credential-like name),
//!   QC006 (a password in a URL): the secret *moved to an environment variable* — the literal
//!   replaced by a read of the variable in the file's language (Python `os.environ['NAME']`,
//!   with `import os` added as the module's first import when it binds no `os`; JavaScript and
//!   TypeScript `process.env.NAME`; Go `os.Getenv("NAME")` when the file imports `os` and the
//!   literal is not in a `const`). A key or a password that is only part of a string makes the
//!   string an f-string (Python) or a template literal (JavaScript) with the read in its place;
//!   Go's partial literals and a tagged template's text are not edited. NAME is the provider's conventional variable for a
//!   key (`secrets::provider_env`), the SCREAMING_SNAKE_CASE of the name a QC002 literal is
//!   bound to (`clientSecret` → `CLIENT_SECRET`), and the URL's host with `_PASSWORD` for a
//!   password. The edit keeps the program's behaviour where the variable holds the value; the
//!   leaked value itself stays in the history, which is why the edit says to rotate it.
//! - QC007: the log line *says the credential is used, not what it is* — each credential read
//!   the logging call puts in its line (an f-string's `{api_key}`, a template's `${apiKey}`, an
//!   argument `api_key`, an operand of `+` or `%`) replaced by the constant `[redacted]`.
//!
//! Where a literal stands decides whether the replacement is an expression there (a dict key, a
//! type, a JSX attribute, a docstring), so every edit here is checked by `fixes` itself: the
//! edited text re-parsed without error and the checks re-run on it, the finding gone and no
//! other one added ([`rechecked`]); an edit that fails is not offered.

use super::{edit, insert_at, Fixer, Found, TextEdit};
use crate::lang::{all_children, children};
use crate::rules::CodeRule;
use crate::secrets as known;
use ir::code::Language;
use std::ops::Range;
use tree_sitter::Node;

/// What a log line says in place of a credential's value.
pub const REDACTED: &str = "[redacted]";

/// Whether `fixes` re-parses and re-checks a rule's edit before offering it (the edits here).
pub(super) fn rechecked(rule: CodeRule) -> bool {
    matches!(
        rule,
        CodeRule::ProviderKey
            | CodeRule::SecretLiteral
            | CodeRule::UrlCredentials
            | CodeRule::LoggedCredential
    )
}

/// The words of a secret's move (the repair's report quotes them).
fn moved(name: &str) -> String {
    format!("the secret read from the environment variable {name}; set it where the tool runs and rotate the leaked value (it stays in the history)")
}

/// Node kinds that are a name or a path of attributes (`api_key`, `self.token`, `cfg.Password`).
const PATHS: &[&str] = &[
    "identifier",
    "attribute",
    "member_expression",
    "selector_expression",
];

impl<'t> Fixer<'t> {
    /// QC001 or QC006 at `byte`: the literal's key, or its URL's password, moved to a variable.
    pub(super) fn secret_literal(&self, rule: CodeRule, byte: usize) -> Found {
        let kinds = [
            "string",
            "string_fragment",
            "interpreted_string_literal",
            "raw_string_literal",
        ];
        let lit = self.starting_at(byte, &kinds).into_iter().next()?;
        let (name, span) = self.parts(lit).into_iter().find_map(|part| {
            let t = &self.text[part.clone()];
            let (name, r) = if rule == CodeRule::ProviderKey {
                let (p, r) = known::provider_key_at(t)?;
                (known::provider_env(p)?.to_string(), r)
            } else {
                let lead = t.len() - t.trim_start().len();
                let url = t.trim();
                let r = known::url_password_at(url)?;
                let host = known::env_name(&known::url_host(url)?.replace('.', "_"))?;
                (format!("{host}_PASSWORD"), r.start + lead..r.end + lead)
            };
            Some((name, part.start + r.start..part.start + r.end))
        })?;
        let edits = self.to_env(lit, span, &name)?;
        Some((edits, moved(&name)))
    }

    /// QC002 at `byte`: the assignment's, keyword's, entry's or field's string value moved to
    /// the variable its name says.
    pub(super) fn secret_value(&self, byte: usize) -> Found {
        let (kinds, fields): (&[&str], &[(&str, &str, &str)]) = match self.lang {
            Language::Python => (
                &["assignment", "keyword_argument", "pair"],
                &[
                    ("assignment", "left", "right"),
                    ("keyword_argument", "name", "value"),
                    ("pair", "key", "value"),
                ],
            ),
            Language::Go => (
                &[
                    "keyed_element",
                    "var_spec",
                    "short_var_declaration",
                    "assignment_statement",
                ],
                &[
                    ("var_spec", "name", "value"),
                    ("short_var_declaration", "left", "right"),
                    ("assignment_statement", "left", "right"),
                ],
            ),
            _ => (
                &["variable_declarator", "assignment_expression", "pair"],
                &[
                    ("variable_declarator", "name", "value"),
                    ("assignment_expression", "left", "right"),
                    ("pair", "key", "value"),
                ],
            ),
        };
        let n = self.starting_at(byte, kinds).into_iter().next()?;
        let (key, value) = if n.kind() == "keyed_element" {
            match &children(n)[..] {
                [k, v] => (element(*k), element(*v)),
                _ => return None,
            }
        } else {
            let (_, k, v) = fields.iter().find(|(kind, _, _)| *kind == n.kind())?;
            (n.child_by_field_name(k)?, n.child_by_field_name(v)?)
        };
        // One name bound to one value (`a, b = …` and `x, y := …` aside).
        let (key, value) = (single(key)?, single(value)?);
        let plain = match value.kind() {
            "string" => !all_children(value)
                .iter()
                .any(|c| c.kind() == "interpolation"),
            "template_string" => !children(value)
                .iter()
                .any(|c| c.kind() == "template_substitution"),
            "interpreted_string_literal" | "raw_string_literal" => true,
            _ => false,
        };
        if !plain {
            return None;
        }
        let name = self.of(key).trim_matches(['"', '\'', '`']);
        let name = known::env_name(name)?;
        let whole = self.body(value)?;
        let edits = self.to_env(value, whole, &name)?;
        Some((edits, moved(&name)))
    }

    /// The bytes of a literal's constant parts, as the walk reads them: a Python string's
    /// contents, a JavaScript or Go string's body, a template's fragment.
    fn parts(&self, lit: Node) -> Vec<Range<usize>> {
        match lit.kind() {
            "string" if self.lang == Language::Python => children(lit)
                .into_iter()
                .filter(|c| c.kind() == "string_content")
                .map(|c| c.byte_range())
                .collect(),
            "string_fragment" => vec![lit.byte_range()],
            _ => self.body(lit).into_iter().collect(),
        }
    }

    /// A string literal's bytes between its quotes (after a Python prefix).
    fn body(&self, lit: Node) -> Option<Range<usize>> {
        let raw = self.of(lit);
        let quote = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let q = quote.chars().next()?;
        let width = if quote.starts_with(&format!("{q}{q}{q}")) && quote.len() >= 6 {
            3
        } else {
            1
        };
        let start = lit.start_byte() + (raw.len() - quote.len()) + width;
        let end = lit.end_byte().checked_sub(width)?;
        (start <= end).then_some(start..end)
    }

    /// The edits that replace bytes `span` of the literal `lit` with a read of the variable
    /// `name`: the whole literal when `span` is all of its text, else the text around it kept
    /// in an f-string or a template literal.
    fn to_env(&self, lit: Node<'t>, span: Range<usize>, name: &str) -> Option<Vec<TextEdit>> {
        let parent = lit.parent()?;
        // A docstring or a directive is prose, not a value to read from elsewhere.
        if parent.kind() == "expression_statement" {
            return None;
        }
        let body = self.body(lit);
        let whole = lit.kind() != "string_fragment"
            && body.as_ref() == Some(&span)
            && parent.kind() != "concatenated_string";
        let raw = self.of(lit);
        let mut edits = match self.lang {
            Language::Python => {
                let quote = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                let prefix = &raw[..raw.len() - quote.len()];
                let q = quote.chars().next()?;
                if prefix.contains(['b', 'B']) {
                    return None; // bytes: a read of the environment is a str
                }
                let interpolated = all_children(lit)
                    .iter()
                    .any(|c| c.kind() == "interpolation");
                if whole && !interpolated {
                    // The literal's own quote is valid where it stands.
                    vec![edit(lit, &format!("os.environ[{q}{name}{q}]"))]
                } else {
                    // Inside an f-string's braces the quotes in play are not known here.
                    if self.within(lit, &["interpolation", "format_specifier"]) {
                        return None;
                    }
                    let body = body?;
                    let is_f = prefix.contains(['f', 'F']);
                    let (before, after) = (
                        &self.text[body.start..span.start],
                        &self.text[span.end..body.end],
                    );
                    if !is_f && self.text[body.clone()].contains("\\N{") {
                        return None;
                    }
                    let keep = |s: &str| {
                        if is_f {
                            s.to_string()
                        } else {
                            s.replace('{', "{{").replace('}', "}}")
                        }
                    };
                    let inner = if q == '"' { '\'' } else { '"' };
                    let prefix: String =
                        prefix.chars().filter(|c| !matches!(c, 'u' | 'U')).collect();
                    let f = if is_f { "" } else { "f" };
                    let open = &raw[prefix_len(raw)..body.start - lit.start_byte()];
                    let close = &raw[body.end - lit.start_byte()..];
                    vec![edit(
                        lit,
                        &format!(
                            "{prefix}{f}{open}{}{{os.environ[{inner}{name}{inner}]}}{}{close}",
                            keep(before),
                            keep(after)
                        ),
                    )]
                }
            }
            Language::Go => {
                // A `const` holds no call; a partial literal would be a concatenation.
                if !whole || self.within(lit, &["const_declaration", "import_spec"]) {
                    return None;
                }
                if !self.imports("os") {
                    return None;
                }
                vec![edit(lit, &format!("os.Getenv(\"{name}\")"))]
            }
            _ => {
                let read = format!("process.env.{name}");
                if lit.kind() == "string_fragment" {
                    // A tagged template's tag reads its values apart from its text (`sql`…``).
                    if parent
                        .parent()
                        .is_some_and(|t| t.kind() == "call_expression")
                    {
                        return None;
                    }
                    vec![TextEdit {
                        start: span.start,
                        end: span.end,
                        insert: format!("${{{read}}}"),
                    }]
                } else {
                    let is_key = parent
                        .child_by_field_name("key")
                        .is_some_and(|k| k.id() == lit.id());
                    if is_key || self.within(lit, &["literal_type", "import_statement"]) {
                        return None;
                    }
                    if whole {
                        vec![edit(lit, &read)]
                    } else {
                        let body = body?;
                        let (before, after) = (
                            &self.text[body.start..span.start],
                            &self.text[span.end..body.end],
                        );
                        if before.contains(['`']) || after.contains('`') || raw.contains("${") {
                            return None;
                        }
                        vec![edit(lit, &format!("`{before}${{{read}}}{after}`"))]
                    }
                }
            }
        };
        if self.lang == Language::Python && !self.python_binds_os() {
            edits.push(insert_at(self.first_import_at(lit)?, "import os\n"));
        }
        Some(edits)
    }

    /// Whether an ancestor of `n` is of one of `kinds`.
    fn within(&self, n: Node, kinds: &[&str]) -> bool {
        let mut cur = n.parent();
        while let Some(p) = cur {
            if kinds.contains(&p.kind()) {
                return true;
            }
            cur = p.parent();
        }
        false
    }

    /// Whether the Python module binds `os` at its top level (`import os`, `import os.path`).
    fn python_binds_os(&self) -> bool {
        children(self.root)
            .into_iter()
            .filter(|s| s.kind() == "import_statement")
            .flat_map(children)
            .any(|n| {
                n.kind() == "dotted_name" && (self.of(n) == "os" || self.of(n).starts_with("os."))
            })
    }

    /// Where `import os` goes as the module's first import: the start of the line of its first
    /// import, or of the statement holding `lit` when that comes first; after the docstring and
    /// `from __future__` imports. `None` when another statement shares that line.
    fn first_import_at(&self, lit: Node) -> Option<usize> {
        let mut holder = lit;
        while let Some(p) = holder.parent() {
            if p.id() == self.root.id() {
                break;
            }
            holder = p;
        }
        let stmts: Vec<Node> = children(self.root)
            .into_iter()
            .filter(|s| s.kind() != "comment")
            .collect();
        let mut i = 0;
        if stmts.first().is_some_and(|s| {
            s.kind() == "expression_statement"
                && children(*s).first().is_some_and(|c| c.kind() == "string")
        }) {
            i = 1;
        }
        while stmts
            .get(i)
            .is_some_and(|s| s.kind() == "future_import_statement")
        {
            i += 1;
        }
        let at = stmts[i..].iter().position(|s| {
            matches!(s.kind(), "import_statement" | "import_from_statement")
                || s.id() == holder.id()
        })? + i;
        let start = stmts[at].start_byte();
        let line = self.text[..start].rfind('\n').map(|j| j + 1).unwrap_or(0);
        let shared = at > 0 && stmts[at - 1].end_byte() > line;
        (!shared).then_some(line)
    }

    /// QC007 at `byte`: each credential the logging call writes replaced by [`REDACTED`].
    pub(super) fn redact(&self, byte: usize) -> Found {
        let call = self
            .starting_at(byte, &["call", "call_expression"])
            .into_iter()
            .next()?;
        if self.lang == Language::Python && self.within(call, &["interpolation"]) {
            return None; // a quote for the constant inside an f-string's braces is not known
        }
        let mut edits = Vec::new();
        let mut shown = Vec::new();
        for a in self.args(call) {
            let v = match a.kind() {
                "keyword_argument" => a.child_by_field_name("value")?,
                _ => a,
            };
            self.redact_in(v, &mut edits, &mut shown);
        }
        if edits.is_empty() {
            return None;
        }
        Some((
            edits,
            format!(
                "{} → `{REDACTED}` in the log line: it says the credential is used, not what it is",
                shown.join(", ")
            ),
        ))
    }

    /// The credential reads of one logged value: a path, an f-string's or a template's
    /// substitutions, the operands of `+` and `%`.
    fn redact_in(&self, v: Node, edits: &mut Vec<TextEdit>, shown: &mut Vec<String>) {
        let secret = |x: Node| PATHS.contains(&x.kind()) && known::credential_name(self.of(x));
        match v.kind() {
            _ if secret(v) => {
                edits.push(edit(v, &format!("\"{REDACTED}\"")));
                shown.push(format!("`{}`", self.of(v)));
            }
            "string" | "template_string" => {
                for s in all_children(v) {
                    if !matches!(s.kind(), "interpolation" | "template_substitution") {
                        continue;
                    }
                    let inner = s
                        .child_by_field_name("expression")
                        .or_else(|| children(s).into_iter().next());
                    if inner.is_some_and(secret) {
                        edits.push(edit(s, REDACTED));
                        shown.push(format!("`{}`", self.of(s)));
                    }
                }
            }
            "binary_operator" | "binary_expression" => {
                let op = v.child_by_field_name("operator").map(|o| self.of(o));
                if matches!(op, Some("+" | "%")) {
                    for side in ["left", "right"] {
                        if let Some(x) = v.child_by_field_name(side) {
                            self.redact_in(x, edits, shown);
                        }
                    }
                }
            }
            "parenthesized_expression" => {
                if let Some(x) = children(v).into_iter().next() {
                    self.redact_in(x, edits, shown);
                }
            }
            _ => {}
        }
    }
}

/// The one expression of an expression list, or the expression itself.
fn single(x: Node) -> Option<Node> {
    match x.kind() {
        "expression_list" => match &children(x)[..] {
            [one] => Some(*one),
            _ => None,
        },
        _ => Some(x),
    }
}

/// A Go composite literal's element, unwrapped (`literal_element` holds the expression).
fn element(n: Node) -> Node {
    match n.kind() {
        "literal_element" => children(n).into_iter().next().unwrap_or(n),
        _ => n,
    }
}

/// The length of a Python string's prefix letters (`rb`, `f`).
fn prefix_len(raw: &str) -> usize {
    raw.len()
        - raw
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .len()
}
