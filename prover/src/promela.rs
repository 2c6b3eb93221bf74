//! The transition system as a Promela model, for cross-checking the BFS engine against SPIN.
//!
//! The model is built so that SPIN's stored state count equals ours: one `active proctype`
//! whose body is a single `end:`-labelled `do` loop (so the process's program counter never
//! changes and a state with no enabled option is a valid end state), the state variables as
//! globals, and one option per (command, valuation of the command's own choices) whose guard is
//! not constantly false. Each option is one `d_step` (one SPIN transition, no intermediate
//! states): its first statement is the guard with the choices substituted as constants, then the
//! obligations' assertions (evaluated in the pre-state), then the updates as parallel
//! assignments. A cycle among the updates goes through temporaries `tmpN`; SPIN's breadth-first
//! mode refuses `hidden` variables, so the temporaries are ordinary globals that every `d_step`
//! resets to 0, and they are the same in every stored state.
//!
//! Every obligation's assertion carries its number in a term that is always false,
//! `assert(!(cond) || obligation == K)` with the constant global `obligation = 0` and
//! `K = index + 1`, so `pan -c0` (do not stop at errors) reports, in one search of the whole
//! space, which obligations are violated: the assertion text names `obligation==K`. A failed
//! assertion does not stop the transition, so the searched space is the same with or without
//! assertions.
//!
//! Compile with `spin -o2 -a`: by default SPIN hides variables that are assigned but never read
//! (for instance `agent` when no guard reads it), which merges states the BFS keeps apart.

use encoder::ts::{ex, ChoiceId, Command, Expr, Obligation, TransitionSystem, VarId};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The Promela identifier of a state variable: `v<index>_<name>` with every character that is
/// not a letter, digit or `_` replaced by `_`.
pub fn var_name(ts: &TransitionSystem, v: VarId) -> String {
    let d = &ts.vars[v.0 as usize];
    let clean: String = d
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("v{}_{}", v.0, clean)
}

/// The smallest Promela integer type holding `0..domain`.
fn type_for(domain: u32) -> &'static str {
    if domain <= 256 {
        "byte"
    } else if domain <= 32768 {
        "short"
    } else {
        "int"
    }
}

/// Whether an expression is boolean-valued (the variants that compare or combine).
fn is_bool(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Bool(_) | Expr::Not(_) | Expr::And(_) | Expr::Or(_) | Expr::Eq(..) | Expr::Lt(..)
    )
}

/// Whether an expression is a constant.
fn is_const(e: &Expr) -> bool {
    matches!(e, Expr::Bool(_) | Expr::Const(_))
}

/// Substitutes the choices' values and folds every constant sub-term, so a guard that cannot
/// hold for this valuation becomes `Bool(false)`.
pub fn substitute(ts: &TransitionSystem, e: &Expr, choice: &[u32]) -> Expr {
    let s = |x: &Expr| substitute(ts, x, choice);
    let folded = match e {
        Expr::Bool(_) | Expr::Const(_) | Expr::Var(_) => return e.clone(),
        Expr::Choice(c) => return Expr::Const(choice[c.0 as usize]),
        Expr::Not(a) => ex::not(s(a)),
        Expr::And(es) => ex::and(es.iter().map(s).collect()),
        Expr::Or(es) => ex::or(es.iter().map(s).collect()),
        Expr::Eq(a, b) => ex::eq(s(a), s(b)),
        Expr::Lt(a, b) => ex::lt(s(a), s(b)),
        Expr::Add(a, k) => Expr::Add(Box::new(s(a)), *k),
        Expr::Ite(c, a, b) => ex::ite(s(c), s(a), s(b)),
    };
    let closed = match &folded {
        Expr::Not(a) | Expr::Add(a, _) => is_const(a),
        Expr::Eq(a, b) | Expr::Lt(a, b) => is_const(a) && is_const(b),
        Expr::Ite(c, a, b) => is_const(c) && is_const(a) && is_const(b),
        Expr::And(es) | Expr::Or(es) => es.iter().all(is_const),
        _ => false,
    };
    if !closed {
        return folded;
    }
    if is_bool(&folded) {
        Expr::Bool(ts.eval_bool(&folded, &[], &[]))
    } else {
        Expr::Const(ts.eval_int(&folded, &[], &[]))
    }
}

