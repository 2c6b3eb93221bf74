//! Changes of the rulebook's own text, for the rulebook findings no change of the catalogue or
//! the graph is about (docs/repair.md):
//!
//! - QG005, a sheet refused for a second rule about one action: the two rules **merged** into
//!   the first, so both rules' keys apply (the strictest reading; offered only when the two
//!   rules share no key but `action`, so nothing has to be chosen between values).
//! - QG005, a Colang statement the reader refuses: the statement **dropped**, with the lines
//!   indented under it (repeated while the file is refused at another statement, up to
//!   [`MAX_DROPPED`]). What the statement was meant to do is unknown to qls; the report says the
//!   policy lost it, and the proof covers the rest.
//! - QG022 on a rail: the flow an advisory names, or that executes an action one names,
//!   **dropped** whole. The re-proof shows whether any obligation proved before relied on it
//!   (the search keeps no set under which one becomes reachable).
//!
//! Every change here is checked before it is offered: the edited text must compile
//! (`readers::rulebook::compile_text`), so a change is never one that is refused again.

use super::space::{push, Kind, Scope};
use super::text::{Doc, Edit};
use super::{Change, Files};
use ir::vocab::RuleId;
use ir::Project;
use std::collections::{BTreeMap, BTreeSet};

/// How many refused statements one change may drop before it is not offered: a file refused at
/// more places than that is not one whose policy a repair should rewrite.
pub const MAX_DROPPED: usize = 8;

/// The rulebook changes these inputs offer (see the module's doc).
pub(super) fn rulebook_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    if let Some(e) = &p.rulebook_refusal {
        if e.code.as_deref() == Some("rulebook_unsupported") {
            if let Some(key) = files.resolve(&e.file) {
                refusal_change(&e.file, &key, files.text(&key), e.line as usize, out);
            }
        }
    }
    advised_flow_changes(p, files, out);
}

/// The line's indentation, in bytes of leading blanks.
fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The byte range of lines `[first, end)` (0-based) of `doc`'s text, the final newline included.
fn line_range(text: &str, starts: &[usize], first: usize, end: usize) -> (usize, usize) {
    let s = starts[first];
    let e = starts.get(end).copied().unwrap_or(text.len());
    (s, e)
}

/// Start offsets of each line.
fn starts_of(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&s| s < text.len())
        .collect()
}

fn line_at<'t>(text: &'t str, starts: &[usize], n: usize) -> &'t str {
    let (s, e) = line_range(text, starts, n, n + 1);
    text[s..e].trim_end_matches(['\n', '\r'])
}

/// One past the last line of the block that starts at line `first` (0-based): the lines after
/// it that are blank or indented deeper, up to the last non-blank one (trailing blank lines
/// stay, they separate what follows).
fn block_end(text: &str, starts: &[usize], first: usize) -> usize {
    let own = indent(line_at(text, starts, first));
    let mut end = first + 1;
    let mut n = first + 1;
    while n < starts.len() {
        let l = line_at(text, starts, n);
        if l.trim().is_empty() {
            n += 1;
            continue;
        }
        if indent(l) <= own {
            break;
        }
        n += 1;
        end = n;
    }
    end
}

