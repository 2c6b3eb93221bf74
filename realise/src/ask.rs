//! The answer to one question: Z3 over the constraint groups, with the strings' atoms checked
//! by automata (`strings`) and every combination of atoms no string has blocked and asked again.
//!
//! First the **necessary** sides: unsatisfiable (after blocking the string atoms no string has,
//! each block proved by an exhaustive search over bytes) is a proof that no value exists —
//! unless the room the value was given was cut (`shape`), when it is only "not built". Then
//! the **sufficient** sides, strings kept to printable ASCII (and, for a tool that does not
//! send out, without `.`, `@` or `:`): a model with a witness string for every string place is
//! a value, handed out only after the runtime's code accepts it. Failing that, models of the
//! necessary sides are tried the same way. Otherwise `not built`, naming what the encoding could
//! not say.

use crate::decode;
use crate::encode::{Atom, Enc, Tag};
use crate::query::Group;
use crate::strings::{self, Need};
use ir::want::{Realised, Want};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use z3::ast::Bool;
use z3::{Model, Params, SatResult, Solver};

/// Z3's resource limit for one check (deterministic, unlike a clock).
const RLIMIT: u32 = 4_000_000;
/// Models tried per side before giving up.
const TRIES: usize = 6;
/// Rounds of blocking string atoms no string has, per side.
const ROUNDS: usize = 64;
/// Printable ASCII but the backslash.
const PRINTABLE: &str = r"^[ -\[\]-~]*$";

/// The strings in which rule 4 finds a destination, a host read as any dotted name (`hosts`),
/// or none in a `path` argument.
fn destination_re(hosts: bool) -> String {
    use toolcheck::destinations::{EMAIL, HOST, IP, URL};
    let mut alts = vec![URL, EMAIL, IP];
    if hosts {
        alts.push(HOST);
    }
    let alts: Vec<String> = alts.iter().map(|a| format!("(?:{a})")).collect();
    format!("^(?s:.*)(?:{})(?s:.*)$", alts.join("|"))
}

fn solver() -> Solver {
    let mut params = Params::new();
    params.set_u32("rlimit", RLIMIT);
    let s = Solver::new();
    s.set_params(&params);
    s
}

