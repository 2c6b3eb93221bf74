//! The text layout of SPEC §7. It only formats the [`Report`]: every finding, its order and the
//! gate were decided by `report::findings`.

use crate::report::shown::{Read, RulebookRead, Step};
use crate::report::types::{CodeReport, Engines, Loc, SessionSteps, StopReason};
use crate::report::{CrossCheck, EngineSummary, Finding, Report, Standing};

/// "BMC: 23 decided, 2 undecided (time budget)".
fn engine_text(e: &EngineSummary) -> String {
    let mut t = format!(
        "{}: {} decided, {} undecided",
        e.engine.label(),
        e.decided,
        e.undecided_total()
    );
    if !e.undecided.is_empty() {
        t.push_str(&format!(" ({})", reasons(&e.undecided)));
    }
    t
}

/// Stop reasons with their counts: "time budget" when there is one reason, else "2 time
/// budget, 1 state budget".
fn reasons(why: &std::collections::BTreeMap<StopReason, usize>) -> String {
    why.iter()
        .map(|(r, n)| {
            if why.len() == 1 {
                r.phrase().to_string()
            } else {
                format!("{n} {}", r.phrase())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The line saying what each engine decided ("BFS: 6 decided, 0 undecided; BMC: …").
fn engine_lines(s: &mut String, r: &Report) {
    let engines: Vec<String> = r.per_engine.iter().map(engine_text).collect();
    if !engines.is_empty() {
        s.push_str(&format!("{}.\n", engines.join("; ")));
    }
}

/// `QG012 High on refund_card (agent.yaml:7)`; a finding at several places names each
/// (`QG105 Review on refund_card (agent.yaml:10, policy.co:19)`).
fn headline(f: &Finding) -> String {
    format!(
        "{} {} on {}{}",
        f.rule.id,
        f.rule.kind.severity(),
        f.subject,
        loc_text(&f.at, &f.also)
    )
}

fn loc_text(at: &Option<Loc>, also: &[Loc]) -> String {
    let places: Vec<String> = at.iter().chain(also).map(Loc::to_string).collect();
    if places.is_empty() {
        String::new()
    } else {
        format!(" ({})", places.join(", "))
    }
}

/// With `--dependencies`: how many packages were read from which files, and the advisory
/// snapshot QG022 compared them with (each source and its date), so a clean report says how old
/// its advisories are.
fn dependencies_line(read: &Read, s: &mut String) {
    let Some(d) = &read.dependencies else {
        return;
    };
    let files = &d.files;
    let n = d.packages;
    let sources = match &d.advisories {
        Some(sources) => sources
            .iter()
            .map(|(name, date)| format!("{name} ({date})"))
            .collect::<Vec<_>>()
            .join(", "),
        None => "none (the snapshot does not parse)".into(),
    };
    s.push_str(&format!(
        "Dependencies: {n} package{} from {}; advisories from {sources}\n",
        if n == 1 { "" } else { "s" },
        files.join(", ")
    ));
}

/// The text report (SPEC §7), section by section.
pub fn text(r: &Report) -> String {
    let mut s = format!("qls verify {}\n\n", r.subject);
    inputs(&mut s, r);
    summary(&mut s, r);
    for f in r.findings.iter().filter(|f| f.standing == Standing::New) {
        finding(&mut s, f);
    }
    accepted(&mut s, r);
    if !r.undecided_gate.is_empty() {
        let why = if r.not_run.is_some() {
            "the proof did not run"
        } else {
            "a budget ran out"
        };
        s.push_str(&format!(
            "\nUndecided ({why}; never clean): {}\n",
            r.undecided_gate.join(", ")
        ));
    }
    if !r.quiet.is_empty() {
        s.push_str("\nRules with nothing to read, so nothing raised:\n");
        for q in &r.quiet {
            s.push_str(&format!("  {}: {}\n", q.rule, q.reason));
        }
    }
    s.push_str(&format!(
        "\nGate: {}\n",
        if r.passed { "passed" } else { "failed" }
    ));
    s
}

/// What was read: the catalogue, the rulebook, the registration lints, derived agents.
fn inputs(s: &mut String, r: &Report) {
    let p = &r.read;
    let writes = p.writes;
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("1 {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    // Writes only by default: the source (a function list, an MCP tool without `readOnlyHint`)
    // said nothing of reading or writing, and no overlay said `effect`.
    let unhinted = p.unhinted;
    let unhinted = if unhinted == 0 {
        String::new()
    } else {
        format!("; {unhinted} without a read/write hint")
    };
    s.push_str(&format!(
        "Catalogue: {} ({}{unhinted})",
        plural(p.tools, "tool"),
        plural(writes, "write")
    ));
    if !p.overlaid.is_empty() {
        s.push_str(&format!("; overlaid: {}", p.overlaid.join(", ")));
    }
    match &p.rulebook {
        RulebookRead::Read { source, sha256 } => s.push_str(&format!(
            "; rulebook {} (sha256 {}…)\n",
            source,
            &sha256[..12.min(sha256.len())]
        )),
        RulebookRead::Refused { file } => s.push_str(&format!("; rulebook {file} refused\n")),
        RulebookRead::None => s.push_str("; no rulebook\n"),
    }
    dependencies_line(p, s);
    if r.lints.is_empty() {
        s.push_str("Lints at registration: none\n");
    } else {
        s.push_str("Lints at registration (nothing fails on a lint):\n");
        for l in &r.lints {
            s.push_str(&format!(
                "  {} (warning) on {}: {}\n",
                l.code, l.subject, l.message
            ));
        }
    }
    if let Some(agents) = &p.derived_agents {
        s.push_str(&format!(
            "Agents derived from the graph's nodes (it has no `agents`): {} (privilege low, no budget)\n",
            agents.join(", ")
        ));
    }
    if let Some(c) = &r.code {
        code_checks(s, r, c);
    } else if r.code_checks_off {
        s.push_str(
            "\nCode checks: turned off (--no-code-checks): the tools' code was not read, so nothing here speaks for it.\n",
        );
    }
}

/// SPEC §7's code-checks line, after the lints: "Code checks: no finding in 4 file(s) (rules
/// …)." or the findings, each at file:line:column (a contradiction also at its declaration).
fn code_checks(s: &mut String, r: &Report, c: &CodeReport) {
    let n = c.files.len();
    if c.findings.is_empty() {
        s.push_str(&format!(
            "\nCode checks: no finding in {n} file(s) (rules {}).\n",
            c.rules
        ));
    } else {
        let k = c.findings.len();
        let word = if k == 1 { "finding" } else { "findings" };
        s.push_str(&format!(
            "\nCode checks: {k} {word} in {n} file(s) (rules {}):\n",
            c.rules
        ));
        for f in &c.findings {
            let i = f.rule.info();
            let on = f
                .tool
                .as_ref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default();
            let declared = f
                .declared_at
                .as_ref()
                .map(|d| format!(", declared at {d}"))
                .unwrap_or_default();
            s.push_str(&format!(
                "  {} {}{on} at {}{declared}: {}\n    {} ({}). Fix: {}\n",
                i.id,
                i.severity,
                r.code_place(f),
                f.message,
                i.title,
                i.cwe,
                i.fix
            ));
        }
    }
    for f in &c.files {
        if let Some(why) = &f.unparsed {
            s.push_str(&format!("  {} was not read: {why}\n", r.code_file(&f.file)));
        } else if f.recovered {
            s.push_str(&format!(
                "  {} has syntax errors; the rules read what the grammar recovered\n",
                r.code_file(&f.file)
            ));
        }
    }
}

/// The report's "Proved to …" sentence alone (what `qls repair` quotes of a re-proof).
pub fn summary_line(r: &Report) -> String {
    let mut s = String::new();
    summary(&mut s, r);
    s.lines()
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// What was proved: the counts at the depth, whether the engines agree, what each decided.
fn summary(s: &mut String, r: &Report) {
    let (h, re, u) = r.counts;
    let turns = if r.depth.0 == SessionSteps::Turns(1) {
        "1 turn".to_string()
    } else {
        format!("{} turns", r.depth.0)
    };
    let partial = r.cross_check.as_ref().filter(|c| !c.complete());
    let agree = match (r.engines, partial) {
        (Engines::Both, _) if !r.agree => "ENGINES DISAGREE".to_string(),
        (Engines::Both, None) => "engines agree".to_string(),
        (Engines::Both, Some(c)) if c.cross_checked == 0 => {
            format!("no obligation was decided by {}", c.by_two())
        }
        (Engines::Both, Some(c)) => {
            format!(
                "engines agree on the {} {} decided",
                c.cross_checked,
                c.two()
            )
        }
        (Engines::Bmc, _) => "BMC only".to_string(),
        (Engines::Bfs, _) => "BFS only".to_string(),
        (Engines::Bdd, _) => "BDD only".to_string(),
    };
    match &r.not_run {
        Some(why) => s.push_str(&format!(
            "\nThe proof did not run: {why}. {u} obligations are undecided.\n"
        )),
        None if r.depth.0 == SessionSteps::Any => {
            s.push_str(&any_length_summary(r, &agree));
            engine_lines(s, r);
            cross_check_line(s, partial);
        }
        None => {
            s.push_str(&format!("\nProved to {turns} (step limit {}): {h} obligations hold, {re} reachable, {u} undecided; {agree}.\n", r.depth.1));
            engine_lines(s, r);
            cross_check_line(s, partial);
        }
    }
    if let Some(line) = &r.tasks_line {
        s.push_str(line);
        s.push('\n');
    }
}

/// How many obligations the engines' verdicts were compared on, when not on all: "Cross-checked:
/// 8 of 32 obligations (both engines decided them); BMC alone decided 24 (the BFS stopped on
/// them: state budget): QG011:a, QG012:b, QG019:c and 21 more." With the symbolic engine as
/// the third: "(two or more of BFS, BMC, BDD decided them); BDD alone decided 2 (the BFS
/// stopped on them: state budget; the BMC: time budget): …".
fn cross_check_line(s: &mut String, partial: Option<&CrossCheck>) {
    const SHOWN: usize = 3;
    let Some(c) = partial else { return };
    let who = match c.engines.len() {
        2 => "both engines".to_string(),
        _ => format!(
            "two or more of {}",
            c.engines
                .iter()
                .map(|e| e.label())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut line = format!(
        "Cross-checked: {} of {} obligations ({who} decided them)",
        c.cross_checked, c.obligations
    );
    for a in &c.alone {
        let mut ids = a.obligations[..a.obligations.len().min(SHOWN)].join(", ");
        if a.obligations.len() > SHOWN {
            ids.push_str(&format!(" and {} more", a.obligations.len() - SHOWN));
        }
        let stopped: Vec<String> = a
            .others_stopped
            .iter()
            .enumerate()
            .map(|(k, (e, why))| match k {
                0 => format!("the {} stopped on them: {}", e.label(), reasons(why)),
                _ => format!("the {}: {}", e.label(), reasons(why)),
            })
            .collect();
        line.push_str(&format!(
            "; {} alone decided {} ({}): {ids}",
            a.engine.label(),
            a.obligations.len(),
            stopped.join("; ")
        ));
    }
    if c.none > 0 {
        let none = if c.engines.len() == 2 {
            "neither"
        } else {
            "none"
        };
        line.push_str(&format!("; {none} decided {}", c.none));
    }
    s.push_str(&line);
    s.push_str(".\n");
}

/// One new finding: headline, message, OWASP, fix, witness, replay.
fn finding(s: &mut String, f: &Finding) {
    s.push_str(&format!("\n{}\n", headline(f)));
    s.push_str(&format!("  {}\n", f.message));
    s.push_str(&format!("  OWASP {}\n", f.rule.owasp.join(", ")));
    s.push_str(&format!(
        "  Fix: {}\n",
        f.rule.fix.replace("{tool}", &f.subject)
    ));
    if f.witness.is_some() {
        match &f.witness_file {
            Some(file) => s.push_str(&format!(
                "  Witness: {file} ({} steps: {})\n",
                f.steps.len(),
                witness_path(&f.steps)
            )),
            None => s.push_str(&format!(
                "  Witness: {} steps: {}\n",
                f.steps.len(),
                witness_path(&f.steps)
            )),
        }
    }
    if let Some(r) = &f.replay {
        s.push_str(&format!("  Replay: {}\n", r.text()));
    }
}

/// The findings that do not fail the gate: in the baseline, or suppressed with a reason.
fn accepted(s: &mut String, r: &Report) {
    let existing: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.standing == Standing::Existing)
        .collect();
    if !existing.is_empty() {
        s.push_str("\nIn the baseline (existing findings; they do not fail the gate):\n");
        for f in existing {
            s.push_str(&format!("  {}\n", headline(f)));
        }
    }
    let suppressed: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| matches!(f.standing, Standing::Suppressed { .. }))
        .collect();
    if !suppressed.is_empty() {
        s.push_str("\nSuppressed (accepted with a reason; they do not fail the gate):\n");
        for f in suppressed {
            if let Standing::Suppressed { reason, until, at } = &f.standing {
                s.push_str(&format!(
                    "  {}: {reason} ({}suppressed at {}:{})\n",
                    headline(f),
                    until
                        .as_ref()
                        .map(|u| format!("until {u}; "))
                        .unwrap_or_default(),
                    at.file,
                    at.line
                ));
            }
        }
    }
}

/// The summary of a proof for sessions of any length: the counts, the turns each reachable
/// finding's shortest witness needs, K, and which engine proved what.
fn any_length_summary(r: &Report, agree: &str) -> String {
    let (h, re, u) = r.counts;
    let shortest = match r.witness_turns.as_slice() {
        [] => String::new(),
        [one] => format!(
            " (shortest in {one} turn{})",
            if *one == 1 { "" } else { "s" }
        ),
        many => format!(
            " (shortest in {} turns)",
            many.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let within = match r.fixpoint_turns {
        Some(k) => format!(
            "every reachable state is reached within {k} turn{}",
            if k == 1 { "" } else { "s" }
        ),
        None if !r.engines.bfs() => "the BFS did not run".to_string(),
        None => "the BFS ran out of its state budget before its fixpoint".to_string(),
    };
    let mut s = format!(
        "\nProved for sessions of any length (step limit {}): {h} obligations hold, {re} reachable{shortest}, {u} undecided; {within}; {agree}.\n",
        r.depth.1
    );
    if let Some(how) = r.any_engines.as_ref().filter(|h| !h.is_empty()) {
        s.push_str(&format!("  {how}\n"));
    }
    s
}

/// The path a witness takes, as node names.
pub fn witness_path(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|st| st.node.clone())
        .collect::<Vec<_>>()
        .join(" -> ")
}
