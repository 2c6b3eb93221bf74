//! The conformance test's hand-built cases (a tiny graph each, for one pin of SPEC §2–§3) and
//! its regressions by seed (a random graph that once had a run the system lacked).

use super::*;

#[test]
#[ignore = "a debugging aid: prints the project and the first mismatch of QLS_CONFORMANCE_SEED"]
fn dump_one_seed() {
    let seed = env_u64("QLS_CONFORMANCE_SEED", 1);
    let shapes = if std::env::var("QLS_AGREEING").is_ok() {
        Shapes::AGREEING
    } else {
        Shapes::ALL
    };
    let p = random_project_with(seed, shapes);
    eprintln!("{}", p.graph.to_json());
    for t in p.catalogue.tools.values() {
        eprintln!("{}", serde_json::to_string(t).unwrap_or_default());
    }
    eprintln!(
        "rulebook: {}",
        serde_json::to_string(&p.rulebook).unwrap_or_default()
    );
    eprintln!("context: {:?} settings: {:?}", p.context, p.settings);
    let f = check_graph(seed, env_u64("QLS_WALKS", 6) as usize, true);
    for (_, mm) in f.mismatches.iter().take(1) {
        eprintln!("{}\n{}", mm.signature, mm.detail);
    }
}

/// A tool whose arguments are `{order_id: string}` and nothing else.
fn closed_tool(name: &str, e: ir::catalogue::Effect) -> ir::catalogue::Tool {
    let mut t = ir::testkit::Builder::mk_tool(name, e);
    t.args = Some(
        serde_json::json!({"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"], "additionalProperties": false}),
    );
    t
}

/// One agent with a write `w`, its undo `u` (bound by `order_id`) and an untrusted read `r`:
/// router → model ⇄ `a_raw` (unguarded, listing `raw`) and `a_tools` (guarded, listing
/// `guarded`), seven steps.
fn undo_case(u: ir::catalogue::Tool, raw: &str, guarded: &[&str]) -> Project {
    use ir::agent::Privilege;
    use ir::catalogue::Effect;
    let mut w = closed_tool("w", Effect::Write);
    w.undo = Some("u".into());
    w.undo_args.insert("order_id".into(), "order_id".into());
    let mut r = closed_tool("r", Effect::Read);
    r.returns_untrusted = true;
    let b = [w, u, r]
        .into_iter()
        .fold(ir::testkit::Builder::new(), |b, t| b.tool(t))
        .agent("a", Privilege::Low, None)
        .node("a_router", NodeKind::Router, Some("a"), None, &[])
        .node("a_model", NodeKind::Model, Some("a"), None, &[])
        .node("a_raw", NodeKind::Tools, Some("a"), Some(false), &[raw])
        .node("a_tools", NodeKind::Tools, Some("a"), Some(true), guarded);
    with_model_loop(b, 7)
}

#[test]
fn an_undo_of_a_write_no_person_confirmed_is_unconfirmed() {
    // SPEC §2 step 11: an undo counts as confirmed only when the step it undoes was. Here the
    // write `w` runs at an unguarded node (no person), the model then reads untrusted content
    // and undoes `w` with `u`, a write to a persistent store: QG021 on `u`. A plain call of `u`
    // is held for a person (write_policy confirm), so the undo is the only way to violate it.
    use ir::catalogue::{Effect, Store};
    let mut u = closed_tool("u", Effect::Write);
    u.store = Some(Store {
        name: "notes".into(),
        multi_tenant: false,
        persistent: true,
    });
    let p = undo_case(u, "w", &["u", "r"]);
    let runs = random_runs(&p, 99, 20_000);
    let hit = runs
        .iter()
        .flat_map(|r| r.steps.iter())
        .any(|s| s.violations.iter().any(|v| v == "QG021:u"));
    assert!(
        hit,
        "no random run undid the unconfirmed write after reading untrusted content"
    );
    let f = check_project(&p, &runs, 0, true);
    let misses: Vec<&String> = f.depth_failures.iter().map(|(_, _, d)| d).collect();
    assert!(f.mismatches.is_empty(), "{}", f.mismatches[0].1.detail);
    assert!(misses.is_empty(), "{}", misses[0]);
}

