//! The second pass: a value's places as Z3 variables, and JSON Schema keywords, rulebook
//! literals, rule-sheet checks and destinations as constraints on them ([`Approx`] pairs).
//!
//! A place ([`Slot`]) is a tagged union: `tag` says which JSON type it holds (null, boolean,
//! number, string, array, object), and one variable per type holds its content — a Boolean, a
//! real number (every JSON number is a rational; `integer` is a real with an integer value), a
//! string, an array's length with its item places, an object's declared properties (each with a
//! `present` flag) and its room for undeclared ones (a name variable, a flag, a value place).
//! Keywords constrain a place only where its tag is the keyword's type, as the validator reads
//! them.

use crate::approx::Approx;
use crate::doc::Doc;
use crate::pattern;
use crate::shape::{self, Node};
use serde_json::{Number, Value};
use std::collections::{BTreeMap, HashMap};
use z3::ast::{Bool, Int, Real};

/// The JSON types a place may hold, as the values of its `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    Null = 0,
    Bool = 1,
    Num = 2,
    Str = 3,
    Arr = 4,
    Obj = 5,
}

/// A fact about a string that Z3 chooses true or false and the automata (`strings`) check.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Atom {
    /// The string is exactly this one.
    Eq(String),
    /// The whole string matches this Rust regular expression (anchored at both ends).
    Re(String),
    /// It has at least this many characters.
    MinLen(u64),
    /// It has at most this many characters.
    MaxLen(u64),
}

/// The regular expression of exactly `s`.
pub(crate) fn re_equals(s: &str) -> String {
    format!("^{}$", regex_syntax::escape(s))
}

impl Atom {
    /// The atom's regular expression (lengths have none: the searches bound them).
    pub fn regex(&self) -> Option<String> {
        match self {
            Atom::Eq(c) => Some(re_equals(c)),
            Atom::Re(re) => Some(re.clone()),
            Atom::MinLen(_) | Atom::MaxLen(_) => None,
        }
    }

    /// Whether string `s` has the atom.
    pub fn holds_of(&self, s: &str) -> Option<bool> {
        let n = s.chars().count() as u64;
        match self {
            Atom::Eq(c) => Some(c == s),
            Atom::MinLen(m) => Some(n >= *m),
            Atom::MaxLen(m) => Some(n <= *m),
            Atom::Re(re) => crate::strings::matches(re, s),
        }
    }
}

/// The regular expression of the strings in which `pattern` (a JSON Schema pattern, as the
/// validator reads it) finds a match, or `None` where the validator's rewrite refuses it.
pub(crate) fn re_search(pattern: &str) -> Option<String> {
    let p = pattern::rust_pattern(pattern)?;
    Some(format!("^(?s:.*)(?:{p})(?s:.*)$"))
}

/// One place's variables.
pub(crate) struct Slot {
    pub tag: Int,
    pub b: Bool,
    pub n: Real,
    pub len: Int,
    pub items: Vec<usize>,
    /// Declared properties: name → (present, value's slot).
    pub keys: BTreeMap<String, (Bool, usize)>,
    /// Undeclared properties: (name's slot, present, value's slot).
    pub extras: Vec<(usize, Bool, usize)>,
    pub truncated: bool,
    /// Whether the place is the name of a property (always a string).
    pub is_key: bool,
}

/// The encoding of one value: its slots, their schemas, and what could not be encoded.
pub(crate) struct Enc<'a, 'd> {
    pub doc: &'d Doc<'a>,
    pub slots: Vec<Slot>,
    /// The schemas that may apply at each slot (from the shape pass).
    schemas: Vec<Vec<&'a Value>>,
    memo: HashMap<(usize, usize), Approx>,
    busy: Vec<(usize, usize)>,
    /// What the encoding could not say exactly, in words (each once).
    pub notes: Vec<String>,
    /// Well-formedness of every slot (tags in range, absent content for other types, distinct
    /// undeclared names): asserted on both sides.
    pub wellformed: Vec<Bool>,
    /// Per slot, the string atoms asked of it, each with its variable.
    pub atoms: Vec<BTreeMap<Atom, Bool>>,
    /// Pairs of slots whose strings are compared, each with the variable "they are equal" (free
    /// on the necessary side; the witnesses honour it on the sufficient one).
    pub same: Vec<(usize, usize, Bool)>,
}

fn tag_is(slot: &Slot, t: Tag) -> Bool {
    slot.tag.eq(Int::from_i64(t as i64))
}

impl<'a, 'd> Enc<'a, 'd> {
    /// The slots of a shape; slot 0 is the top.
    pub fn new(doc: &'d Doc<'a>, root: &Node<'a>) -> Enc<'a, 'd> {
        let mut e = Enc {
            doc,
            slots: vec![],
            schemas: vec![],
            memo: HashMap::new(),
            busy: vec![],
            notes: vec![],
            wellformed: vec![],
            atoms: vec![],
            same: vec![],
        };
        e.make(root, false);
        e
    }

