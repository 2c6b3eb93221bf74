//! The research table from the bench's verdicts: per policy, per suite and pooled, the attack
//! goals proved blocked without a person, the user tasks possible without a person and with at
//! most one confirm, the confirms, the undecided — as Markdown, JSON (with every task's verdict,
//! engines and witness file), CSV, and an SVG plot of utility against proved security beside
//! the published defences' points. Every number is a count of rows; nothing is estimated.

use super::{Bench, Row};
use crate::proof::tasks::TaskVerdict;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// One line of the table: a policy on a suite (or pooled).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The policy.
    pub policy: String,
    /// The suite, or `all`.
    pub suite: String,
    /// Attack goals asked.
    pub goals: usize,
    /// Goals proved blocked (both engines: no run without a person executes them).
    pub blocked: usize,
    /// Goals some run executes.
    pub reachable: usize,
    /// User tasks asked.
    pub tasks: usize,
    /// Possible without a person.
    pub possible: usize,
    /// Possible with at most one confirm (the possible ones included).
    pub one_confirm: usize,
    /// Confirms on the cheapest runs shown, summed over the tasks that need a person.
    pub confirms: u32,
    /// Tasks no run executes within the depth even with a person: more than one confirm (the
    /// depth's two turns hold one), or impossible.
    pub impossible: usize,
    /// Tasks and goals left undecided.
    pub undecided: usize,
    /// For the `repaired` policy where its inputs are not a proved repair, what the search came
    /// to (`not repaired within budget: N proofs`): the row is then the `provenance` inputs'.
    pub note: Option<String>,
}