/// The answer: a proof of no value, a value, or why none was built.
pub(crate) fn decide(
    want: &Want,
    mut enc: Enc<'_, '_>,
    groups: &[Group],
    cuts: &[String],
    plain: &BTreeMap<usize, bool>,
) -> Realised {
    let facts = eq_facts(&enc);
    let over = solver();
    for w in enc.wellformed.iter().chain(&facts) {
        over.assert(w);
    }
    let tracks: Vec<Bool> = (0..groups.len())
        .map(|i| Bool::new_const(format!("g{i}")))
        .collect();
    for (g, t) in groups.iter().zip(&tracks) {
        over.assert_and_track(g.c.over.clone(), t);
    }
    for _ in 0..ROUNDS {
        match over.check() {
            SatResult::Unsat => {
                if !cuts.is_empty() {
                    return Realised::NotBuilt(format!(
                        "no value within the room the solver gave it ({})",
                        cuts.join("; ")
                    ));
                }
                let core: BTreeSet<String> = over
                    .get_unsat_core()
                    .iter()
                    .map(|b| b.to_string())
                    .collect();
                let parts: Vec<&str> = groups
                    .iter()
                    .zip(&tracks)
                    .filter(|(_, t)| core.contains(&t.to_string()))
                    .map(|(g, _)| g.name.as_str())
                    .collect();
                return Realised::Empty(format!("no value has all of: {}", parts.join("; ")));
            }
            SatResult::Unknown => break,
            SatResult::Sat => {
                let Some(model) = over.get_model() else {
                    break;
                };
                // Each string place's chosen atoms, checked over every byte: a choice no
                // string has is blocked (exactly: the search is exhaustive).
                let mut blocked = false;
                for j in string_slots(&enc, &model) {
                    let atoms = chosen(&enc, &model, &[j]);
                    let empty = |n: &Need| strings::nonempty(n) == Some(false);
                    if empty(&need_of(&atoms)) {
                        let core: Vec<Bool> =
                            shrink(&atoms, empty).into_iter().map(|c| c.2).collect();
                        over.assert(clause(&enc, &[j], &core).not());
                        blocked = true;
                    }
                }
                if !blocked {
                    break;
                }
            }
        }
    }
    // The sufficient sides.
    let under = solver();
    for w in &enc.wellformed {
        under.assert(w);
    }
    for g in groups {
        under.assert(&g.c.under);
    }
    for j in 0..enc.slots.len() {
        let is_str = enc.tag_is(j, Tag::Str);
        if let Some(a) = enc.atom(j, Atom::Re(PRINTABLE.into())) {
            under.assert(is_str.implies(&a));
        }
        if let Some(&hosts) = plain.get(&j) {
            if let Some(d) = enc.atom(j, Atom::Re(destination_re(hosts))) {
                under.assert(is_str.implies(d.not()));
            }
        }
    }
    for f in eq_facts(&enc) {
        under.assert(f);
    }
    // Prefer no undeclared properties where none is needed.
    let none_extra: Vec<Bool> = enc
        .slots
        .iter()
        .flat_map(|s| s.extras.iter().map(|(_, x, _)| x.not()))
        .collect();
    if let Some(v) = models(want, &enc, &under, &none_extra) {
        return Realised::Value(v);
    }
    if let Some(v) = models(want, &enc, &under, &[]) {
        return Realised::Value(v);
    }
    if let Some(v) = models(want, &enc, &over, &[]) {
        return Realised::Value(v);
    }
    let mut why: Vec<String> = enc.notes.clone();
    why.extend(cuts.iter().cloned());
    if why.is_empty() {
        why.push("the solver found no value the runtime accepts within its limit".into());
    }
    Realised::NotBuilt(why.join("; "))
}

/// What a string's equality to a constant settles: its other atoms (each judged on the
/// constant), and no two different constants at once. Exact facts, asserted on both sides, so
/// the search never has to learn them one blocked combination at a time.
fn eq_facts(enc: &Enc<'_, '_>) -> Vec<Bool> {
    let mut out = vec![];
    for atoms in &enc.atoms {
        for (a, b) in atoms {
            let Atom::Eq(c) = a else {
                continue;
            };
            for (other, x) in atoms {
                if other == a {
                    continue;
                }
                if let Some(v) = other.holds_of(c) {
                    out.push(b.implies(if v { x.clone() } else { x.not() }));
                }
            }
        }
    }
    // Two strings said equal have the same atoms; two equal to one constant are equal.
    for (i, j, same) in &enc.same {
        for (a, x) in &enc.atoms[*i] {
            if let Some(y) = enc.atoms[*j].get(a) {
                out.push(same.implies(x.eq(y)));
                if matches!(a, Atom::Eq(_)) {
                    out.push(Bool::and(&[x, y]).implies(same));
                }
            }
        }
    }
    out
}

/// The slots that hold a string in `model`.
fn string_slots(enc: &Enc<'_, '_>, model: &Model) -> Vec<usize> {
    (0..enc.slots.len())
        .filter(|&j| {
            model.eval(&enc.slots[j].tag, true).and_then(|t| t.as_i64()) == Some(Tag::Str as i64)
        })
        .collect()
}

/// One atom of a string as a model chose it: the atom, its value, and the literal saying so.
type Chosen = (Atom, bool, Bool);

/// The atoms the strings of `members` (one string, where several are equal) have in `model`.
fn chosen(enc: &Enc<'_, '_>, model: &Model, members: &[usize]) -> Vec<Chosen> {
    let mut out = vec![];
    for &j in members {
        for (a, b) in &enc.atoms[j] {
            let val = model
                .eval(b, true)
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            out.push((a.clone(), val, if val { b.clone() } else { b.not() }));
        }
    }
    out
}

