//! JSON Schema `pattern`s (ECMA 262 regular expressions) as the validator reads them: the
//! `jsonschema` crate rewrites ECMA's `\d`, `\w`, `\s` and their negations into ASCII classes
//! and hands the rest to a Rust regex engine; this module makes the same rewrite, so the
//! solver's automata (`strings`) read a pattern as the runtime does. A spelling the rewrite
//! refuses is `None`, and the caller treats the pattern as a keyword it cannot encode.

/// A pattern as the validator hands it to its regex engine: ECMA's Perl classes rewritten into
/// ASCII classes (`None`: a spelling the rewrite refuses, such as `\\c`).
pub(crate) fn rust_pattern(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(&n) = chars.peek() else {
                out.push(c);
                break;
            };
            chars.next();
            let (pos, neg) = match n {
                'd' | 'D' => ("0-9", "^0-9"),
                'w' | 'W' => ("A-Za-z0-9_", "^A-Za-z0-9_"),
                's' | 'S' => (
                    " \\t\\n\\r\\x0B\\x0C\\u{00A0}\\u{FEFF}\\u{2003}\\u{2029}",
                    "^ \\t\\n\\r\\x0B\\x0C\\u{00A0}\\u{FEFF}\\u{2003}\\u{2029}",
                ),
                'c' => return None,
                _ => {
                    out.push('\\');
                    out.push(n);
                    continue;
                }
            };
            let negated = n.is_ascii_uppercase();
            if in_class {
                // A negated Perl class inside a set has no plain-range spelling.
                if negated {
                    return None;
                }
                out.push_str(pos);
            } else {
                out.push('[');
                out.push_str(if negated { neg } else { pos });
                out.push(']');
            }
            continue;
        }
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            _ => {}
        }
        out.push(c);
    }
    Some(out)
}