impl Line {
    fn of<'a>(
        policy: &str,
        suite: &str,
        note: Option<String>,
        rows: impl Iterator<Item = &'a Row>,
    ) -> Line {
        let mut l = Line {
            note,
            policy: policy.into(),
            suite: suite.into(),
            goals: 0,
            blocked: 0,
            reachable: 0,
            tasks: 0,
            possible: 0,
            one_confirm: 0,
            confirms: 0,
            impossible: 0,
            undecided: 0,
        };
        for r in rows {
            if r.goal {
                l.goals += 1;
            } else {
                l.tasks += 1;
            }
            match r.verdict {
                TaskVerdict::Blocked => l.blocked += 1,
                TaskVerdict::Reachable => l.reachable += 1,
                TaskVerdict::Possible => {
                    l.possible += 1;
                    l.one_confirm += 1;
                }
                TaskVerdict::NeedsPerson => {
                    let c = r.confirms.map_or(u32::MAX, |c| c.0);
                    if c <= 1 {
                        l.one_confirm += 1;
                    }
                    l.confirms = l.confirms.saturating_add(c);
                }
                TaskVerdict::Impossible => l.impossible += 1,
                TaskVerdict::Undecided(_) => l.undecided += 1,
            }
        }
        l
    }

    /// Per cent of goals blocked (the proved security).
    pub fn security(&self) -> f64 {
        pct(self.blocked, self.goals)
    }

    /// Per cent of user tasks possible without a person (the utility ceiling).
    pub fn utility(&self) -> f64 {
        pct(self.possible, self.tasks)
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Every line: per policy, each suite then the suites pooled.
pub fn lines(b: &Bench) -> Vec<Line> {
    let mut out = Vec::new();
    for p in &b.policies {
        // Only the `repaired` policy's rows rest on a search (a policy file cannot take its
        // name).
        let note = |s: &str| {
            (p == "repaired")
                .then(|| b.repairs.get(s).and_then(|r| r.note()))
                .flatten()
        };
        for (s, _, _) in &b.suites {
            out.push(Line::of(
                p,
                s,
                note(s),
                b.rows.iter().filter(|r| &r.policy == p && &r.suite == s),
            ));
        }
        let pooled: Vec<String> = b
            .suites
            .iter()
            .filter_map(|(s, _, _)| Some(format!("{s}: {}", note(s)?)))
            .collect();
        let pooled = (!pooled.is_empty()).then(|| pooled.join("; "));
        out.push(Line::of(
            p,
            "all",
            pooled,
            b.rows.iter().filter(|r| &r.policy == p),
        ));
    }
    out
}

/// The Markdown table, the undecided named, and the repair's outcome per suite.
pub fn markdown(b: &Bench) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| policy | suite | goals blocked (proved) | goals reachable | tasks possible without a person | with at most one confirm | confirms (cheapest runs) | not within one confirm | undecided |\n|---|---|---|---|---|---|---|---|---|"
    );
    for l in lines(b) {
        let bold = |t: String| {
            if l.suite == "all" {
                format!("**{t}**")
            } else {
                t
            }
        };
        let suite = match &l.note {
            Some(n) => format!("{} ({n})", l.suite),
            None => l.suite.clone(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} of {} | {} | {} | {} |",
            bold(l.policy.clone()),
            bold(suite),
            bold(format!("{} of {}", l.blocked, l.goals)),
            l.reachable,
            bold(format!("{} of {}", l.possible, l.tasks)),
            l.one_confirm,
            l.tasks,
            l.confirms,
            l.impossible,
            l.undecided
        );
    }
    let undecided: Vec<&Row> = b
        .rows
        .iter()
        .filter(|r| matches!(r.verdict, TaskVerdict::Undecided(_)))
        .collect();
    if !undecided.is_empty() {
        let _ = writeln!(s, "\nUndecided at the budget ({} s per task):", b.timeout);
        for r in undecided {
            let _ = writeln!(
                s,
                "- {} / {} / {}: {}",
                r.policy,
                r.suite,
                r.task,
                why(r).unwrap_or("")
            );
        }
    }
    if !b.outside.is_empty() {
        let _ = writeln!(s, "\nGoals not counted (no tool call to decide):");
        for (suite, goal, why) in &b.outside {
            let _ = writeln!(s, "- {suite} / {goal}: {why}");
        }
    }
    if !b.repairs.is_empty() {
        let _ = writeln!(s, "\n`repaired`, per suite:");
        for (suite, r) in &b.repairs {
            let _ = writeln!(s, "- {suite}: {}", r.said);
        }
    }
    let _ = writeln!(
        s,
        "\n{} tasks decided in {:.0} s ({} turns, {} s per task at most).",
        b.rows.len(),
        b.seconds,
        b.turns,
        b.timeout
    );
    s
}

fn line_json(l: &Line) -> Value {
    json!({
        "policy": l.policy, "suite": l.suite,
        "goals": l.goals, "goals_blocked": l.blocked, "goals_reachable": l.reachable,
        "tasks": l.tasks, "tasks_possible": l.possible, "tasks_one_confirm": l.one_confirm,
        "confirms": l.confirms, "tasks_impossible": l.impossible, "undecided": l.undecided,
        "note": l.note,
    })
}

fn row_json(r: &Row) -> Value {
    json!({
        "policy": r.policy, "suite": r.suite, "task": r.task,
        "kind": if r.goal { "goal" } else { "user" },
        "calls": r.calls, "verdict": r.verdict.word(), "why": why(r),
        "engines": r.engines, "engines_with_person": r.engines_with_person,
        "confirms": r.confirms.map(|c| c.0), "confirms_least_proved": r.confirms.map(|c| c.1),
        "blocking": r.blocking, "witness": r.witness, "witness_replays": r.replays, "ms": r.ms,
    })
}

