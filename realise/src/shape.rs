//! The first pass: which places an argument value can have, and which schemas may apply at each.
//!
//! A JSON value is a tree; the solver gives each place of it that a schema can constrain its own
//! variables (a [`Node`]). This pass walks the schema the way the validator will — through
//! `$ref`, `allOf`/`anyOf`/`oneOf`/`not`/`if`, `properties`, `patternProperties`,
//! `additionalProperties`, `items`, `prefixItems`, `contains` — and collects, per place, every
//! schema object that may apply there (the second pass, `encode`, decides when each does), the
//! property names it must be able to hold, how many further properties and items it needs room
//! for, and the constant values (`const`, `enum`, an undo's bound arguments) it must be able to
//! equal.
//!
//! **Room is bounded, and a bound that might cut a solution is said.** Arrays get room for one
//! more item than any length the schemas name, objects for one more property than they name
//! (and one undeclared property at the top, for an invalid call); a schema whose lengths pass
//! [`MAX_ITEMS`]/[`MAX_EXTRAS`], or whose nesting passes [`MAX_DEPTH`] or [`MAX_NODES`], is cut
//! there, and the cut is recorded in [`Shape::cuts`]: with a cut, no unsatisfiable answer is a
//! proof (`lib.rs`).

use crate::doc::Doc;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Items an array place has room for at most.
pub(crate) const MAX_ITEMS: usize = 16;
/// Undeclared properties an object place has room for at most.
pub(crate) const MAX_EXTRAS: usize = 3;
/// How deep the places nest at most.
pub(crate) const MAX_DEPTH: usize = 10;
/// Places in all at most.
pub(crate) const MAX_NODES: usize = 2_000;

/// One place of the value.
#[derive(Debug, Default)]
pub(crate) struct Node<'a> {
    /// Every schema object that may apply here (through any applicator), each once.
    pub schemas: Vec<&'a Value>,
    /// The property names this place may hold, each with its value's place.
    pub keys: BTreeMap<String, Node<'a>>,
    /// Room for undeclared properties: each a value's place (its name is a variable).
    pub extras: Vec<Node<'a>>,
    /// Room for items.
    pub items: Vec<Node<'a>>,
    /// Cut off (too deep, or past the node budget): no variables below it.
    pub truncated: bool,
}

/// The places of one argument value.
pub(crate) struct Shape<'a> {
    /// The top place (the arguments object).
    pub root: Node<'a>,
    /// Where a bound may have cut a solution, in words.
    pub cuts: Vec<String>,
}

/// What the walk carries: the document, the node budget, and the cuts made.
struct Walk<'a, 'd> {
    doc: &'d Doc<'a>,
    nodes: usize,
    cuts: BTreeSet<String>,
}

/// The places a value of `schemas` at the top can have, with room for the property names in
/// `names` and for the constant `values` it must be able to equal.
pub(crate) fn shape<'a>(
    doc: &Doc<'a>,
    schemas: Vec<&'a Value>,
    names: &BTreeSet<String>,
    values: Vec<&'a Value>,
) -> Shape<'a> {
    let mut w = Walk {
        doc,
        nodes: 0,
        cuts: BTreeSet::new(),
    };
    let root = w.node(schemas, 0, values, names, true);
    Shape {
        root,
        cuts: w.cuts.into_iter().collect(),
    }
}

/// Every schema object reachable from `schemas` without moving in the instance: through `$ref`
/// (and the other applicators at the same place), each once.
pub(crate) fn expand<'a>(doc: &Doc<'a>, schemas: &[&'a Value]) -> Vec<&'a Value> {
    let mut out: Vec<&'a Value> = vec![];
    let mut stack: Vec<&'a Value> = schemas.iter().rev().copied().collect();
    while let Some(s) = stack.pop() {
        if out.iter().any(|o| std::ptr::eq(*o, s)) {
            continue;
        }
        let Some(m) = s.as_object() else {
            continue;
        };
        out.push(s);
        let mut next: Vec<&'a Value> = vec![];
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            if let Some(t) = doc.resolve(r) {
                next.push(t);
            }
            if doc.draft.ref_overrides() {
                stack.extend(next.into_iter().rev());
                continue;
            }
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            if let Some(a) = m.get(k).and_then(Value::as_array) {
                next.extend(a.iter());
            }
        }
        for k in ["not", "if", "then", "else"] {
            if let Some(v) = m.get(k) {
                next.push(v);
            }
        }
        for k in ["dependentSchemas", "dependencies"] {
            if let Some(d) = m.get(k).and_then(Value::as_object) {
                next.extend(d.values().filter(|v| v.is_object()));
            }
        }
        stack.extend(next.into_iter().rev());
    }
    out
}