/// The refused statement or rule at `line` (1-based): a sheet's second rule merged into its
/// first, or a Colang statement dropped.
fn refusal_change(file: &str, key: &str, text: &str, line: usize, out: &mut Vec<Change>) {
    let doc = Doc::new(text);
    let scope = Scope::Rulebook {
        rule: RuleId::QG005,
        subjects: vec![obligations::rules::rulebook::qg005_subject(file)],
    };
    if file.ends_with(".yaml") || file.ends_with(".yml") {
        if let Some((action, edits)) = merge_rules(text, line) {
            if compiles(file, text, &edits) {
                push(out, Kind::MergeRules { action }, scope, key, &doc, edits);
            }
        }
        return;
    }
    let mut dropped: Vec<(usize, usize)> = Vec::new(); // (first line, end line), 0-based
    let mut statements = Vec::new();
    let mut at = line;
    while dropped.len() < MAX_DROPPED {
        let starts = starts_of(text);
        if at == 0 || at > starts.len() {
            return;
        }
        let first = at - 1;
        if dropped.iter().any(|&(f, e)| first >= f && first < e) {
            return; // refused inside what was dropped: the locators disagree with the reader
        }
        let end = block_end(text, &starts, first);
        dropped.push((first, end));
        statements.push(line_at(text, &starts, first).trim().to_string());
        let edits = drop_edits(text, &starts, &dropped);
        let borrowed: Vec<&Edit> = edits.iter().collect();
        let new = super::text::apply(text, &borrowed);
        match readers::rulebook::compile_text(file, &new) {
            Ok(_) => {
                let lines = dropped.iter().map(|&(f, _)| f + 1).collect();
                let kind = Kind::DropStatements { statements, lines };
                push(out, kind, scope, key, &doc, edits);
                return;
            }
            Err(e) if e.code.as_deref() == Some("rulebook_unsupported") && e.file == file => {
                // The next refusal is named in the edited text: its line in the original is
                // found by walking the original lines, skipping the dropped ones.
                let mut edited_line = 0usize;
                let mut found = None;
                for n in 0..starts.len() {
                    if dropped.iter().any(|&(f, e)| n >= f && n < e) {
                        continue;
                    }
                    edited_line += 1;
                    if edited_line == e.line as usize {
                        found = Some(n);
                        break;
                    }
                }
                let Some(n) = found else { return };
                at = n + 1;
            }
            Err(_) => return,
        }
    }
}

/// The edits deleting each of the line ranges `dropped` (0-based `[first, end)`).
fn drop_edits(text: &str, starts: &[usize], dropped: &[(usize, usize)]) -> Vec<Edit> {
    let mut ranges = dropped.to_vec();
    ranges.sort();
    ranges
        .iter()
        .map(|&(f, e)| {
            let (s, t) = line_range(text, starts, f, e);
            Edit {
                offset: s,
                delete: t - s,
                insert: String::new(),
            }
        })
        .collect()
}

/// Whether `text` with `edits` made still compiles as the rulebook `file`.
fn compiles(file: &str, text: &str, edits: &[Edit]) -> bool {
    let borrowed: Vec<&Edit> = edits.iter().collect();
    readers::rulebook::compile_text(file, &super::text::apply(text, &borrowed)).is_ok()
}

/// One rule of a sheet as its lines: `[first, end)` (0-based), its keys and their lines.
struct SheetItem {
    first: usize,
    end: usize,
    /// Each key, with its line.
    keys: Vec<(String, usize)>,
}

/// The sheet's rules, from its lines (the subset: `- key: value` opens a rule, `  key: value`
/// continues it; anything else makes the sheet one this locator does not read: `None`).
fn sheet_items(text: &str, starts: &[usize]) -> Option<Vec<SheetItem>> {
    let mut items: Vec<SheetItem> = Vec::new();
    let key_of = |s: &str| -> Option<String> {
        let (k, _) = s.split_once(':')?;
        let k = k.trim();
        (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| k.to_string())
    };
    for n in 0..starts.len() {
        let l = line_at(text, starts, n);
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if indent(l) == 0 {
            if t.starts_with("rules:") {
                continue;
            }
            if !t.starts_with("- ") {
                return None;
            }
        }
        if let Some(rest) = t.strip_prefix("- ") {
            items.push(SheetItem {
                first: n,
                end: n + 1,
                keys: vec![(key_of(rest)?, n)],
            });
        } else {
            let item = items.last_mut()?;
            item.keys.push((key_of(t)?, n));
            item.end = n + 1;
        }
    }
    Some(items)
}