#[test]
fn a_tainted_undo_is_refused_under_taint_policy_refuse() {
    // SPEC §2 step 8 applies to undos too: after untrusted content entered the desk's
    // context, an undo (a write of trust `agent`) must be refused `tainted_call` under
    // `taint_policy: refuse`, whatever step it is bound to. The explorer asks the real check,
    // so this pins the concrete check's reading, which the conformance runs inherit.
    use ir::agent::{TaintPolicy, WritePolicy};
    use ir::catalogue::Effect;
    let mut p = undo_case(closed_tool("u", Effect::Write), "r", &["w", "u"]);
    p.settings.taint_policy = TaintPolicy::Refuse;
    p.settings.write_policy = WritePolicy::Declared;
    let runs = random_runs(&p, 5, 20_000);
    let (mut presented, mut ran) = (0, 0);
    for run in &runs {
        let mut marks: BTreeSet<Mark> = BTreeSet::new();
        for st in &run.steps {
            let undo = st.label.tool.as_deref() == Some("u") && st.choices.undo.is_some();
            if undo && marks.contains(&Mark::External) && st.choices.invalid == Some(false) {
                presented += 1;
                ran += st.label.as_undo as usize;
            }
            marks = st.after.marks.get("a").cloned().unwrap_or_default();
        }
    }
    assert!(
        presented > 0,
        "no run presented an undo with external content in context"
    );
    assert_eq!(
        ran, 0,
        "{ran} of {presented} undos ran with external content in the agent's context under taint_policy: refuse"
    );
}

#[test]
fn a_batch_decided_by_check_batch_breaks_at_most_on_its_third_call() {
    // SPEC §3 Batches: under `budget: 1` one model step reaches the tools node, and a batch of
    // three calls of a tool with `at_most: 2` runs its third call unchecked (QG014). The
    // explorer's batches are decided by `check_batch`; the engines must find it no deeper.
    use ir::agent::Privilege;
    use ir::catalogue::Effect;
    use ir::testkit::Builder;
    let t = Builder::ordered(closed_tool("lookup", Effect::Read), &[], &[], Some(2));
    for batch in [true, false] {
        let b = Builder::new()
            .agent("a", Privilege::Low, Some(1))
            .tool(t.clone())
            .node("a_model", NodeKind::Model, Some("a"), None, &[])
            .node(
                "a_tools",
                NodeKind::Tools,
                Some("a"),
                Some(false),
                &["lookup"],
            );
        let b = if batch { b.batch() } else { b };
        let p = model_tools_loop(
            b,
            ir::agent::Settings {
                step_limit: 6,
                session_steps: 1.into(),
                ..Default::default()
            },
        );
        let runs = random_runs(&p, 3, 2_000);
        let hit = runs
            .iter()
            .flat_map(|r| &r.steps)
            .any(|s| s.violations.iter().any(|v| v == "QG014:lookup"));
        assert_eq!(hit, batch, "batch {batch}: QG014 {hit}");
        let f = check_project(&p, &runs, 0, true);
        assert!(f.mismatches.is_empty(), "{}", f.mismatches[0].1.detail);
        assert!(f.depth_failures.is_empty(), "{}", f.depth_failures[0].2);
        assert_eq!(f.batch_steps > 0, batch);
    }
}