fn num(m: &Map<String, Value>, k: &str) -> Option<usize> {
    m.get(k)
        .and_then(Value::as_f64)
        .filter(|f| *f >= 0.0)
        .map(|f| f.min(1e6) as usize)
}

/// Whether `key` matches a `patternProperties` pattern as the validator reads it (the ECMA
/// rewrite, then the regex engine; a pattern neither reads matches nothing).
pub(crate) fn key_matches(pattern: &str, key: &str) -> bool {
    crate::pattern::rust_pattern(pattern)
        .and_then(|p| fancy_regex::Regex::new(&p).ok())
        .is_some_and(|re| re.is_match(key).unwrap_or(false))
}

impl<'a> Walk<'a, '_> {
    /// The place of a value to which `schemas` apply, at nesting `depth`, with room for the
    /// property `names` and for the constant `values` it must be able to equal.
    fn node(
        &mut self,
        schemas: Vec<&'a Value>,
        depth: usize,
        values: Vec<&'a Value>,
        names: &BTreeSet<String>,
        top: bool,
    ) -> Node<'a> {
        let all = expand(self.doc, &schemas);
        self.nodes += 1;
        if depth > MAX_DEPTH || self.nodes > MAX_NODES {
            let constrained = all
                .iter()
                .any(|s| s.as_object().is_some_and(|m| !m.is_empty()));
            if constrained || !values.is_empty() || !names.is_empty() {
                self.cuts.insert(if depth > MAX_DEPTH {
                    format!("the value nests deeper than {MAX_DEPTH} levels")
                } else {
                    format!("the value has more than {MAX_NODES} places")
                });
            }
            return Node {
                schemas: all,
                truncated: true,
                ..Node::default()
            };
        }
        // The constant values this place must be able to equal: those given for it, and every
        // `const`/`enum` value of its schemas.
        let mut consts: Vec<&'a Value> = values;
        let mut keys: BTreeSet<String> = names.clone();
        let mut object_ish = top;
        let mut array_ish = false;
        let mut lengths: Vec<usize> = vec![];
        let mut min_props: usize = 0;
        for s in &all {
            let m = s.as_object().expect("expand keeps objects");
            if let Some(c) = m.get("const") {
                consts.push(c);
            }
            if let Some(e) = m.get("enum").and_then(Value::as_array) {
                consts.extend(e.iter());
            }
            if let Some(p) = m.get("properties").and_then(Value::as_object) {
                object_ish = true;
                for k in p.keys() {
                    keys.insert(k.clone());
                }
            }
            if let Some(r) = m.get("required").and_then(Value::as_array) {
                object_ish = true;
                for k in r.iter().filter_map(Value::as_str) {
                    keys.insert(k.to_string());
                }
            }
            for dk in ["dependentRequired", "dependencies"] {
                if let Some(d) = m.get(dk).and_then(Value::as_object) {
                    object_ish = true;
                    for (k, v) in d {
                        keys.insert(k.clone());
                        for r in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                            keys.insert(r.to_string());
                        }
                    }
                }
            }
            if let Some(d) = m.get("dependentSchemas").and_then(Value::as_object) {
                object_ish = true;
                for k in d.keys() {
                    keys.insert(k.clone());
                }
            }
            for k in [
                "additionalProperties",
                "patternProperties",
                "propertyNames",
                "maxProperties",
                "unevaluatedProperties",
            ] {
                object_ish |= m.contains_key(k);
            }
            if let Some(n) = num(m, "minProperties") {
                object_ish = true;
                min_props = min_props.max(n);
            }
            for k in ["minItems", "maxItems", "minContains", "maxContains"] {
                if let Some(n) = num(m, k) {
                    array_ish = true;
                    lengths.push(n);
                }
            }
            for k in [
                "items",
                "prefixItems",
                "additionalItems",
                "contains",
                "uniqueItems",
            ] {
                if let Some(v) = m.get(k) {
                    array_ish = true;
                    if let Some(a) = v.as_array() {
                        lengths.push(a.len());
                    }
                }
            }
            if let Some(t) = m.get("type") {
                let has =
                    |n: &str| t == n || t.as_array().is_some_and(|a| a.iter().any(|x| x == n));
                object_ish |= has("object");
                array_ish |= has("array");
            }
        }
        for c in &consts {
            match c {
                Value::Object(o) => {
                    object_ish = true;
                    for k in o.keys() {
                        keys.insert(k.clone());
                    }
                }
                Value::Array(a) => {
                    array_ish = true;
                    lengths.push(a.len());
                }
                _ => {}
            }
        }
        // Room for properties beyond the named ones: one more than `minProperties` asks.
        let extras = if object_ish {
            let want = min_props.saturating_sub(keys.len()) + 1;
            if want > MAX_EXTRAS {
                self.cuts.insert(format!(
                    "an object needs room for more than {MAX_EXTRAS} undeclared properties"
                ));
            }
            want.min(MAX_EXTRAS)
        } else {
            0
        };
        let items = if array_ish {
            let want = lengths.iter().copied().max().unwrap_or(0) + 1;
            if want > MAX_ITEMS {
                self.cuts.insert(format!(
                    "an array needs room for more than {MAX_ITEMS} items"
                ));
            }
            want.min(MAX_ITEMS)
        } else {
            0
        };
        // Children: each named property's schemas (and constant values), each extra's, each
        // item's.
        let mut node = Node {
            schemas: all.clone(),
            ..Node::default()
        };
        let none = BTreeSet::new();
        for k in keys {
            let mut sub: Vec<&'a Value> = vec![];
            for s in &all {
                sub.extend(property_schemas(s, &k));
            }
            let values: Vec<&'a Value> = consts.iter().filter_map(|c| c.get(&k)).collect();
            let child = self.node(sub, depth + 1, values, &none, false);
            node.keys.insert(k, child);
        }
        for _ in 0..extras {
            let mut sub: Vec<&'a Value> = vec![];
            for s in &all {
                let m = s.as_object().expect("expand keeps objects");
                if let Some(pp) = m.get("patternProperties").and_then(Value::as_object) {
                    sub.extend(pp.values());
                }
                for k in ["additionalProperties", "unevaluatedProperties"] {
                    if let Some(a) = m.get(k) {
                        sub.push(a);
                    }
                }
            }
            let child = self.node(sub, depth + 1, vec![], &none, false);
            node.extras.push(child);
        }
        for i in 0..items {
            let mut sub: Vec<&'a Value> = vec![];
            for s in &all {
                sub.extend(item_schemas(self.doc, s, i));
            }
            let values: Vec<&'a Value> = consts
                .iter()
                .filter_map(|c| c.as_array().and_then(|a| a.get(i)))
                .collect();
            let child = self.node(sub, depth + 1, values, &none, false);
            node.items.push(child);
        }
        node
    }
}

