//! One question put to Z3: the value's places (`shape`), the tool's schema and every choice the
//! call made as named groups of constraints (`encode`), and the answer (`ask`).

use crate::approx::Approx;
use crate::ask::decide;
use crate::doc;
use crate::encode::{self, Atom, Enc, Tag};
use crate::shape;
use ir::rulebook::{CmpOp, Operand};
use ir::vocab::{CheckOp, CheckOutcome};
use ir::want::{ArgsAre, Bound, Realised, Want, WantCheck};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use z3::ast::{Bool, Int, Real};

/// One named group of constraints, so an unsatisfiable answer can say which parts clash.
pub(crate) struct Group {
    pub name: String,
    pub c: Approx,
}

pub(crate) fn with_z3(want: &Want) -> Realised {
    let any_schema = Value::Bool(true);
    let schema = want.schema.as_ref().unwrap_or(&any_schema);
    let doc = doc::Doc::new(schema);
    // Room the value needs: every argument a literal, a check or an undo names, and the
    // constants they compare with.
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut consts: Vec<Value> = vec![];
    for (lit, _) in &want.literals {
        if let Operand::Arg(a) = &lit.operand {
            names.insert(a.clone());
            if let Some(v) = &lit.value {
                consts.push(serde_json::json!({ a.clone(): v }));
            }
        }
    }
    for c in &want.checks {
        names.insert(c.check.field.clone());
        if let Bound::Known(b) = &c.bound {
            match (c.check.op, b) {
                (CheckOp::In | CheckOp::NotIn, Value::Array(items)) => {
                    for x in items {
                        consts.push(serde_json::json!({ c.check.field.clone(): x }));
                    }
                }
                _ => consts.push(serde_json::json!({ c.check.field.clone(): b })),
            }
        }
    }
    for group in &want.present {
        names.extend(group.iter().cloned());
    }
    for (k, v) in &want.fixed {
        names.insert(k.clone());
        if let Some(v) = v {
            consts.push(serde_json::json!({ k.clone(): v }));
        }
    }
    let const_refs: Vec<&Value> = consts.iter().collect();
    let shape = shape::shape(&doc, vec![schema], &names, const_refs);
    let mut enc = Enc::new(&doc, &shape.root);
    let mut groups: Vec<Group> = vec![Group {
        name: "the arguments are an object".into(),
        c: Approx::exact(enc.tag_is(0, Tag::Obj)),
    }];
    let valid = enc.holds(0, schema);
    let dest = destinations(&mut enc, &want.paths);
    let mut plain: BTreeMap<usize, bool> = BTreeMap::new();
    match want.validity {
        ArgsAre::Valid => {
            groups.push(Group {
                name: "the arguments validate against the tool's schema".into(),
                c: valid,
            });
            if !want.sends_out {
                // No destination: encoded on the sufficient side only — no string of the value
                // holds a match of rule 4's patterns, a host read as any dotted name (`decide`);
                // the necessary side is `true` (so it proves nothing).
                plain = enc
                    .value_slots(0)
                    .into_iter()
                    .map(|(j, top, _)| (j, top.is_none_or(|t| !want.paths.contains(&t))))
                    .collect();
            }
        }
        ArgsAre::Invalid if want.sends_out => groups.push(Group {
            name: "the arguments do not validate against the tool's schema".into(),
            c: valid.not(),
        }),
        ArgsAre::Invalid => groups.push(Group {
            name: "the arguments do not validate against the tool's schema, or hold a \
                   destination (the tool does not send out)"
                .into(),
            c: Approx::or(&[valid.not(), Approx::and(&[valid, dest])]),
        }),
    }
    for (lit, truth) in &want.literals {
        let Operand::Arg(a) = &lit.operand else {
            continue;
        };
        let c = literal(&mut enc, a, lit.op, lit.value.as_ref());
        groups.push(Group {
            name: format!(
                "the rulebook's `{a} {:?}{}` is {truth}",
                lit.op,
                lit.value
                    .as_ref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default()
            ),
            c: if *truth { c } else { c.not() },
        });
    }
    if let Some(outcome) = want.check_outcome {
        let each: Vec<Approx> = want.checks.iter().map(|c| check(&mut enc, c)).collect();
        let (name, c) = match outcome {
            CheckOutcome::Holds => ("every rule-sheet check holds", Approx::and(&each)),
            CheckOutcome::Fails => {
                let fails: Vec<Approx> = each.iter().map(Approx::not).collect();
                ("some rule-sheet check fails", Approx::or(&fails))
            }
        };
        let fields: Vec<&str> = want.checks.iter().map(|c| c.check.field.as_str()).collect();
        groups.push(Group {
            name: format!("{name} (on {})", fields.join(", ")),
            c,
        });
    }
    for (k, v) in &want.fixed {
        let c = match v {
            Some(v) => {
                let (p, slot) = enc.slots[0].keys[k].clone();
                let e = enc.eq_value(slot, v);
                Approx::also(&p, e)
            }
            None => Approx::exact(enc.slots[0].keys[k].0.not()),
        };
        groups.push(Group {
            name: format!("`{k}` is bound by the undo to the run it undoes"),
            c,
        });
    }
    for group in &want.present {
        let flags: Vec<Bool> = group
            .iter()
            .filter_map(|a| arg(&enc, a).map(|(p, _)| p))
            .collect();
        let refs: Vec<&Bool> = flags.iter().collect();
        groups.push(Group {
            name: format!("one of {} is given (the model wrote it)", group.join(", ")),
            c: Approx::exact(Bool::or(&refs)),
        });
    }
    decide(want, enc, &groups, &shape.cuts, &plain)
}