/// The edits that merge the rule whose `action` is at `line` (1-based) into the first rule for
/// the same action: its other key lines re-indented under the first rule, its own lines
/// removed. `None` when the rules share a key besides `action` or the sheet is not in the form
/// [`sheet_items`] reads.
fn merge_rules(text: &str, line: usize) -> Option<(String, Vec<Edit>)> {
    let starts = starts_of(text);
    let items = sheet_items(text, &starts)?;
    let second = items
        .iter()
        .position(|i| i.keys.iter().any(|(k, l)| k == "action" && *l + 1 == line))?;
    let action_of = |i: &SheetItem| -> Option<String> {
        let (_, l) = i.keys.iter().find(|(k, _)| k == "action")?;
        let t = line_at(text, &starts, *l).trim().trim_start_matches("- ");
        let v = t.split_once(':')?.1.trim();
        Some(v.trim_matches(['"', '\'']).to_string())
    };
    let action = action_of(&items[second])?;
    let first = items[..second]
        .iter()
        .find(|i| action_of(i).as_deref() == Some(action.as_str()))?;
    let theirs: BTreeSet<&str> = first.keys.iter().map(|(k, _)| k.as_str()).collect();
    let moved: Vec<&(String, usize)> = items[second]
        .keys
        .iter()
        .filter(|(k, _)| k != "action")
        .collect();
    if moved.iter().any(|(k, _)| theirs.contains(k.as_str())) {
        return None;
    }
    let cont = indent(line_at(text, &starts, first.first)) + 2;
    let mut insert = String::new();
    for (_, l) in &moved {
        let t = line_at(text, &starts, *l).trim().trim_start_matches("- ");
        insert.push_str(&" ".repeat(cont));
        insert.push_str(t);
        insert.push('\n');
    }
    let at = starts.get(first.end).copied().unwrap_or(text.len());
    let mut prefix = String::new();
    if at == text.len() && !text.ends_with('\n') {
        prefix.push('\n');
    }
    let (s, e) = line_range(text, &starts, items[second].first, items[second].end);
    let edits = vec![
        Edit {
            offset: at,
            delete: 0,
            insert: prefix + &insert,
        },
        Edit {
            offset: s,
            delete: e - s,
            insert: String::new(),
        },
    ];
    Some((action, edits))
}