/// Prints an expression in Promela syntax (fully parenthesised; booleans are 0/1 as in C).
pub fn expr(ts: &TransitionSystem, e: &Expr) -> String {
    let p = |x: &Expr| expr(ts, x);
    match e {
        Expr::Bool(true) => "true".into(),
        Expr::Bool(false) => "false".into(),
        Expr::Const(c) => c.to_string(),
        Expr::Var(v) => var_name(ts, *v),
        Expr::Choice(c) => format!("/* unsubstituted choice {} */ 0", c.0),
        Expr::Not(a) => format!("!{}", paren(&p(a))),
        Expr::And(es) if es.is_empty() => "true".into(),
        Expr::Or(es) if es.is_empty() => "false".into(),
        Expr::And(es) => format!("({})", es.iter().map(p).collect::<Vec<_>>().join(" && ")),
        Expr::Or(es) => format!("({})", es.iter().map(p).collect::<Vec<_>>().join(" || ")),
        Expr::Eq(a, b) => format!("({} == {})", p(a), p(b)),
        Expr::Lt(a, b) => format!("({} < {})", p(a), p(b)),
        Expr::Add(a, k) => format!("({} + {k})", p(a)),
        Expr::Ite(c, a, b) => format!("({} -> {} : {})", p(c), p(a), p(b)),
    }
}

fn paren(s: &str) -> String {
    if s.starts_with('(') && s.ends_with(')') {
        s.to_string()
    } else {
        format!("({s})")
    }
}

/// Every valuation of a command's own choices (other choices 0), in the BFS engine's order:
/// the engine's own enumeration, so the options of the model and the engine's successors
/// correspond one to one.
pub fn valuations(ts: &TransitionSystem, c: &Command) -> Vec<Vec<u32>> {
    let mut out = vec![];
    ts.for_each_choice(c, |ch, _| out.push(ch.to_vec()));
    out
}

fn vars_read(e: &Expr, out: &mut BTreeSet<u32>) {
    match e {
        Expr::Var(v) => {
            out.insert(v.0);
        }
        Expr::Not(a) | Expr::Add(a, _) => vars_read(a, out),
        Expr::And(es) | Expr::Or(es) => es.iter().for_each(|x| vars_read(x, out)),
        Expr::Eq(a, b) | Expr::Lt(a, b) => {
            vars_read(a, out);
            vars_read(b, out);
        }
        Expr::Ite(c, a, b) => {
            vars_read(c, out);
            vars_read(a, out);
            vars_read(b, out);
        }
        Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => {}
    }
}

/// Orders parallel assignments so each reads the pre-state: an assignment goes after every other
/// one that reads its target. A cycle is broken by saving one right-hand side in a temporary.
/// Returns the statements and the number of temporaries used.
fn sequentialise(ts: &TransitionSystem, updates: &[(VarId, Expr)]) -> (Vec<String>, usize) {
    // Drop identity assignments; they change nothing.
    let mut pending: Vec<(VarId, Expr)> = updates
        .iter()
        .filter(|(v, e)| *e != Expr::Var(*v))
        .cloned()
        .collect();
    let mut first = vec![];
    let mut last = vec![];
    let mut temps = 0usize;
    while !pending.is_empty() {
        let reads: Vec<BTreeSet<u32>> = pending
            .iter()
            .map(|(_, e)| {
                let mut s = BTreeSet::new();
                vars_read(e, &mut s);
                s
            })
            .collect();
        let free = (0..pending.len()).find(|&i| {
            let target = pending[i].0 .0;
            (0..pending.len()).all(|j| j == i || !reads[j].contains(&target))
        });
        match free {
            Some(i) => {
                let (v, e) = pending.remove(i);
                first.push(format!("{} = {}", var_name(ts, v), expr(ts, &e)));
            }
            None => {
                // Every remaining target is read by another: save one value, assign it last.
                let (v, e) = pending.remove(0);
                let t = format!("tmp{temps}");
                temps += 1;
                first.push(format!("{t} = {}", expr(ts, &e)));
                last.push(format!("{} = {t}", var_name(ts, v)));
            }
        }
    }
    first.extend(last);
    for t in 0..temps {
        first.push(format!("tmp{t} = 0"));
    }
    (first, temps)
}