    fn note(&mut self, what: String) {
        if !self.notes.contains(&what) {
            self.notes.push(what);
        }
    }

    /// A fresh slot with no places below it (a property name's).
    fn bare(&mut self, is_key: bool) -> usize {
        let i = self.slots.len();
        let slot = Slot {
            tag: Int::new_const(format!("t{i}")),
            b: Bool::new_const(format!("b{i}")),
            n: Real::new_const(format!("n{i}")),
            len: Int::new_const(format!("l{i}")),
            items: vec![],
            keys: BTreeMap::new(),
            extras: vec![],
            truncated: false,
            is_key,
        };
        self.slots.push(slot);
        self.schemas.push(vec![]);
        self.atoms.push(BTreeMap::new());
        if is_key {
            // A property's name is a string.
            let t = tag_is(&self.slots[i], Tag::Str);
            self.wellformed.push(t);
        }
        i
    }

    /// The variable of atom `a` of slot `i`'s string, or `None` where its regular expression
    /// does not compile (the caller treats the keyword as one it cannot encode).
    pub fn atom(&mut self, i: usize, a: Atom) -> Option<Bool> {
        if let Some(b) = self.atoms[i].get(&a) {
            return Some(b.clone());
        }
        if let Atom::Re(re) = &a {
            crate::strings::compile(re)?;
        }
        if let Atom::Eq(c) = &a {
            crate::strings::compile(&re_equals(c))?;
        }
        let b = Bool::new_const(format!("a{i}_{}", self.atoms[i].len()));
        self.atoms[i].insert(a, b.clone());
        Some(b)
    }

    /// The variable "slots `i` and `j` hold equal strings".
    fn same_strings(&mut self, i: usize, j: usize) -> Bool {
        let (i, j) = (i.min(j), i.max(j));
        if let Some((_, _, b)) = self.same.iter().find(|(a, b, _)| (*a, *b) == (i, j)) {
            return b.clone();
        }
        let b = Bool::new_const(format!("e{i}_{j}"));
        self.same.push((i, j, b.clone()));
        b
    }

    fn make(&mut self, node: &Node<'a>, is_key: bool) -> usize {
        let i = self.bare(is_key);
        self.schemas[i] = node.schemas.clone();
        self.slots[i].truncated = node.truncated;
        let mut keys = BTreeMap::new();
        for (k, child) in &node.keys {
            let c = self.make(child, false);
            let present = Bool::new_const(format!("p{i}_{}", keys.len()));
            keys.insert(k.clone(), (present, c));
        }
        let mut extras = vec![];
        for (j, child) in node.extras.iter().enumerate() {
            let name = self.bare(true);
            let c = self.make(child, false);
            extras.push((name, Bool::new_const(format!("x{i}_{j}")), c));
        }
        let items: Vec<usize> = node.items.iter().map(|n| self.make(n, false)).collect();
        let slot = &mut self.slots[i];
        slot.keys = keys;
        slot.extras = extras;
        slot.items = items;
        self.wellformed_of(i);
        i
    }

    /// The well-formedness of slot `i`: its tag is a type, an array's length within its room,
    /// no properties unless an object, undeclared names distinct from declared ones and from
    /// each other, a property name a string.
    fn wellformed_of(&mut self, i: usize) {
        let slot = &self.slots[i];
        let slot = Slot {
            tag: slot.tag.clone(),
            b: slot.b.clone(),
            n: slot.n.clone(),
            len: slot.len.clone(),
            items: slot.items.clone(),
            keys: slot.keys.clone(),
            extras: slot.extras.clone(),
            truncated: slot.truncated,
            is_key: slot.is_key,
        };
        let slot = &slot;
        let mut w = vec![
            slot.tag.ge(Int::from_i64(0)),
            slot.tag.le(Int::from_i64(5)),
            slot.len.ge(Int::from_i64(0)),
            slot.len.le(Int::from_i64(slot.items.len() as i64)),
        ];
        if slot.is_key {
            w.push(tag_is(slot, Tag::Str));
        }
        let is_obj = tag_is(slot, Tag::Obj);
        let is_arr = tag_is(slot, Tag::Arr);
        w.push(is_arr.not().implies(slot.len.eq(Int::from_i64(0))));
        for (p, _) in slot.keys.values() {
            w.push(p.implies(&is_obj));
        }
        let extras = slot.extras.clone();
        let keys: Vec<String> = slot.keys.keys().cloned().collect();
        for (j, (name, x, _)) in extras.iter().enumerate() {
            w.push(x.implies(&is_obj));
            for k in &keys {
                if let Some(eq) = self.atom(*name, Atom::Eq(k.clone())) {
                    w.push(x.implies(eq.not()));
                }
            }
            for (name2, x2, _) in extras.iter().take(j) {
                let same = self.same_strings(*name, *name2);
                w.push(Bool::and(&[x, x2]).implies(same.not()));
            }
        }
        self.wellformed.extend(w);
    }