/// What a string with these atoms must have.
fn need_of(atoms: &[Chosen]) -> Need {
    let mut need = Need::default();
    for (a, val, _) in atoms {
        let val = *val;
        match a {
            Atom::Re(_) | Atom::Eq(_) => {
                if let Some(d) = a.regex().as_deref().and_then(strings::compile) {
                    if val {
                        need.yes.push(d);
                    } else {
                        need.no.push(d);
                    }
                }
            }
            Atom::MinLen(n) if val => need.min_len = need.min_len.max(*n as usize),
            Atom::MinLen(n) => {
                if *n == 0 {
                    // Shorter than nothing: no string.
                    need.max_len = Some(0);
                    need.min_len = usize::MAX;
                } else {
                    let m = *n as usize - 1;
                    need.max_len = Some(need.max_len.map_or(m, |x| x.min(m)));
                }
            }
            Atom::MaxLen(n) if val => {
                need.max_len = Some(need.max_len.map_or(*n as usize, |x| x.min(*n as usize)))
            }
            Atom::MaxLen(n) => need.min_len = need.min_len.max(*n as usize + 1),
        }
    }
    need
}

/// A smallest part of `atoms` that still has no string by `infeasible` (each atom dropped in
/// turn where the rest stay infeasible): the block then rules out every choice sharing it.
fn shrink(atoms: &[Chosen], infeasible: impl Fn(&Need) -> bool) -> Vec<Chosen> {
    let mut keep: Vec<Chosen> = atoms.to_vec();
    let mut i = 0;
    while i < keep.len() {
        let mut without = keep.clone();
        without.remove(i);
        if infeasible(&need_of(&without)) {
            keep = without;
        } else {
            i += 1;
        }
    }
    keep
}

/// "These slots hold strings with exactly these atoms": the conjunction a block negates.
fn clause(enc: &Enc<'_, '_>, members: &[usize], lits: &[Bool]) -> Bool {
    let mut all: Vec<Bool> = members.iter().map(|&j| enc.tag_is(j, Tag::Str)).collect();
    all.extend(lits.iter().cloned());
    let refs: Vec<&Bool> = all.iter().collect();
    Bool::and(&refs)
}