#[test]
fn a_guarded_batch_is_decided_as_check_batch_decides_it() {
    // An untrusted read and a write to a persistent store under `trust: external` in one
    // batch at a guarded node, `write_policy: declared`: the batch's second call sees the
    // first's result (QG021), and every explorer step is a step of the lowered system.
    use ir::agent::{Privilege, WritePolicy};
    use ir::catalogue::{Effect, Store, Trust};
    use ir::testkit::Builder;
    let mut r = closed_tool("fetch", Effect::Read);
    r.returns_untrusted = true;
    let mut w = closed_tool("save", Effect::Write);
    w.trust = Trust::External;
    w.store = Some(Store {
        name: "notes".into(),
        multi_tenant: false,
        persistent: true,
    });
    let b = Builder::new()
        .agent("a", Privilege::Low, Some(1))
        .tool(r)
        .tool(w)
        .node("a_model", NodeKind::Model, Some("a"), None, &[])
        .node(
            "a_tools",
            NodeKind::Tools,
            Some("a"),
            Some(true),
            &["fetch", "save"],
        )
        .batch();
    let p = model_tools_loop(
        b,
        ir::agent::Settings {
            step_limit: 5,
            session_steps: 1.into(),
            write_policy: WritePolicy::Declared,
            ..Default::default()
        },
    );
    let runs = random_runs(&p, 11, 3_000);
    let hit = runs
        .iter()
        .flat_map(|r| &r.steps)
        .any(|s| s.violations.iter().any(|v| v == "QG021:save"));
    assert!(hit, "no batch read the page and then saved the note");
    let f = check_project(&p, &runs, 0, true);
    assert!(f.mismatches.is_empty(), "{}", f.mismatches[0].1.detail);
    assert!(f.depth_failures.is_empty(), "{}", f.depth_failures[0].2);
}

/// `a_model` ⇄ `a_tools` (call, return), `a_model` → `end` (reply), entered at the model.
fn model_tools_loop(b: ir::testkit::Builder, settings: ir::agent::Settings) -> Project {
    use ir::graph::EdgeKind;
    b.node("end", NodeKind::End, None, None, &[])
        .edge("a_model", "a_tools", EdgeKind::Call)
        .edge("a_tools", "a_model", EdgeKind::Return)
        .edge("a_model", "end", EdgeKind::Reply)
        .entry("a_model")
        .settings(settings)
        .build()
}

#[test]
fn an_undo_naming_a_run_a_batch_rolled_back_is_refused_spent_in_the_system_too() {
    // SPEC §2 step 6: a model may name a run that was already undone, and the check refuses it
    // `compensation_spent` even while other runs of the write are still open. The explorer's
    // undos are built before the batch, so one named a run the batch's own rollback undid
    // (seed 4242369409559625103) or a run a refusal rolled back before the write ran twice
    // more (15013197750208505433: the system counted two open runs and had no such refusal,
    // a possible false negative). The lowering now keeps whether some run was undone
    // (`comp.spent.<tool>`); both seeds' runs are runs of the system.
    for seed in [4242369409559625103, 15013197750208505433] {
        conforms(seed, 20);
    }
}

/// The graph of `seed` (every shape) with `walks` random walks: every run is one of the
/// system's and the engines miss no concrete violation.
fn conforms(seed: u64, walks: usize) {
    let f = check_graph(seed, walks, true);
    assert!(f.runs > 0, "seed {seed}: no run");
    assert!(
        f.mismatches.is_empty(),
        "seed {seed}: {}\n{}",
        f.mismatches[0].1.signature,
        f.mismatches[0].1.detail
    );
    assert!(
        f.depth_failures.is_empty(),
        "seed {seed}: {}",
        f.depth_failures[0].2
    );
}

#[test]
fn a_traced_copy_taints_its_call_and_not_its_agents_later_calls_in_the_system_too() {
    // SPEC §2 "Provenance, not authorship": under `origins: "auto"` a value copied from an
    // earlier result carries that result's marks into its own call's check and is not written
    // into its entry. The lowering had every copy mark its agent for the rest of the run (as a
    // host that lists the marks does): the first conformance runs with traced origins found
    // runs the system lacked (seed 5038955913241943651: `mark.steered_from_lower` after a
    // traced copy). The copy is now `yes` (traced) or `listed`.
    conforms(5038955913241943651, 150);
}