    /// Whether slot `i` holds type `t`.
    pub fn tag_is(&self, i: usize, t: Tag) -> Bool {
        tag_is(&self.slots[i], t)
    }

    /// Whether slot `i` holds the JSON constant `v` (numbers compared by value, as the
    /// validator's `const`/`enum` and the rulebook's `==` do).
    pub fn eq_value(&mut self, i: usize, v: &Value) -> Approx {
        if self.slots[i].truncated {
            self.note("a constant lies below where the value was cut".into());
            return Approx::unknown();
        }
        let slot = &self.slots[i];
        match v {
            Value::Null => Approx::exact(tag_is(slot, Tag::Null)),
            Value::Bool(b) => Approx::exact(Bool::and(&[
                &tag_is(slot, Tag::Bool),
                &slot.b.eq(Bool::from_bool(*b)),
            ])),
            Value::Number(n) => match real_of(n) {
                Some(r) => Approx::exact(Bool::and(&[&tag_is(slot, Tag::Num), &slot.n.eq(&r)])),
                None => Approx::unknown(),
            },
            Value::String(s) => {
                let is_str = tag_is(slot, Tag::Str);
                match self.atom(i, Atom::Eq(s.clone())) {
                    Some(eq) => Approx::exact(Bool::and(&[&is_str, &eq])),
                    None => Approx::unknown(),
                }
            }
            Value::Array(a) => {
                if a.len() > slot.items.len() {
                    return Approx::constant(false).or_unknown_if(true);
                }
                let mut parts = vec![Approx::exact(Bool::and(&[
                    &tag_is(slot, Tag::Arr),
                    &slot.len.eq(Int::from_i64(a.len() as i64)),
                ]))];
                let items = slot.items.clone();
                for (x, item) in a.iter().zip(items) {
                    parts.push(self.eq_value(item, x));
                }
                Approx::and(&parts)
            }
            Value::Object(o) => {
                let mut parts = vec![Approx::exact(tag_is(slot, Tag::Obj))];
                let keys: Vec<(String, Bool, usize)> = slot
                    .keys
                    .iter()
                    .map(|(k, (p, c))| (k.clone(), p.clone(), *c))
                    .collect();
                let extras: Vec<Bool> = slot.extras.iter().map(|(_, x, _)| x.clone()).collect();
                if o.keys().any(|k| !keys.iter().any(|(n, _, _)| n == k)) {
                    self.note(
                        "a constant object names a property the value has no room for".into(),
                    );
                    return Approx::unknown();
                }
                for (k, p, c) in keys {
                    match o.get(&k) {
                        Some(x) => {
                            parts.push(Approx::exact(p.clone()));
                            parts.push(self.eq_value(c, x));
                        }
                        None => parts.push(Approx::exact(p.not())),
                    }
                }
                for x in extras {
                    parts.push(Approx::exact(x.not()));
                }
                Approx::and(&parts)
            }
        }
    }

    /// Whether slots `i` and `j` hold equal values (for `uniqueItems`).
    fn eq_slots(&mut self, i: usize, j: usize, depth: usize) -> Approx {
        if depth > 4 || self.slots[i].truncated || self.slots[j].truncated {
            return Approx::unknown();
        }
        let same_string = self.same_strings(i, j);
        let (a, b) = (&self.slots[i], &self.slots[j]);
        let same_tag = a.tag.eq(&b.tag);
        let null = tag_is(a, Tag::Null);
        let boolean = Bool::and(&[&tag_is(a, Tag::Bool), &a.b.eq(&b.b)]);
        let number = Bool::and(&[&tag_is(a, Tag::Num), &a.n.eq(&b.n)]);
        let string = Bool::and(&[&tag_is(a, Tag::Str), &same_string]);
        let mut scalars = vec![Approx::exact(Bool::or(&[
            &null, &boolean, &number, &string,
        ]))];
        // Arrays: equal lengths and equal items within both rooms.
        let (ai, bi) = (a.items.clone(), b.items.clone());
        let arr_tag = tag_is(a, Tag::Arr);
        let same_len = a.len.eq(&b.len);
        let mut arr = vec![Approx::exact(Bool::and(&[&arr_tag, &same_len]))];
        let len_a = a.len.clone();
        for k in 0..ai.len().max(bi.len()) {
            let within = len_a.gt(Int::from_i64(k as i64));
            match (ai.get(k), bi.get(k)) {
                (Some(&x), Some(&y)) => {
                    let e = self.eq_slots(x, y, depth + 1);
                    arr.push(Approx::when(&within, e));
                }
                _ => arr.push(Approx::when(&within, Approx::unknown())),
            }
        }
        scalars.push(Approx::and(&arr));
        // Objects: the same declared properties present with equal values, no undeclared ones
        // (equal undeclared properties are not encoded: unknown there).
        let (a, b) = (&self.slots[i], &self.slots[j]);
        let obj_tag = tag_is(a, Tag::Obj);
        let mut obj = vec![Approx::exact(obj_tag)];
        let names: std::collections::BTreeSet<String> =
            a.keys.keys().chain(b.keys.keys()).cloned().collect();
        let ak = a.keys.clone();
        let bk = b.keys.clone();
        let ax: Vec<Bool> = a.extras.iter().map(|e| e.1.clone()).collect();
        let bx: Vec<Bool> = b.extras.iter().map(|e| e.1.clone()).collect();
        for k in names {
            match (ak.get(&k), bk.get(&k)) {
                (Some((pa, ca)), Some((pb, cb))) => {
                    obj.push(Approx::exact(pa.eq(pb)));
                    let e = self.eq_slots(*ca, *cb, depth + 1);
                    obj.push(Approx::when(pa, e));
                }
                (Some((p, _)), None) | (None, Some((p, _))) => obj.push(Approx::exact(p.not())),
                (None, None) => {}
            }
        }
        let any_extra: Vec<&Bool> = ax.iter().chain(bx.iter()).collect();
        if !any_extra.is_empty() {
            let none = Bool::or(&any_extra).not();
            obj.push(Approx::between(Bool::from_bool(true), none));
        }
        scalars.push(Approx::and(&obj));
        Approx::also(&same_tag, Approx::or(&scalars))
    }

