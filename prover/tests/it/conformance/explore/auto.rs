//! Runs whose host leaves origins to the check (SPEC §2 "Provenance, not authorship"): every
//! call is made with `origins: "auto"`, the person speaks at the start of each turn (a `user`
//! entry, sometimes naming values some call may carry), and an argument may carry a string an
//! earlier result holds. The check traces each argument; the explorer reads the trace back to
//! the lowered system's choices — an argument the trace calls `model` is the model's, `typed`
//! and `tool` are not — and leaves `origin.copied` open, so the matcher looks for any of its
//! values with the same decision and successor (a traced copy's marks decide its own taint and
//! nothing after it). Only random walks take such runs: the exhaustive odometer stays on stated
//! origins.

use super::*;
use toolcheck::call::Origins;
use toolcheck::provenance::{resolve, MIN_SUBSTRING};

impl<'a> Explorer<'a> {
    /// The person's message at the start of a turn: nothing, small talk, or a text naming one
    /// or two values a call may carry (an argument's stub value, a value a gate separates on).
    /// Not while a call is held: this explorer's history holds executions only, so the token
    /// binds the head as it was; a guard records the held call and passes over the person's
    /// yes (`held_head`), a path the check's own tests cover.
    pub(super) fn person_speaks(&self, s: &mut Sim, ch: &mut dyn Chooser) {
        if s.held.is_some() {
            return;
        }
        let text = match ch.pick(3) {
            0 => return,
            1 => "hello, can you help me with my account".to_string(),
            _ => {
                let vals = self.speakable_values();
                if vals.is_empty() {
                    return;
                }
                let a = &vals[ch.pick(vals.len())];
                let b = &vals[ch.pick(vals.len())];
                format!("please use {a} and then {b}, thanks")
            }
        };
        s.history.push_signed(
            toolcheck::history::Entry::user(&text, Some(s.turn as u64)),
            &self.key,
        );
        s.confirmed.push(false);
    }

    /// Strings and numbers a call may carry: the stub values of every tool's arguments and the
    /// values gates separate on, as the person would write them.
    fn speakable_values(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        for t in self.p.catalogue.tools.values() {
            if let Some(Value::Object(m)) = t.args.as_ref().map(|s| instance(s, "4411")) {
                out.extend(m.values().filter_map(speakable));
            }
        }
        for vals in self.arg_values.values() {
            out.extend(vals.iter().filter_map(speakable));
        }
        out.into_iter().collect()
    }

    /// An argument may carry a string an earlier result holds (a word of it, or the whole
    /// string): only free strings — not one a gate or a rule-sheet check reads (their values
    /// are chosen to separate the rule's comparisons), nor one whose schema constrains it.
    pub(super) fn pick_copies(
        &self,
        s: &Sim,
        t: &Tool,
        ch: &mut dyn Chooser,
        args: &mut Map<String, Value>,
    ) {
        let mut held = BTreeSet::new();
        for e in s.history.entries.iter().filter(|e| e.ran) {
            result_strings(&e.result, &mut held);
        }
        if held.is_empty() {
            return;
        }
        let held: Vec<String> = held.into_iter().collect();
        let gate = self.gate_args(&t.name);
        let names: Vec<String> = args.keys().cloned().collect();
        for a in names {
            let checked = t.checks.iter().any(|k| k.field == a);
            if gate.contains(&a) || checked || !free_string(t, &a) {
                continue;
            }
            if ch.pick(3) == 0 {
                args.insert(a, Value::String(held[ch.pick(held.len())].clone()));
            }
        }
    }
}

/// The call as the check traces it against the history (itself when its origins are stated).
pub(super) fn traced(p: &Project, s: &Sim, call: &Call) -> Call {
    resolve(&p.catalogue, &s.history, call).call.into_owned()
}

/// A call's origins as the lowered system's choices: per argument class, whether the model
/// wrote some argument of it; and, for an `auto` call, the marks its trace carried.
pub(super) fn record_origins(p: &Project, s: &Sim, t: &Tool, call: &Call, st: &mut ConcreteStep) {
    let tr = resolve(&p.catalogue, &s.history, call);
    for (a, o) in tr.call.origins.iter() {
        *st.choices
            .model_wrote
            .entry(ArgClass::of(t, a))
            .or_insert(false) |= *o == Origin::Model;
    }
    if call.origins.is_auto() {
        st.choices.traced = tr
            .call
            .origins
            .iter()
            .map(|(a, o)| (a.clone(), *o))
            .collect();
        st.choices.traced_marks = tr.marks.iter().filter_map(|m| Mark::from_name(m)).collect();
    }
}

/// The origins a call is built with: `auto` in such a run, else chosen per class. After a
/// router's tool step the call is the person's own command (SPEC §3: every argument typed),
/// which a host states as such.
pub(super) fn origins_for(
    s: &Sim,
    t: &Tool,
    via: Via,
    ch: &mut dyn Chooser,
    st: &mut ConcreteStep,
    args: &Map<String, Value>,
) -> Origins {
    if s.auto && via != Via::Typed {
        Origins::Auto
    } else {
        calls::pick_origins(t, via, ch, st, args).into()
    }
}

fn speakable(v: &Value) -> Option<String> {
    match v {
        Value::String(x) if x.chars().count() >= MIN_SUBSTRING => Some(x.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Every string of a result long enough to be traced, and each of its words that is.
fn result_strings(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(x) => {
            for w in std::iter::once(x.as_str()).chain(x.split_whitespace()) {
                if w.chars().count() >= MIN_SUBSTRING {
                    out.insert(w.to_string());
                }
            }
        }
        Value::Array(xs) => xs.iter().for_each(|x| result_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| result_strings(x, out)),
        _ => {}
    }
}

/// Whether the tool's schema declares `arg` a string any text may fill.
fn free_string(t: &Tool, arg: &str) -> bool {
    let Some(p) = t
        .args
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(|ps| ps.get(arg))
    else {
        return false;
    };
    p.get("type") == Some(&Value::from("string"))
        && [
            "enum",
            "const",
            "pattern",
            "format",
            "maxLength",
            "minLength",
        ]
        .iter()
        .all(|k| p.get(*k).is_none())
}
