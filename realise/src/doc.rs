//! A schema document as the validator reads it: its draft (which decides what `$ref`'s siblings,
//! an `items` list and `format` mean) and its references, resolved within the document.

use serde_json::Value;

/// The JSON Schema drafts whose meanings differ for the solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    /// Draft 4.
    D4,
    /// Draft 6.
    D6,
    /// Draft 7.
    D7,
    /// 2019-09.
    D2019,
    /// 2020-12, the validator's default when `$schema` names none.
    D2020,
}

impl Draft {
    /// The draft a root schema declares (the validator's default, 2020-12, otherwise).
    pub fn of(root: &Value) -> Draft {
        let Some(s) = root.get("$schema").and_then(Value::as_str) else {
            return Draft::D2020;
        };
        if s.contains("draft-04") {
            Draft::D4
        } else if s.contains("draft-06") {
            Draft::D6
        } else if s.contains("draft-07") {
            Draft::D7
        } else if s.contains("2019-09") {
            Draft::D2019
        } else {
            Draft::D2020
        }
    }

    /// Whether `$ref` replaces its siblings (drafts 4–7) or applies beside them.
    pub fn ref_overrides(self) -> bool {
        self <= Draft::D7
    }

    /// Whether `format` is an assertion (the validator asserts it for drafts 4–7 only).
    pub fn asserts_format(self) -> bool {
        self <= Draft::D7
    }

    /// Whether an `items` list is a tuple (before 2020-12; then `prefixItems`).
    pub fn tuple_items(self) -> bool {
        self <= Draft::D2019
    }
}

/// A schema document.
pub(crate) struct Doc<'a> {
    /// The root schema.
    pub root: &'a Value,
    /// Its draft.
    pub draft: Draft,
}

impl<'a> Doc<'a> {
    /// The document of a root schema.
    pub fn new(root: &'a Value) -> Doc<'a> {
        Doc {
            root,
            draft: Draft::of(root),
        }
    }

    /// What a `$ref` names within the document (`#`, `#/json/pointer`, or `#anchor`), or `None`
    /// for a reference outside it (the solver encodes no remote document).
    pub fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let frag = reference.strip_prefix('#')?;
        if frag.is_empty() {
            return Some(self.root);
        }
        if frag.starts_with('/') {
            let decoded = percent_decode(frag)?;
            return self.root.pointer(&decoded);
        }
        find_anchor(self.root, frag)
    }
}

/// `%xx` escapes of a URI fragment decoded (a JSON pointer's own `~0`/`~1` are left for
/// `Value::pointer`).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The subschema with `$anchor` (or a draft-4/6/7 `$id`/`id` of `#name`) equal to `name`.
fn find_anchor<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => {
            let hit = m.get("$anchor").and_then(Value::as_str) == Some(name)
                || ["$id", "id"]
                    .iter()
                    .any(|k| m.get(*k).and_then(Value::as_str) == Some(&format!("#{name}")));
            if hit {
                return Some(v);
            }
            m.values().find_map(|c| find_anchor(c, name))
        }
        Value::Array(a) => a.iter().find_map(|c| find_anchor(c, name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_resolve_within_the_document() {
        let root = json!({"$defs": {"Address": {"type": "object"}, "a b": {"type": "string"}},
                          "definitions": {"X": {"$anchor": "ex", "type": "integer"}}});
        let d = Doc::new(&root);
        assert_eq!(
            d.resolve("#/$defs/Address"),
            Some(&json!({"type": "object"}))
        );
        assert_eq!(d.resolve("#/$defs/a%20b"), Some(&json!({"type": "string"})));
        assert_eq!(
            d.resolve("#ex").and_then(|v| v.get("type")),
            Some(&json!("integer"))
        );
        assert_eq!(d.resolve("#"), Some(&root));
        assert_eq!(d.resolve("other.json#/x"), None);
        assert_eq!(d.draft, Draft::D2020);
        assert_eq!(
            Draft::of(&json!({"$schema": "http://json-schema.org/draft-07/schema#"})),
            Draft::D7
        );
    }
}