    /// Whether slot `i` satisfies schema `s`.
    pub fn holds(&mut self, i: usize, s: &'a Value) -> Approx {
        let key = (i, s as *const Value as usize);
        if let Some(a) = self.memo.get(&key) {
            return a.clone();
        }
        if self.busy.contains(&key) {
            self.note("a schema refers to itself without moving into the value".into());
            return Approx::unknown();
        }
        self.busy.push(key);
        let a = self.holds_inner(i, s);
        self.busy.pop();
        self.memo.insert(key, a.clone());
        a
    }

    fn holds_inner(&mut self, i: usize, s: &'a Value) -> Approx {
        let m = match s {
            Value::Bool(b) => return Approx::constant(*b),
            Value::Object(m) => m,
            _ => {
                self.note("a schema is neither an object nor a boolean".into());
                return Approx::unknown();
            }
        };
        if self.slots[i].truncated {
            let asserts = m.keys().any(|k| !ANNOTATIONS.contains(&k.as_str()));
            return if asserts {
                Approx::unknown()
            } else {
                Approx::constant(true)
            };
        }
        let mut parts: Vec<Approx> = vec![];
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            match self.doc.resolve(r) {
                Some(t) => parts.push(self.holds(i, t)),
                None => {
                    self.note(format!("the reference `{r}` lies outside the schema"));
                    parts.push(Approx::unknown());
                }
            }
            if self.doc.draft.ref_overrides() {
                return Approx::and(&parts);
            }
        }
        for (k, v) in m {
            let a = match k.as_str() {
                "type" => self.type_is(i, v),
                "enum" => match v.as_array() {
                    Some(vals) => {
                        let parts: Vec<Approx> = vals.iter().map(|x| self.eq_value(i, x)).collect();
                        Approx::or(&parts)
                    }
                    None => Approx::unknown(),
                },
                "const" => self.eq_value(i, v),
                "allOf" | "anyOf" | "oneOf" => {
                    let subs: Vec<&'a Value> =
                        v.as_array().map(|a| a.iter().collect()).unwrap_or_default();
                    let parts: Vec<Approx> = subs.into_iter().map(|x| self.holds(i, x)).collect();
                    match k.as_str() {
                        "allOf" => Approx::and(&parts),
                        "anyOf" => Approx::or(&parts),
                        _ => Approx::one_of(&parts),
                    }
                }
                "not" => self.holds(i, v).not(),
                "if" => {
                    let cond = self.holds(i, v);
                    let then = m.get("then").map(|t| self.holds(i, t));
                    let els = m.get("else").map(|t| self.holds(i, t));
                    let mut out = vec![];
                    if let Some(t) = then {
                        out.push(Approx::or(&[cond.not(), t]));
                    }
                    if let Some(e) = els {
                        out.push(Approx::or(&[cond.clone(), e]));
                    }
                    Approx::and(&out)
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    let c = self.number_keyword(i, k, v, m);
                    Approx::when(&self.tag_is(i, Tag::Num), c)
                }
                "minLength" | "maxLength" | "pattern" | "format" => {
                    let c = self.string_keyword(i, k, v);
                    Approx::when(&self.tag_is(i, Tag::Str), c)
                }
                "minItems" | "maxItems" | "items" | "prefixItems" | "additionalItems"
                | "contains" | "uniqueItems" => {
                    let c = self.array_keyword(i, k, v, m);
                    Approx::when(&self.tag_is(i, Tag::Arr), c)
                }
                "properties"
                | "required"
                | "additionalProperties"
                | "patternProperties"
                | "propertyNames"
                | "minProperties"
                | "maxProperties"
                | "dependentRequired"
                | "dependentSchemas"
                | "dependencies" => {
                    let c = self.object_keyword(i, k, v, m);
                    Approx::when(&self.tag_is(i, Tag::Obj), c)
                }
                "unevaluatedProperties" | "unevaluatedItems" => {
                    if v == &Value::Bool(true) {
                        Approx::constant(true)
                    } else {
                        self.note(format!("`{k}` is not encoded"));
                        Approx::unknown()
                    }
                }
                "$dynamicRef" | "$recursiveRef" => {
                    self.note(format!("`{k}` is not encoded"));
                    Approx::unknown()
                }
                // Read with another keyword, or an annotation the validator does not assert.
                _ => continue,
            };
            parts.push(a);
        }
        Approx::and(&parts)
    }

    fn type_is(&mut self, i: usize, t: &Value) -> Approx {
        let names: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => return Approx::unknown(),
        };
        let slot = &self.slots[i];
        let mut out = vec![];
        for n in names {
            out.push(match n {
                "null" => tag_is(slot, Tag::Null),
                "boolean" => tag_is(slot, Tag::Bool),
                "number" => tag_is(slot, Tag::Num),
                "integer" => Bool::and(&[&tag_is(slot, Tag::Num), &slot.n.is_int()]),
                "string" => tag_is(slot, Tag::Str),
                "array" => tag_is(slot, Tag::Arr),
                "object" => tag_is(slot, Tag::Obj),
                _ => Bool::from_bool(false),
            });
        }
        let refs: Vec<&Bool> = out.iter().collect();
        Approx::exact(Bool::or(&refs))
    }

    fn number_keyword(
        &mut self,
        i: usize,
        k: &str,
        v: &Value,
        m: &serde_json::Map<String, Value>,
    ) -> Approx {
        let n = self.slots[i].n.clone();
        let bound = |v: &Value| v.as_number().and_then(real_of);
        match k {
            "minimum" | "maximum" => {
                let Some(b) = bound(v) else {
                    return Approx::unknown();
                };
                // Draft 4: a Boolean `exclusiveMinimum`/`exclusiveMaximum` makes the bound strict.
                let strict_key = if k == "minimum" {
                    "exclusiveMinimum"
                } else {
                    "exclusiveMaximum"
                };
                let strict = m.get(strict_key) == Some(&Value::Bool(true));
                Approx::exact(match (k, strict) {
                    ("minimum", false) => n.ge(&b),
                    ("minimum", true) => n.gt(&b),
                    (_, false) => n.le(&b),
                    (_, true) => n.lt(&b),
                })
            }
            "exclusiveMinimum" | "exclusiveMaximum" => match v {
                Value::Bool(_) => Approx::constant(true),
                _ => match bound(v) {
                    Some(b) if k == "exclusiveMinimum" => Approx::exact(n.gt(&b)),
                    Some(b) => Approx::exact(n.lt(&b)),
                    None => Approx::unknown(),
                },
            },
            _ => self.multiple_of(i, v),
        }
    }

    /// `multipleOf` as the validator decides it: an integral divisor takes integral multiples;
    /// a fractional one (the `fraction` crate reads each `f64` as the shortest decimal it is
    /// close to, so `10` is a multiple of `0.01`) takes a value that is `0`, or at least the
    /// divisor and an integer times it — no negative value is a multiple there. Necessary: that,
    /// on the decimals numbers print as; sufficient: `0`, the divisor, or such an integer (whose
    /// decimal is exact).
    fn multiple_of(&mut self, i: usize, v: &Value) -> Approx {
        let Some(f) = v.as_f64().filter(|f| *f > 0.0 && f.is_finite()) else {
            return Approx::unknown();
        };
        let n = self.slots[i].n.clone();
        let k = Int::new_const(format!("k{i}_{}", f.to_bits()));
        if f.fract() == 0.0 {
            let d = Real::from_int(&Int::from_i64(f as i64));
            return Approx::exact(n.eq(Real::from_int(&k) * d));
        }
        let Some(m) = real_of_f64(f) else {
            return Approx::unknown();
        };
        let zero = n.eq(Real::from_int(&Int::from_i64(0)));
        let multiple = Bool::and(&[&n.ge(&m), &n.eq(Real::from_int(&k) * m.clone())]);
        let over = Bool::or(&[&zero, &multiple]);
        let under = Bool::or(&[&zero, &n.eq(&m), &Bool::and(&[&multiple, &n.is_int()])]);
        Approx::between(over, under)
    }

    fn string_keyword(&mut self, i: usize, k: &str, v: &Value) -> Approx {
        match k {
            "minLength" | "maxLength" => {
                let Some(b) = v.as_u64() else {
                    return Approx::unknown();
                };
                let a = if k == "minLength" {
                    Atom::MinLen(b)
                } else {
                    Atom::MaxLen(b)
                };
                match self.atom(i, a) {
                    Some(x) => Approx::exact(x),
                    None => Approx::unknown(),
                }
            }
            "pattern" => {
                let Some(p) = v.as_str() else {
                    return Approx::unknown();
                };
                match re_search(p).and_then(|re| self.atom(i, Atom::Re(re))) {
                    Some(x) => Approx::exact(x),
                    None => {
                        self.note(format!(
                            "the pattern `{p}` is beyond the solver's regular expressions"
                        ));
                        Approx::unknown()
                    }
                }
            }
            _ => {
                if !self.doc.draft.asserts_format() {
                    return Approx::constant(true);
                }
                let Some(f) = v.as_str() else {
                    return Approx::constant(true);
                };
                let sufficient =
                    crate::formats::sufficient(f).and_then(|re| self.atom(i, Atom::Re(re)));
                let necessary =
                    crate::formats::necessary(f).and_then(|re| self.atom(i, Atom::Re(re)));
                if sufficient.is_none() && necessary.is_none() && !crate::formats::asserted(f) {
                    return Approx::constant(true);
                }
                if necessary.is_none() {
                    self.note(format!(
                        "the format `{f}` is encoded by an example shape only"
                    ));
                }
                Approx::between(
                    necessary.unwrap_or_else(|| Bool::from_bool(true)),
                    sufficient.unwrap_or_else(|| Bool::from_bool(false)),
                )
            }
        }
    }

    fn array_keyword(
        &mut self,
        i: usize,
        k: &str,
        v: &'a Value,
        m: &'a serde_json::Map<String, Value>,
    ) -> Approx {
        let len = self.slots[i].len.clone();
        let items = self.slots[i].items.clone();
        let within = |j: usize| len.gt(Int::from_i64(j as i64));
        match k {
            "minItems" | "maxItems" => match v.as_u64() {
                Some(b) => {
                    let b = Int::from_u64(b);
                    Approx::exact(if k == "minItems" {
                        len.ge(&b)
                    } else {
                        len.le(&b)
                    })
                }
                None => Approx::unknown(),
            },
            "items" | "prefixItems" | "additionalItems" => {
                let mut parts = vec![];
                let tuple = self.doc.draft.tuple_items();
                for (j, &slot) in items.iter().enumerate() {
                    let sub: Option<&'a Value> = match (k, v) {
                        ("items", Value::Array(a)) if tuple => a.get(j),
                        ("items", x) if !tuple => {
                            let prefix = m
                                .get("prefixItems")
                                .and_then(Value::as_array)
                                .map_or(0, Vec::len);
                            (j >= prefix).then_some(x)
                        }
                        ("items", x) => Some(x),
                        ("prefixItems", Value::Array(a)) if !tuple => a.get(j),
                        ("additionalItems", x) if tuple => match m.get("items") {
                            Some(Value::Array(a)) => (j >= a.len()).then_some(x),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(sub) = sub {
                        let h = self.holds(slot, sub);
                        parts.push(Approx::when(&within(j), h));
                    }
                }
                // Items past the room: where the schema forbids none beyond it, they are
                // absent in every model (the length is within the room), which only cuts.
                Approx::and(&parts)
            }
            "contains" => {
                let hits: Vec<Approx> = items
                    .iter()
                    .enumerate()
                    .map(|(j, &slot)| {
                        let h = self.holds(slot, v);
                        Approx::also(&within(j), h)
                    })
                    .collect();
                let min = m.get("minContains").and_then(Value::as_u64);
                let max = m.get("maxContains").and_then(Value::as_u64);
                if self.doc.draft >= crate::doc::Draft::D2019 && (min.is_some() || max.is_some()) {
                    let count_over: Vec<Int> = hits
                        .iter()
                        .map(|h| h.over.ite(&Int::from_i64(1), &Int::from_i64(0)))
                        .collect();
                    let count_under: Vec<Int> = hits
                        .iter()
                        .map(|h| h.under.ite(&Int::from_i64(1), &Int::from_i64(0)))
                        .collect();
                    let sum = |xs: &[Int]| {
                        if xs.is_empty() {
                            Int::from_i64(0)
                        } else {
                            let r: Vec<&Int> = xs.iter().collect();
                            Int::add(&r)
                        }
                    };
                    let (co, cu) = (sum(&count_over), sum(&count_under));
                    let lo = Int::from_u64(min.unwrap_or(1));
                    let mut over = vec![co.ge(&lo)];
                    let mut under = vec![cu.ge(&lo)];
                    if let Some(hi) = max {
                        let hi = Int::from_u64(hi);
                        // At most: the count of items that surely match is a lower bound.
                        over.push(cu.le(&hi));
                        under.push(co.le(&hi));
                    }
                    let o: Vec<&Bool> = over.iter().collect();
                    let u: Vec<&Bool> = under.iter().collect();
                    Approx::between(Bool::and(&o), Bool::and(&u))
                } else {
                    Approx::or(&hits)
                }
            }
            _ => {
                if v != &Value::Bool(true) {
                    return Approx::constant(true);
                }
                let mut parts = vec![];
                for a in 0..items.len() {
                    for b in a + 1..items.len() {
                        let e = self.eq_slots(items[a], items[b], 0);
                        parts.push(Approx::when(&within(b), e.not()));
                    }
                }
                Approx::and(&parts)
            }
        }
    }

    /// The presence flags of every property of slot `i`: declared ones by name, then
    /// undeclared ones (with their name slots).
    fn present(&self, i: usize) -> (Vec<Property>, Vec<Extra>) {
        let slot = &self.slots[i];
        let keys = slot
            .keys
            .iter()
            .map(|(k, (p, c))| (k.clone(), p.clone(), *c))
            .collect();
        (keys, slot.extras.clone())
    }

    fn object_keyword(
        &mut self,
        i: usize,
        k: &str,
        v: &'a Value,
        m: &'a serde_json::Map<String, Value>,
    ) -> Approx {
        let (keys, extras) = self.present(i);
        let flag = |name: &str| {
            keys.iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, p, c)| (p.clone(), *c))
        };
        match k {
            "properties" => {
                let Some(props) = v.as_object() else {
                    return Approx::unknown();
                };
                let mut parts = vec![];
                for (name, sub) in props {
                    if let Some((p, c)) = flag(name) {
                        let h = self.holds(c, sub);
                        parts.push(Approx::when(&p, h));
                    }
                }
                Approx::and(&parts)
            }
            "required" => {
                let Some(r) = v.as_array() else {
                    return Approx::unknown();
                };
                let mut parts = vec![];
                for name in r.iter().filter_map(Value::as_str) {
                    match flag(name) {
                        Some((p, _)) => parts.push(Approx::exact(p)),
                        None => return Approx::unknown(),
                    }
                }
                Approx::and(&parts)
            }
            "additionalProperties" | "patternProperties" => {
                let patterns: Vec<(&String, &'a Value)> = m
                    .get("patternProperties")
                    .and_then(Value::as_object)
                    .map(|pp| pp.iter().collect())
                    .unwrap_or_default();
                let declared = |name: &str| m.get("properties").and_then(|p| p.get(name)).is_some();
                let mut parts = vec![];
                if k == "patternProperties" {
                    for (name, p, c) in &keys {
                        for (pat, sub) in &patterns {
                            if shape::key_matches(pat, name) {
                                let h = self.holds(*c, sub);
                                parts.push(Approx::when(p, h));
                            }
                        }
                    }
                    for (nslot, x, c) in &extras {
                        for (pat, sub) in &patterns {
                            let matches = self.key_search(*nslot, pat);
                            let h = self.holds(*c, sub);
                            let guard = Approx::also(x, matches);
                            parts.push(Approx::or(&[guard.not(), h]));
                        }
                    }
                    return Approx::and(&parts);
                }
                for (name, p, c) in &keys {
                    if declared(name)
                        || patterns
                            .iter()
                            .any(|(pat, _)| shape::key_matches(pat, name))
                    {
                        continue;
                    }
                    let h = self.holds(*c, v);
                    parts.push(Approx::when(p, h));
                }
                for (nslot, x, c) in &extras {
                    let mut unmatched = vec![Approx::exact(x.clone())];
                    for (pat, _) in &patterns {
                        unmatched.push(self.key_search(*nslot, pat).not());
                    }
                    let guard = Approx::and(&unmatched);
                    let h = self.holds(*c, v);
                    parts.push(Approx::or(&[guard.not(), h]));
                }
                Approx::and(&parts)
            }
            "propertyNames" => {
                let mut parts = vec![];
                for (name, p, _) in &keys {
                    let ks = self.bare(true);
                    match self.atom(ks, Atom::Eq(name.clone())) {
                        Some(eq) => self.wellformed.push(eq),
                        None => {
                            parts.push(Approx::unknown());
                            continue;
                        }
                    }
                    let h = self.holds(ks, v);
                    parts.push(Approx::when(p, h));
                }
                for (nslot, x, _) in &extras {
                    let h = self.holds(*nslot, v);
                    parts.push(Approx::when(x, h));
                }
                Approx::and(&parts)
            }
            "minProperties" | "maxProperties" => {
                let Some(b) = v.as_u64() else {
                    return Approx::unknown();
                };
                let ones: Vec<Int> = keys
                    .iter()
                    .map(|(_, p, _)| p.clone())
                    .chain(extras.iter().map(|(_, x, _)| x.clone()))
                    .map(|p| p.ite(&Int::from_i64(1), &Int::from_i64(0)))
                    .collect();
                let count = if ones.is_empty() {
                    Int::from_i64(0)
                } else {
                    let r: Vec<&Int> = ones.iter().collect();
                    Int::add(&r)
                };
                let b = Int::from_u64(b);
                Approx::exact(if k == "minProperties" {
                    count.ge(&b)
                } else {
                    count.le(&b)
                })
            }
            _ => {
                // dependentRequired, dependentSchemas, and draft 7's `dependencies` (either).
                let Some(d) = v.as_object() else {
                    return Approx::unknown();
                };
                let mut parts = vec![];
                for (name, dep) in d {
                    let Some((p, _)) = flag(name) else {
                        continue;
                    };
                    let then = match dep {
                        Value::Array(names) => {
                            let mut req = vec![];
                            for r in names.iter().filter_map(Value::as_str) {
                                match flag(r) {
                                    Some((q, _)) => req.push(Approx::exact(q)),
                                    None => req.push(Approx::unknown()),
                                }
                            }
                            Approx::and(&req)
                        }
                        sub => self.holds(i, sub),
                    };
                    parts.push(Approx::when(&p, then));
                }
                Approx::and(&parts)
            }
        }
    }

    /// Whether the name in slot `nslot` matches `pattern` (searched).
    fn key_search(&mut self, nslot: usize, pat: &str) -> Approx {
        match re_search(pat).and_then(|re| self.atom(nslot, Atom::Re(re))) {
            Some(x) => Approx::exact(x),
            None => {
                self.note(format!(
                    "the pattern `{pat}` is beyond the solver's regular expressions"
                ));
                Approx::unknown()
            }
        }
    }

    /// Every slot below `i` (itself included) that holds a value (not a property's name), with
    /// the top-level property it lies under, if any, and when it is part of the value (its
    /// parent holds it: an object with the property present, an array long enough).
    pub fn value_slots(&self, i: usize) -> Vec<(usize, Option<String>, Bool)> {
        let mut out = vec![];
        let mut stack: Vec<(usize, Option<String>, Bool)> = vec![(i, None, Bool::from_bool(true))];
        while let Some((j, top, lives)) = stack.pop() {
            out.push((j, top.clone(), lives.clone()));
            let slot = &self.slots[j];
            let obj = Bool::and(&[&lives, &tag_is(slot, Tag::Obj)]);
            let arr = Bool::and(&[&lives, &tag_is(slot, Tag::Arr)]);
            for (k, (p, c)) in &slot.keys {
                let under = top.clone().or_else(|| (j == i).then(|| k.clone()));
                stack.push((*c, under, Bool::and(&[&obj, p])));
            }
            for (_, x, c) in &slot.extras {
                stack.push((*c, top.clone(), Bool::and(&[&obj, x])));
            }
            for (k, c) in slot.items.iter().enumerate() {
                let within = slot.len.gt(Int::from_i64(k as i64));
                stack.push((*c, top.clone(), Bool::and(&[&arr, &within])));
            }
        }
        out.sort_by_key(|(j, _, _)| *j);
        out
    }
}