/// A string for every string slot of `model`: slots said equal share one, slots said different
/// get different ones; `Err` with a clause to block where some group's atoms have no witness.
fn strings_of(enc: &Enc<'_, '_>, model: &Model) -> Result<BTreeMap<usize, String>, Option<Bool>> {
    let strs = string_slots(enc, model);
    let is_str: BTreeSet<usize> = strs.iter().copied().collect();
    // Union-find over "equal" pairs.
    let mut parent: BTreeMap<usize, usize> = strs.iter().map(|&j| (j, j)).collect();
    fn find(p: &mut BTreeMap<usize, usize>, x: usize) -> usize {
        let mut r = x;
        while p[&r] != r {
            r = p[&r];
        }
        r
    }
    let mut differ: Vec<(usize, usize)> = vec![];
    let mut same_lits: BTreeMap<usize, Vec<Bool>> = BTreeMap::new();
    for (i, j, b) in &enc.same {
        if !(is_str.contains(i) && is_str.contains(j)) {
            continue;
        }
        let eq = model
            .eval(b, true)
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        if eq {
            let (a, c) = (find(&mut parent, *i), find(&mut parent, *j));
            parent.insert(a.max(c), a.min(c));
            same_lits.entry(*i).or_default().push(b.clone());
        } else {
            differ.push((*i, *j));
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &j in &strs {
        let r = find(&mut parent, j);
        groups.entry(r).or_default().push(j);
    }
    let mut picked: BTreeMap<usize, String> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (root, members) in &groups {
        let atoms = chosen(enc, model, members);
        let need = need_of(&atoms);
        let mut extra: Vec<char> = vec![];
        for &j in members {
            for a in enc.atoms[j].keys() {
                if let Some(re) = a.regex() {
                    extra.extend(strings::named_chars(&re));
                }
            }
        }
        let avoid: Vec<String> = differ
            .iter()
            .filter_map(|(i, j)| {
                let (ri, rj) = (find(&mut parent, *i), find(&mut parent, *j));
                if ri == *root {
                    picked.get(&rj).cloned()
                } else if rj == *root {
                    picked.get(&ri).cloned()
                } else {
                    None
                }
            })
            .collect();
        match strings::witness(&need, &extra, &avoid) {
            Some(w) => {
                for &j in members {
                    out.insert(j, w.clone());
                }
                picked.insert(*root, w);
            }
            None if avoid.is_empty() => {
                let none = |n: &Need| strings::witness(n, &extra, &[]).is_none();
                let mut lits: Vec<Bool> = shrink(&atoms, none).into_iter().map(|c| c.2).collect();
                for &j in members {
                    lits.extend(same_lits.get(&j).cloned().unwrap_or_default());
                }
                return Err(Some(clause(enc, members, &lits)));
            }
            None => return Err(None),
        }
    }
    Ok(out)
}

/// Models of `solver` (under `assume`) with their strings, each read back and judged by the
/// runtime's code; the first accepted.
fn models(
    want: &Want,
    enc: &Enc<'_, '_>,
    solver: &Solver,
    assume: &[Bool],
) -> Option<Map<String, Value>> {
    solver.push();
    let found = (|| {
        let mut tries = 0;
        for _ in 0..ROUNDS {
            if tries >= TRIES || solver.check_assumptions(assume) != SatResult::Sat {
                return None;
            }
            let model = solver.get_model()?;
            let strs = match strings_of(enc, &model) {
                Ok(s) => s,
                Err(Some(block)) => {
                    solver.assert(block.not());
                    continue;
                }
                Err(None) => {
                    tries += 1;
                    solver.assert(differ(enc, &model));
                    continue;
                }
            };
            tries += 1;
            if let Some(Value::Object(m)) = decode::value(enc, &model, &strs, 0) {
                if crate::concrete::satisfies(want, &m) {
                    return Some(m);
                }
            }
            solver.assert(differ(enc, &model));
        }
        None
    })();
    solver.pop(1);
    found
}

/// "Some place of the value differs from `model`": among the places the value holds, a type, a
/// number, a Boolean, a length, a property's presence, or a string atom (of a value or of an
/// undeclared property's name).
fn differ(enc: &Enc<'_, '_>, model: &Model) -> Bool {
    let mut out: Vec<Bool> = vec![];
    let holds = |b: &Bool| {
        model
            .eval(b, true)
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    };
    let atoms_of = |j: usize, out: &mut Vec<Bool>| {
        for b in enc.atoms[j].values() {
            out.push(if holds(b) { b.not() } else { b.clone() });
        }
    };
    for (j, _, lives) in enc.value_slots(0) {
        if !holds(&lives) {
            continue;
        }
        let slot = &enc.slots[j];
        let Some(t) = model.eval(&slot.tag, true) else {
            continue;
        };
        out.push(slot.tag.eq(&t).not());
        match t.as_i64() {
            Some(x) if x == Tag::Bool as i64 => {
                if let Some(b) = model.eval(&slot.b, true) {
                    out.push(slot.b.eq(&b).not());
                }
            }
            Some(x) if x == Tag::Num as i64 => {
                if let Some(n) = model.eval(&slot.n, true) {
                    out.push(slot.n.eq(&n).not());
                }
            }
            Some(x) if x == Tag::Str as i64 => atoms_of(j, &mut out),
            Some(x) if x == Tag::Arr as i64 => {
                if let Some(l) = model.eval(&slot.len, true) {
                    out.push(slot.len.eq(&l).not());
                }
            }
            Some(x) if x == Tag::Obj as i64 => {
                for (p, _) in slot.keys.values() {
                    out.push(if holds(p) { p.not() } else { p.clone() });
                }
                for (name, x, _) in &slot.extras {
                    out.push(if holds(x) { x.not() } else { x.clone() });
                    if holds(x) {
                        atoms_of(*name, &mut out);
                    }
                }
            }
            _ => {}
        }
    }
    let refs: Vec<&Bool> = out.iter().collect();
    Bool::or(&refs)
}