/// The regular expression (whole string) of the strings with `.`, `@` or `:` in them: every
/// URL, e-mail address, IP address and host has one, so a string without is no destination.
pub(crate) const MARKS: &str = r"^(?s:.*)[.@:](?s:.*)$";

/// Whether some string of the value holds a destination, as rule 4 reads them: necessary, the
/// string has `.`, `@` or `:` in it ([`MARKS`]); sufficient, it holds a URL, an e-mail address,
/// an IP address or (outside a `path` argument) a host under a public suffix, set apart by
/// spaces.
fn destinations(enc: &mut Enc<'_, '_>, paths: &[String]) -> Approx {
    let mut parts = vec![];
    for (j, top, lives) in enc.value_slots(0) {
        let is_str = Bool::and(&[&lives, &enc.tag_is(j, Tag::Str)]);
        let host_ok = top.as_ref().is_none_or(|t| !paths.contains(t));
        let mut shapes = vec![
            r"https://qls\.invalid/x",
            r"eve@qls\.example",
            r"10\.0\.0\.1",
        ];
        if host_ok {
            shapes.push(r"qls-test\.com");
        }
        let under_re = format!("^(?:(?s:.*) )?(?:{})(?: (?s:.*))?$", shapes.join("|"));
        let (Some(over), Some(under)) = (
            enc.atom(j, Atom::Re(MARKS.into())),
            enc.atom(j, Atom::Re(under_re)),
        ) else {
            parts.push(Approx::unknown());
            continue;
        };
        parts.push(Approx::also(&is_str, Approx::between(over, under)));
    }
    Approx::or(&parts)
}

/// The slot of top-level argument `a` and its presence flag.
fn arg(enc: &Enc<'_, '_>, a: &str) -> Option<(Bool, usize)> {
    enc.slots[0].keys.get(a).cloned()
}

/// Whether the rulebook's literal `a op value` holds on the arguments (an absent argument reads
/// as `null`, as the gate reads it): `ir::rulebook::holds`, encoded.
fn literal(enc: &mut Enc<'_, '_>, a: &str, op: CmpOp, value: Option<&Value>) -> Approx {
    let Some((p, slot)) = arg(enc, a) else {
        return Approx::unknown();
    };
    let null = Value::Null;
    let v = value.unwrap_or(&null);
    match op {
        CmpOp::Truthy | CmpOp::Falsy => {
            let t = truthy(enc, slot);
            let t = Approx::also(&p, t);
            if op == CmpOp::Truthy {
                t
            } else {
                t.not()
            }
        }
        CmpOp::Eq | CmpOp::Ne => {
            let present = enc.eq_value(slot, v);
            let eq = Approx::or(&[
                Approx::also(&p, present),
                Approx::exact(Bool::and(&[&p.not(), &Bool::from_bool(v.is_null())])),
            ]);
            if op == CmpOp::Eq {
                eq
            } else {
                eq.not()
            }
        }
        _ => {
            let Some(b) = v.as_number().and_then(encode::real_of) else {
                return Approx::constant(false);
            };
            let n = enc.slots[slot].n.clone();
            let cmp = match op {
                CmpOp::Lt => n.lt(&b),
                CmpOp::Le => n.le(&b),
                CmpOp::Gt => n.gt(&b),
                _ => n.ge(&b),
            };
            Approx::exact(Bool::and(&[&p, &enc.tag_is(slot, Tag::Num), &cmp]))
        }
    }
}