/// Per flow that QG022 names (an advisory's flow, or one executing an advisory's action): the
/// flow dropped whole, scoped to the QG022 findings that go with it.
fn advised_flow_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let Some(rb) = &p.rulebook else { return };
    let mut by_flow: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (subject, flows) in obligations::rules::rulebook::advised_flows(rb) {
        for f in flows {
            by_flow.entry(f).or_default().insert(subject.clone());
        }
    }
    for (flow, subjects) in by_flow {
        let Some(def) = rb.flows.iter().find(|f| f.name == flow) else {
            continue;
        };
        let Some(key) = files.resolve(&def.at.file) else {
            continue;
        };
        let text = files.text(&key);
        let starts = starts_of(text);
        let first = def.at.line as usize;
        if first == 0 || first > starts.len() {
            continue;
        }
        let first = first - 1;
        let mut end = block_end(text, &starts, first);
        if end < starts.len() && line_at(text, &starts, end).trim().is_empty() {
            end += 1; // the blank line that separated it from what follows
        }
        let edits = drop_edits(text, &starts, &[(first, end)]);
        if !compiles(&def.at.file, text, &edits) {
            continue;
        }
        let doc = Doc::new(text);
        let scope = Scope::Rulebook {
            rule: RuleId::QG022,
            subjects: subjects.into_iter().collect(),
        };
        let kind = Kind::DropFlow {
            flow: flow.to_string(),
        };
        push(out, kind, scope, &key, &doc, edits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(text: &str, edits: &[Edit]) -> String {
        let b: Vec<&Edit> = edits.iter().collect();
        super::super::text::apply(text, &b)
    }

    #[test]
    fn a_second_rule_for_one_action_is_merged_into_the_first() {
        let t = "rules:\n- action: refund_card\n  requires: [supervisor_approved]\n- action: charge_card\n  at_most: 2\n- action: refund_card\n  at_most: 1\n";
        let (action, edits) = merge_rules(t, 6).unwrap();
        assert_eq!(action, "refund_card");
        let new = applied(t, &edits);
        assert_eq!(new, "rules:\n- action: refund_card\n  requires: [supervisor_approved]\n  at_most: 1\n- action: charge_card\n  at_most: 2\n");
        assert!(readers::rulebook::compile_text("rules.yaml", &new).is_ok());
    }

    #[test]
    fn rules_sharing_a_key_are_not_merged() {
        let t =
            "rules:\n- action: refund_card\n  at_most: 2\n- action: refund_card\n  at_most: 1\n";
        assert!(merge_rules(t, 4).is_none());
    }

    #[test]
    fn a_refused_statement_is_dropped_with_its_block_until_the_file_compiles() {
        let t = "define flow refunds\n  user ask refund\n  frobnicate the ledger\n    twice\n  if $order_paid\n    execute refund\n  wibble\n";
        let mut out = Vec::new();
        refusal_change("policy.co", "policy.co", t, 3, &mut out);
        let [c] = out.as_slice() else {
            panic!("one change: {out:?}")
        };
        let Kind::DropStatements { statements, lines } = &c.kind else {
            panic!("{:?}", c.kind)
        };
        assert_eq!(lines, &vec![3, 7]);
        assert_eq!(statements[0], "frobnicate the ledger");
        let new = applied(t, &c.edits);
        assert_eq!(
            new,
            "define flow refunds\n  user ask refund\n  if $order_paid\n    execute refund\n"
        );
    }

    /// Regression guard for the locators: no text and no refused line makes them panic.
    #[test]
    fn odd_texts_and_lines_never_panic() {
        let texts = [
            "",
            "\n",
            "rules:",
            "rules:\n- action: a\n- action: a",
            "rules:\r\n- action: a\r\n  at_most: 1\r\n- action: a\r\n  requires: [x]",
            "- action: a\n\t- action: a\n",
            "define flow x\n  frob\n\u{3000}wibble\n",
            "flow x\n  é\n    ü\n",
            "define flow x",
        ];
        for t in texts {
            for line in 0..8 {
                let _ = merge_rules(t, line);
                let mut out = Vec::new();
                refusal_change("r.yaml", "r.yaml", t, line, &mut out);
                refusal_change("p.co", "p.co", t, line, &mut out);
            }
        }
    }

    /// On the real Colang files of `fixtures/colang-examples` (NeMo Guardrails' own, with
    /// their provenance there): an unknown statement put into a flow, as a sibling of its first
    /// statement, is refused, and the drop offered gives back the file as it was.
    #[test]
    fn a_statement_put_into_real_colang_is_dropped_back_to_the_file() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/colang-examples");
        let mut files = Vec::new();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "co") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut exercised = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            if readers::rulebook::compile_text("real.co", &text).is_err() {
                continue;
            }
            let starts = starts_of(&text);
            let header = (0..starts.len()).find(|&n| {
                let l = line_at(&text, &starts, n);
                indent(l) == 0 && (l.starts_with("define flow ") || l.starts_with("flow "))
            });
            let Some(h) = header else { continue };
            let Some(body) = (h + 1..starts.len())
                .find(|&n| !line_at(&text, &starts, n).trim().is_empty())
                .filter(|&n| indent(line_at(&text, &starts, n)) > 0)
            else {
                continue;
            };
            let at = starts[body];
            let pad = " ".repeat(indent(line_at(&text, &starts, body)));
            let bad = format!("{}{pad}frobnicate the ledger\n{}", &text[..at], &text[at..]);
            let Err(e) = readers::rulebook::compile_text("real.co", &bad) else {
                continue;
            };
            if e.code.as_deref() != Some("rulebook_unsupported") || e.line as usize != body + 1 {
                continue;
            }
            let mut out = Vec::new();
            refusal_change("real.co", "real.co", &bad, e.line as usize, &mut out);
            let [c] = out.as_slice() else {
                panic!("{}: no drop offered", path.display())
            };
            assert_eq!(applied(&bad, &c.edits), text, "{}", path.display());
            exercised += 1;
        }
        assert!(exercised >= 40, "only {exercised} real files exercised");
    }

    #[test]
    fn blocks_end_at_the_next_line_as_shallow() {
        let t = "a\n  b\n\n  c\nd\n";
        let s = starts_of(t);
        assert_eq!(block_end(t, &s, 0), 4);
        assert_eq!(block_end(t, &s, 1), 2);
    }
}