#[test]
fn a_code_argument_the_model_may_write_is_still_the_models_code_in_the_system_too() {
    // `model_may_write` naming a `code` argument (the lint warns; the check honours it): the
    // check asks no person for it, and QG017 still reads that the model wrote code. The
    // lowering put the argument in the code class, whose model origin needs a person, so the
    // run where the model wrote it and the write ran unconfirmed was not the system's, and the
    // BFS called QG017 unreachable while a concrete run violated it (seed
    // 10536220447359983173, the first run of the generator drawing `model_may_write`). Such an
    // argument now has a class of its own (`code_free`).
    conforms(10536220447359983173, 150);
}

#[test]
fn an_argument_the_model_may_write_needs_no_person_in_the_system_too() {
    // SPEC §2 step 10: `note` is in `w`'s `model_may_write`, `order_id` is not. Under
    // `write_policy: declared` a call whose note the model wrote (its order typed) runs without
    // a person; one whose order the model wrote is held. After the untrusted read `r`, a run of
    // `w` (a persistent store, any input accepted) unconfirmed is QG021. The explorer picks
    // each class's origin, `note`'s (`ArgClass::Free`) too, and asks the real check: every
    // concrete run must be a run of the lowered system (a lowering that counted `note` with
    // `order_id` would hold the first call and fall out), each violation found at its depth.
    use ir::agent::{Privilege, WritePolicy};
    use ir::catalogue::{Effect, Store, Trust};
    use ir::vocab::{Answer, ArgClass};
    let mut w = closed_tool("w", Effect::Write);
    w.args = Some(
        serde_json::json!({"type": "object", "properties": {"order_id": {"type": "string"}, "note": {"type": "string"}}, "required": ["order_id"], "additionalProperties": false}),
    );
    w.model_may_write = vec!["note".into()];
    w.store = Some(Store {
        name: "orders".into(),
        multi_tenant: false,
        persistent: true,
    });
    w.trust = Trust::External;
    let mut r = closed_tool("r", Effect::Read);
    r.returns_untrusted = true;
    let b = [w, r]
        .into_iter()
        .fold(ir::testkit::Builder::new(), |b, t| b.tool(t))
        .agent("a", Privilege::Low, None)
        .node("a_router", NodeKind::Router, Some("a"), None, &[])
        .node("a_model", NodeKind::Model, Some("a"), None, &[])
        .node("a_raw", NodeKind::Tools, Some("a"), Some(false), &["r"])
        .node(
            "a_tools",
            NodeKind::Tools,
            Some("a"),
            Some(true),
            &["w", "r"],
        );
    let mut p = with_model_loop(b, 7);
    p.settings.write_policy = WritePolicy::Declared;
    let runs = random_runs(&p, 11, 20_000);
    let (mut free_ran, mut other_held) = (0, 0);
    for st in runs.iter().flat_map(|r| r.steps.iter()) {
        if st.label.tool.as_deref() != Some("w") || st.choices.invalid != Some(false) {
            continue;
        }
        let wrote = |c| st.choices.model_wrote.get(&c).copied().unwrap_or(false);
        match (
            wrote(ArgClass::Free),
            wrote(ArgClass::Other),
            st.label.decision,
        ) {
            (true, false, Some(Answer::Allow)) => free_ran += 1,
            (_, true, Some(Answer::Confirm)) => other_held += 1,
            _ => {}
        }
    }
    assert!(free_ran > 0 && other_held > 0, "{free_ran} {other_held}");
    let hit = runs
        .iter()
        .flat_map(|r| r.steps.iter())
        .any(|s| s.violations.iter().any(|v| v == "QG021:w"));
    assert!(hit, "no random run reached QG021 on w");
    let f = check_project(&p, &runs, 0, true);
    let misses: Vec<&String> = f.depth_failures.iter().map(|(_, _, d)| d).collect();
    assert!(f.mismatches.is_empty(), "{}", f.mismatches[0].1.detail);
    assert!(misses.is_empty(), "{}", misses[0]);
}