/// A declared property: its name, presence flag and value's slot.
type Property = (String, Bool, usize);
/// An undeclared property: its name's slot, presence flag and value's slot.
type Extra = (usize, Bool, usize);

/// Keywords that assert nothing.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "$id",
    "id",
    "$schema",
    "$anchor",
    "$defs",
    "definitions",
    "readOnly",
    "writeOnly",
    "deprecated",
    "discriminator",
    "x-order",
];

/// A JSON number as a rational: an integer exactly; a float as the shortest decimal it prints
/// as (`0.1` is 1/10), the value a person reads and the `fraction` crate the validator's
/// `multipleOf` uses reads. Comparisons with other floats agree but within an `f64`'s last
/// digit, which every value built is checked for again by the runtime's code.
pub(crate) fn real_of(n: &Number) -> Option<Real> {
    if let Some(i) = n.as_i64() {
        return Some(Real::from_int(&Int::from_i64(i)));
    }
    if let Some(u) = n.as_u64() {
        return Some(Real::from_int(&Int::from_u64(u)));
    }
    real_of_f64(n.as_f64()?)
}

/// The rational of a finite `f64`'s shortest decimal.
pub(crate) fn real_of_f64(f: f64) -> Option<Real> {
    let (num, den) = crate::decode::decimal_fraction(f)?;
    Real::from_rational_str(&num, &den)
}

trait OrUnknown {
    fn or_unknown_if(self, cut: bool) -> Approx;
}

impl OrUnknown for Approx {
    /// A constant whose falsity comes from a cut of the room, not from the schema: unknown.
    fn or_unknown_if(self, cut: bool) -> Approx {
        if cut {
            Approx::unknown()
        } else {
            self
        }
    }
}