/// Colang's truthiness of slot `i` (`ir::rulebook::truthy`).
fn truthy(enc: &mut Enc<'_, '_>, i: usize) -> Approx {
    let nonempty = match enc.atom(i, Atom::MinLen(1)) {
        Some(x) => x,
        None => return Approx::unknown(),
    };
    let slot = &enc.slots[i];
    let zero = Real::from_int(&Int::from_i64(0));
    let mut obj: Vec<Bool> = slot.keys.values().map(|(p, _)| p.clone()).collect();
    obj.extend(slot.extras.iter().map(|(_, x, _)| x.clone()));
    let obj_refs: Vec<&Bool> = obj.iter().collect();
    Approx::exact(Bool::or(&[
        &Bool::and(&[&enc.tag_is(i, Tag::Bool), &slot.b]),
        &Bool::and(&[&enc.tag_is(i, Tag::Num), &slot.n.eq(&zero).not()]),
        &Bool::and(&[&enc.tag_is(i, Tag::Str), &nonempty]),
        &Bool::and(&[&enc.tag_is(i, Tag::Arr), &slot.len.gt(Int::from_i64(0))]),
        &Bool::and(&[&enc.tag_is(i, Tag::Obj), &Bool::or(&obj_refs)]),
    ]))
}

/// Whether a rule-sheet check holds on the arguments (`toolcheck`'s comparison, encoded; a
/// missing argument or an unreadable value fails it; a `Free` value holds for some value).
fn check(enc: &mut Enc<'_, '_>, c: &WantCheck) -> Approx {
    let Some((p, slot)) = arg(enc, &c.check.field) else {
        return Approx::unknown();
    };
    let is_num = enc.tag_is(slot, Tag::Num);
    let b = match &c.bound {
        Bound::Unreadable(_) => return Approx::constant(false),
        Bound::Free => {
            return Approx::exact(match c.check.op {
                CheckOp::AtMost | CheckOp::AtLeast | CheckOp::Under | CheckOp::Over => {
                    Bool::and(&[&p, &is_num])
                }
                _ => p,
            })
        }
        Bound::Known(b) => b,
    };
    let ordered = |enc: &Enc<'_, '_>, op: CmpOp| -> Approx {
        let Some(r) = b.as_number().and_then(encode::real_of) else {
            return Approx::constant(false);
        };
        let n = enc.slots[slot].n.clone();
        let cmp = match op {
            CmpOp::Le => n.le(&r),
            CmpOp::Ge => n.ge(&r),
            CmpOp::Lt => n.lt(&r),
            _ => n.gt(&r),
        };
        Approx::exact(Bool::and(&[&p, &is_num, &cmp]))
    };
    match c.check.op {
        CheckOp::AtMost => ordered(enc, CmpOp::Le),
        CheckOp::AtLeast => ordered(enc, CmpOp::Ge),
        CheckOp::Under => ordered(enc, CmpOp::Lt),
        CheckOp::Over => ordered(enc, CmpOp::Gt),
        CheckOp::Is => {
            let e = enc.eq_value(slot, b);
            Approx::also(&p, e)
        }
        CheckOp::In | CheckOp::NotIn => {
            let Some(items) = b.as_array() else {
                return Approx::constant(false);
            };
            let eqs: Vec<Approx> = items.iter().map(|x| enc.eq_value(slot, x)).collect();
            let any = Approx::or(&eqs);
            let inside = if c.check.op == CheckOp::In {
                any
            } else {
                any.not()
            };
            Approx::also(&p, inside)
        }
    }
}