/// The schemas `s` applies to the value of property `k`: its `properties` entry, the
/// `patternProperties` whose pattern matches `k`, else its `additionalProperties`.
pub(crate) fn property_schemas<'a>(s: &'a Value, k: &str) -> Vec<&'a Value> {
    let Some(m) = s.as_object() else {
        return vec![];
    };
    let mut out = vec![];
    let declared = m.get("properties").and_then(|p| p.get(k));
    if let Some(d) = declared {
        out.push(d);
    }
    let mut matched = false;
    if let Some(pp) = m.get("patternProperties").and_then(Value::as_object) {
        for (p, sub) in pp {
            if key_matches(p, k) {
                matched = true;
                out.push(sub);
            }
        }
    }
    if declared.is_none() && !matched {
        if let Some(a) = m.get("additionalProperties") {
            out.push(a);
        }
    }
    out
}

/// The schemas `s` applies to item `i` of an array.
pub(crate) fn item_schemas<'a>(doc: &Doc<'_>, s: &'a Value, i: usize) -> Vec<&'a Value> {
    let Some(m) = s.as_object() else {
        return vec![];
    };
    let mut out = vec![];
    if doc.draft.tuple_items() {
        match m.get("items") {
            Some(Value::Array(a)) => match a.get(i) {
                Some(x) => out.push(x),
                None => out.extend(m.get("additionalItems")),
            },
            Some(x) => out.push(x),
            None => {}
        }
    } else {
        let prefix = m.get("prefixItems").and_then(Value::as_array);
        match prefix.and_then(|p| p.get(i)) {
            Some(x) => out.push(x),
            None => out.extend(m.get("items")),
        }
    }
    out.extend(m.get("contains"));
    out.extend(m.get("unevaluatedItems"));
    out
}