/// The Promela model of a transition system with one assertion per obligation (see the module
/// documentation). With an empty obligation list the model has no assertions.
pub fn emit(ts: &TransitionSystem, obls: &[Obligation]) -> String {
    let mut out = String::new();
    write_header(&mut out, ts, obls);
    for i in 0..ts.vars.len() {
        write_var(&mut out, ts, i);
    }
    let by_cmd = conds_by_command(ts, obls);
    let mut body = String::new();
    let mut max_temps = 0usize;
    for (ci, c) in ts.commands.iter().enumerate() {
        max_temps = max_temps.max(write_command(&mut body, ts, ci, c, &by_cmd[ci]));
    }
    for t in 0..max_temps {
        let _ = writeln!(out, "int tmp{t} = 0; /* a temporary, 0 between steps */");
    }
    write_obligations(&mut out, obls);
    let _ = writeln!(out);
    let _ = writeln!(out, "active proctype system() {{");
    let _ = writeln!(out, "end:\tdo");
    out.push_str(&body);
    let _ = writeln!(out, "\tod");
    let _ = writeln!(out, "}}");
    out
}

/// The search depth pan needs (`-m`) to reach every state of `ts`: a little above the system's
/// depth, except with batches (SPEC §3 Batches), whose calls take commands that count no step,
/// so that runs have no length bound while the state space stays finite: then far above any
/// shortest path (`benchmarks/spin_compare.sh` reads it from `qls emit promela --stats`).
pub fn pan_depth(ts: &TransitionSystem) -> u32 {
    if ts.has_batches() {
        1_000_000
    } else {
        ts.depth + 10
    }
}

/// The opening comment: the system's size, its depth, and how to check the model with SPIN
/// so that its state count is comparable with the BFS engine's (`-o2`, breadth-first, no
/// partial-order reduction, a search depth above the system's).
fn write_header(out: &mut String, ts: &TransitionSystem, obls: &[Obligation]) {
    let _ = writeln!(
        out,
        "/* Generated by qls emit promela: {} state variables, {} choices, {} commands, {} obligations.",
        ts.vars.len(),
        ts.choices.len(),
        ts.commands.len(),
        obls.len()
    );
    if ts.has_batches() {
        // A batch's calls (SPEC §3 Batches) count no step: runs have no length bound but the
        // state space is finite, so pan's depth must exceed every shortest path, not the steps.
        let _ = writeln!(
            out,
            " * Every run ends within {} steps; a batch's calls take commands that count no step, so -m is set high.",
            ts.depth
        );
    } else {
        let _ = writeln!(
            out,
            " * Every run ends within {} steps. One option of the do loop per (command, choice valuation);",
            ts.depth
        );
    }
    let _ = writeln!(
        out,
        " * each option is one d_step. Check: spin -o2 -a model.pml && gcc -O2 -DBFS -DNOREDUCE -DSAFETY"
    );
    let _ = writeln!(out, " *   -o pan pan.c && ./pan -c0 -m{} */", pan_depth(ts));
    let _ = writeln!(out);
}