/// The JSON: the source, the lines, every task's verdict (`qls-bench-agentdojo/1`). Without
/// times, so a rerun with the same verdicts writes the same file, except `seconds`.
pub fn json(b: &Bench) -> String {
    let doc = json!({
        "format": "qls-bench-agentdojo/1",
        "source": b.source,
        "turns": b.turns,
        "timeout_secs": b.timeout,
        "seconds": (b.seconds * 10.0).round() / 10.0,
        "repairs": b.repairs.iter().map(|(s, r)| (s.clone(), json!({"end": r.end.word(), "proofs": r.proofs, "said": r.said}))).collect::<serde_json::Map<String, Value>>(),
        "goals_not_counted": b.outside.iter().map(|(s, g, w)| json!({"suite": s, "goal": g, "why": w})).collect::<Vec<_>>(),
        "lines": lines(b).iter().map(line_json).collect::<Vec<_>>(),
        "tasks": b.rows.iter().map(|r| {
            let mut v = row_json(r);
            v.as_object_mut().expect("an object").remove("ms");
            v
        }).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).expect("JSON serialises") + "\n"
}

/// The CSV: one line per policy and suite (and pooled).
pub fn csv(b: &Bench) -> String {
    let mut s = String::from(
        "policy,suite,goals,goals_blocked,goals_reachable,tasks,tasks_possible,tasks_one_confirm,confirms,tasks_impossible,undecided,note\n",
    );
    for l in lines(b) {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            l.policy,
            l.suite,
            l.goals,
            l.blocked,
            l.reachable,
            l.tasks,
            l.possible,
            l.one_confirm,
            l.confirms,
            l.impossible,
            l.undecided,
            l.note.as_deref().unwrap_or("")
        );
    }
    s
}

/// The published points (AgentDojo's table, gpt-4o-2024-05-13, the `important_instructions`
/// attack; CaMeL's paper): (label, utility %, security % = 100 − targeted ASR).
pub const PUBLISHED: [(&str, f64, f64); 3] = [
    ("no defence", 69.07, 52.31),
    ("tool_filter", 72.16, 93.16),
    ("CaMeL", 77.0, 100.0),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG plot, written by hand: utility (x) against security (y), 0–100 % each; qls's
/// policies pooled over the suites (filled), the published points (hollow, labelled as
/// measured by others).
pub fn svg(b: &Bench) -> String {
    let (w, h, m) = (640.0, 480.0, 60.0);
    let x = |u: f64| m + u / 100.0 * (w - 2.0 * m);
    let y = |sec: f64| h - m - sec / 100.0 * (h - 2.0 * m);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">AgentDojo: utility against security, per policy</text>\n",
        w / 2.0
    );
    for t in (0..=100).step_by(20) {
        let t = t as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\n<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text>",
            x(t), y(0.0), x(t), y(100.0),
            x(0.0), y(t), x(100.0), y(t),
            x(t), y(0.0) + 18.0,
            x(0.0) - 6.0, y(t) + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<rect x=\"{m}\" y=\"{m}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">utility: user tasks possible without a person (%)</text>\n\
         <text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">security: attack goals blocked (%)</text>",
        w - 2.0 * m,
        h - 2.0 * m,
        w / 2.0,
        h - 16.0,
        h / 2.0
    );
    for l in lines(b).iter().filter(|l| l.suite == "all") {
        let (px, py) = (x(l.utility()), y(l.security()));
        let _ = writeln!(
            s,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"#1f5fa8\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1f5fa8\">qls {} ({:.1}, {:.1}: proved, every model)</text>",
            px + 8.0,
            py - 6.0,
            esc(&l.policy),
            l.utility(),
            l.security()
        );
    }
    for (label, u, sec) in PUBLISHED {
        let (px, py) = (x(u), y(sec));
        let _ = writeln!(
            s,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"none\" stroke=\"#b5411b\" stroke-width=\"2\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#b5411b\">{} ({u}, {sec})</text>",
            px + 8.0,
            py + 14.0,
            esc(label)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{m}\" y=\"{}\" fill=\"#b5411b\">hollow: published, measured by others, one model (gpt-4o-2024-05-13), one attack</text>\n</svg>",
        m + 16.0
    );
    s
}

/// Why a task is undecided, when it is.
fn why(r: &Row) -> Option<&str> {
    match &r.verdict {
        TaskVerdict::Undecided(w) => Some(w),
        _ => None,
    }
}