/// State variable `i` as a global of the smallest type holding its domain, initialised as the
/// system's initial state, with its name and value names in a comment.
fn write_var(out: &mut String, ts: &TransitionSystem, i: usize) {
    let d = &ts.vars[i];
    let mut note = format!("{}: 0..{}", d.name, d.domain.saturating_sub(1));
    if !d.values.is_empty() {
        let _ = write!(
            note,
            " ({})",
            d.values
                .iter()
                .enumerate()
                .map(|(k, n)| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(
        out,
        "{} {} = {}; /* {} */",
        type_for(d.domain),
        var_name(ts, VarId(i as u32)),
        ts.init[i],
        note.replace("*/", "* /")
    );
}

/// Each command's obligation conditions, with the obligation's index: the assertions its
/// options carry.
fn conds_by_command<'a>(
    ts: &TransitionSystem,
    obls: &'a [Obligation],
) -> Vec<Vec<(usize, &'a Expr)>> {
    let mut by_cmd: Vec<Vec<(usize, &Expr)>> = vec![vec![]; ts.commands.len()];
    for (k, o) in obls.iter().enumerate() {
        for (c, cond) in o.commands.iter().zip(&o.conds) {
            if let Some(list) = by_cmd.get_mut(c.0 as usize) {
                list.push((k, cond));
            }
        }
    }
    by_cmd
}

/// The options of command `ci`: one per valuation of its choices whose guard is not constantly
/// false, after a comment naming the command (none when no option is left). Returns the
/// temporaries its options need.
fn write_command(
    body: &mut String,
    ts: &TransitionSystem,
    ci: usize,
    c: &Command,
    conds: &[(usize, &Expr)],
) -> usize {
    let mut header_done = false;
    let mut max_temps = 0usize;
    for val in valuations(ts, c) {
        let guard = substitute(ts, &c.guard, &val);
        if guard == Expr::Bool(false) {
            continue;
        }
        if !header_done {
            let _ = writeln!(body, "\t/* command {ci}: {} */", command_text(c));
            header_done = true;
        }
        let mut stmts = vec![expr(ts, &guard)];
        for (k, cond) in conds {
            let cond = substitute(ts, cond, &val);
            if cond == Expr::Bool(false) {
                continue;
            }
            stmts.push(format!(
                "assert(!{} || obligation == {})",
                paren(&expr(ts, &cond)),
                k + 1
            ));
        }
        let updates: Vec<(VarId, Expr)> = c
            .updates
            .iter()
            .map(|(v, e)| (*v, substitute(ts, e, &val)))
            .collect();
        let (assigns, temps) = sequentialise(ts, &updates);
        max_temps = max_temps.max(temps);
        stmts.extend(assigns);
        let (g, rest) = (&stmts[0], &stmts[1..]);
        let _ = write!(body, "\t:: d_step {{ {g} ->");
        for s in rest {
            let _ = write!(body, " {s};");
        }
        if rest.is_empty() {
            let _ = write!(body, " skip;");
        }
        let _ = writeln!(body, " }}{}", choice_note(ts, c, &val));
    }
    max_temps
}

/// What a command does, as its comment says it: kind, node, tool and target, safe inside a
/// comment.
fn command_text(c: &Command) -> String {
    let mut what = format!("{:?} at {}", c.label.kind, c.label.node);
    if let Some(t) = &c.label.tool {
        let _ = write!(what, ", tool {t}");
    }
    if let Some(to) = &c.label.to {
        let _ = write!(what, " -> {to}");
    }
    what.replace("*/", "* /")
}

/// The comment after an option naming its choices' values (empty for a command without
/// choices).
fn choice_note(ts: &TransitionSystem, c: &Command, val: &[u32]) -> String {
    if c.choices.is_empty() {
        return String::new();
    }
    let vals: Vec<String> = c
        .choices
        .iter()
        .map(|x: &ChoiceId| {
            let d = &ts.choices[x.0 as usize];
            format!("{}={}", d.name, d.show(val[x.0 as usize]))
        })
        .collect();
    format!("\t/* {} */", vals.join(", ").replace("*/", "* /"))
}

/// The constant `obligation` the assertions name and one comment per obligation (nothing
/// without obligations).
fn write_obligations(out: &mut String, obls: &[Obligation]) {
    if obls.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "byte obligation = 0; /* never changes: `obligation == K` in an assertion names obligation K */"
    );
    for (k, o) in obls.iter().enumerate() {
        let _ = writeln!(
            out,
            "/* obligation {}: {}{} */",
            k + 1,
            o.id.as_str().replace("*/", "* /"),
            if o.inverted { " (inverted)" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoder::ts::{CmdId, Command, Decl, Label, LabelKind};

    fn label() -> Label {
        Label::new(LabelKind::Route, "a", None, None)
    }

    fn decl(name: &str, domain: u32) -> Decl {
        Decl {
            name: name.into(),
            domain,
            values: vec![],
        }
    }

    /// node ∈ {0,1}, x, y ∈ 0..4; one command at node 0 with a choice c ∈ {0,1,2} that swaps x
    /// and y and sets node to 1 when c ≠ 2.
    fn tiny() -> TransitionSystem {
        let node = VarId(0);
        let x = VarId(1);
        let y = VarId(2);
        let c = ChoiceId(0);
        TransitionSystem {
            vars: vec![decl("node", 2), decl("count.x", 4), decl("y", 4)],
            choices: vec![decl("c", 3)],
            init: vec![0, 1, 2],
            commands: vec![Command {
                node: 0,
                guard: ex::and(vec![ex::var_is(node, 0), ex::not(ex::choice_is(c, 2))]),
                updates: vec![
                    (x, Expr::Var(y)),
                    (y, Expr::Var(x)),
                    (node, Expr::Choice(c)),
                ],
                choices: vec![c],
                label: label(),
            }],
            by_node: vec![vec![CmdId(0)], vec![]],
            node_var: node,
            turn_var: node,
            step_var: node,
            depth: 2,
            implied: vec![],
        }
    }

    #[test]
    fn tiny_system_has_globals_options_temps_and_assertions() {
        let ts = tiny();
        let obl = Obligation {
            id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG001, "x"),
            rule: ir::vocab::RuleId::QG001,
            subject: "x".into(),
            commands: vec![CmdId(0)],
            conds: vec![ex::choice_is(ChoiceId(0), 1)],
            inverted: false,
        };
        let m = emit(&ts, &[obl]);
        assert!(m.contains("byte v0_node = 0;"), "{m}");
        assert!(m.contains("byte v1_count_x = 1;"), "{m}");
        assert!(m.contains("byte v2_y = 2;"), "{m}");
        assert!(m.contains("active proctype system()"), "{m}");
        assert!(m.contains("end:\tdo"), "{m}");
        // c = 2 makes the guard false: two options, not three.
        assert_eq!(m.matches(":: d_step").count(), 2, "{m}");
        // The swap needs one hidden temporary.
        assert!(m.contains("int tmp0 = 0;"), "{m}");
        assert!(m.contains("tmp0 = 0; }"), "{m}");
        assert!(
            m.contains("tmp0 = v2_y; v2_y = v1_count_x; v1_count_x = tmp0; tmp0 = 0;"),
            "{m}"
        );
        // The obligation's assertion only where c = 1 (folded to true there).
        assert_eq!(m.matches("assert(").count(), 1, "{m}");
        assert!(m.contains("assert(!(true) || obligation == 1)"), "{m}");
        assert!(m.contains("v0_node = 1"), "{m}");
        assert!(m.contains("/* obligation 1: QG001:x */"), "{m}");
    }

    #[test]
    fn substitution_folds_constants() {
        let ts = tiny();
        let e = ex::ite(
            ex::eq(Expr::Choice(ChoiceId(0)), Expr::Const(1)),
            Expr::Add(Box::new(Expr::Const(2)), 3),
            Expr::Var(VarId(1)),
        );
        assert_eq!(substitute(&ts, &e, &[1]), Expr::Const(5));
        assert_eq!(substitute(&ts, &e, &[0]), Expr::Var(VarId(1)));
        let g = ex::and(vec![ex::var_is(VarId(0), 0), ex::choice_is(ChoiceId(0), 2)]);
        assert_eq!(substitute(&ts, &g, &[1]), Expr::Bool(false));
    }

    #[test]
    fn ordering_avoids_temporaries_when_possible() {
        let ts = tiny();
        // x := y + 1, y := 3: x must be assigned before y.
        let (s, t) = sequentialise(
            &ts,
            &[
                (VarId(2), Expr::Const(3)),
                (VarId(1), Expr::Add(Box::new(Expr::Var(VarId(2))), 1)),
            ],
        );
        assert_eq!(t, 0);
        assert_eq!(s, vec!["v1_count_x = (v2_y + 1)", "v2_y = 3"]);
    }

    /// When `spin` is installed, it accepts the shop's model, and when `gcc` is too, pan (BFS, no
    /// partial-order reduction) stores exactly as many states as the BFS engine finds. Skipped
    /// otherwise: CI need not have SPIN.
    #[test]
    fn spin_accepts_the_shop_model() {
        use std::process::Command as Run;
        if Run::new("spin").arg("-V").output().is_err() {
            eprintln!("skipped: spin is not on PATH");
            return;
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let project =
            readers::load_project(&root.join("examples/shop/agent.yaml")).expect("the shop loads");
        let lowered = encoder::ts::lower::lower(&project, 1, 8);
        let obls = obligations::reach::obligations(&project, &lowered);
        let model = emit(&lowered.ts, &obls);
        let tmp = tempfile::Builder::new()
            .prefix("qls-promela-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path();
        std::fs::write(dir.join("shop.pml"), &model).expect("write");
        let out = Run::new("spin")
            .args(["-o2", "-a", "shop.pml"])
            .current_dir(dir)
            .output()
            .expect("spin runs");
        let ok = out.status.success() && dir.join("pan.c").exists();
        let mut pan_states = None;
        if ok && Run::new("gcc").arg("--version").output().is_ok() {
            let built = Run::new("gcc")
                .args([
                    "-O1",
                    "-DBFS",
                    "-DNOREDUCE",
                    "-DSAFETY",
                    "-o",
                    "pan",
                    "pan.c",
                ])
                .current_dir(dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if built {
                let run = Run::new(dir.join("pan"))
                    .args(["-c0", "-m1000", "-w12"])
                    .current_dir(dir)
                    .output()
                    .expect("pan runs");
                let text = String::from_utf8_lossy(&run.stdout).to_string();
                pan_states = text
                    .lines()
                    .find(|l| l.contains("states, stored"))
                    .and_then(|l| l.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok());
            }
        }
        assert!(
            ok,
            "spin -a rejected the model:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(n) = pan_states {
            assert_eq!(n, search::bfs::count_states(&lowered.ts));
        }
    }
}
