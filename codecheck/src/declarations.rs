//! Declarations checked against code (QC101–QC104): each tool whose implementation the walk
//! found (a function a framework registers as a tool, or one named like the catalogue's tool in
//! a module agent.yaml names) is read for what it does — requests and their method, file and
//! SQL writes, processes — and which of its parameters reach them, and each contradiction with
//! the catalogue is reported at the code and at the declaration.

use crate::argv;
use crate::effects::{Action, FileCtx};
use crate::model::{Function, Val};
use crate::rules::CodeRule;
use crate::Hit;
use ir::catalogue::{ArgKind, Catalogue, Effect, Tool};
use std::collections::{BTreeMap, BTreeSet};

/// A tool's implementation in one file.
pub struct Implementation<'u> {
    /// The catalogue's tool.
    pub tool: &'u Tool,
    /// The function.
    pub function: &'u Function,
}

/// The implementations in a file of the catalogue's tools.
pub fn implementations<'u>(
    cx: &FileCtx<'u>,
    catalogue: &'u Catalogue,
    named_module: bool,
) -> Vec<Implementation<'u>> {
    cx.unit
        .functions
        .iter()
        .filter_map(|f| {
            let name = f.tool.as_deref().or(if named_module {
                f.name.as_deref()
            } else {
                None
            })?;
            catalogue
                .get(name)
                .map(|tool| Implementation { tool, function: f })
        })
        .collect()
}

/// What a function's names derive from: each name (or attribute path) → the parameters it
/// was computed from, through the function's assignments in order (twice, for loops).
fn derivations(cx: &FileCtx, f: &Function) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = f
        .params
        .iter()
        .map(|p| (p.clone(), BTreeSet::from([p.clone()])))
        .collect();
    for _ in 0..2 {
        for a in cx.unit.assigns_in(f.range) {
            let from = derived(&m, &a.value);
            if from.is_empty() {
                continue;
            }
            for t in &a.targets {
                m.entry(t.clone()).or_default().extend(from.iter().cloned());
            }
        }
    }
    m
}

/// The parameters a value derives from.
fn derived(m: &BTreeMap<String, BTreeSet<String>>, v: &Val) -> BTreeSet<String> {
    v.names()
        .iter()
        .chain(v.paths().iter())
        .filter_map(|n| m.get(n))
        .flatten()
        .cloned()
        .collect()
}

/// Whether a URL's host comes from an argument: the URL is a passed-in value, or a value
/// built from one whose host is not fixed by its constant start, nor by a first part that is
/// not derived from an argument (`f"{BASE}/x/{arg}"`, `URLS[arg]`). A name bound in the
/// function to such a value is read through (`url = f"{BASE}/{q}"; get(url)`).
fn url_from_argument(
    m: &BTreeMap<String, BTreeSet<String>>,
    bound: &BTreeMap<String, Val>,
    url: &Val,
    depth: u8,
) -> BTreeSet<String> {
    let head_rule = |prefix: &str, names: &[String]| -> BTreeSet<String> {
        let fixed = prefix
            .split_once("://")
            .is_some_and(|(_, rest)| !rest.is_empty() && rest.contains(['/', '?', '#', ':']))
            || (prefix.contains('/') && !prefix.contains("://"));
        let head_passed_in = !prefix.is_empty()
            || names
                .first()
                .is_some_and(|n| !derived(m, &Val::Path(n.clone())).is_empty());
        if fixed || !head_passed_in {
            BTreeSet::new()
        } else {
            derived(m, url)
        }
    };
    match url {
        Val::Str(_) | Val::Null | Val::Num | Val::Bool(_) => BTreeSet::new(),
        Val::Built { prefix, names, .. } => head_rule(prefix, names),
        Val::Other(names) => head_rule("", names),
        Val::Path(p) if depth < 4 && !m.get(p).is_some_and(|s| s.contains(p)) => {
            match bound.get(p) {
                Some(v) => url_from_argument(m, bound, v, depth + 1),
                None => derived(m, url),
            }
        }
        other => derived(m, other),
    }
}

/// The last value each name is bound to in the function.
fn bindings(cx: &FileCtx, f: &Function) -> BTreeMap<String, Val> {
    let mut b = BTreeMap::new();
    for a in cx.unit.assigns_in(f.range) {
        if let [t] = a.targets.as_slice() {
            b.insert(t.clone(), a.value.clone());
        }
    }
    b
}

/// Every contradiction of one implementation with its declaration.
pub fn contradictions(cx: &FileCtx, imp: &Implementation) -> Vec<Hit> {
    let f = imp.function;
    let t = imp.tool;
    let m = derivations(cx, f);
    let bound = bindings(cx, f);
    let mut out = Vec::new();
    let calls: Vec<_> = cx.unit.calls_in(f.range).collect();
    let acts: Vec<(Action, crate::model::Pos)> = calls
        .iter()
        .filter_map(|c| cx.action(c).map(|a| (a, c.at)))
        .collect();
    let declared = t.at.clone();
    let hit = |rule, at, msg: String| Hit {
        rule,
        at,
        message: msg,
        tool: Some(t.name.clone()),
        declared_at: Some(declared.clone()),
    };
    if t.effect == Effect::Read {
        if let Some((a, at)) = acts.iter().find(|(a, _)| a.writes()) {
            out.push(hit(
                CodeRule::DeclaredReadWrites,
                *at,
                format!(
                    "'{}' is declared `effect: read`, but its code {}",
                    t.name,
                    a.describe()
                ),
            ));
        }
    }
    let mut fetched: BTreeSet<String> = BTreeSet::new();
    for (a, at) in &acts {
        match a {
            Action::Request {
                url: Some(url),
                method,
            } => {
                let from = url_from_argument(&m, &bound, url, 0);
                if from.is_empty() {
                    continue;
                }
                if !t.sends_out {
                    let verb = if matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS") {
                        "fetches from"
                    } else {
                        "sends to"
                    };
                    out.push(hit(CodeRule::UrlFromArgument, *at, format!("'{}' {verb} a URL taken from its argument{} `{}`, and is not declared `sends_out`", t.name, plural(&from), join(&from))));
                }
                fetched.insert(format!("{}:{}", at.line, at.col));
            }
            Action::Process { command, shell } => {
                let command = argv::command_elements(cx, f, command);
                let uses = argv::argv_use(cx, *shell, &command, |v| derived(&m, v));
                let from = uses.runs;
                if !uses.options.is_empty() {
                    let prog = match command.first() {
                        Some(Val::Str(s) | Val::Path(s)) => s.as_str(),
                        _ => "?",
                    };
                    let o = &uses.options;
                    let (elements, them) = if o.len() == 1 {
                        ("a command-line element", "it")
                    } else {
                        ("command-line elements", "them")
                    };
                    // Not a contradiction of the declaration: the tool is named, no declaration.
                    out.push(Hit {
                        declared_at: None,
                        ..hit(CodeRule::ArgumentInjection, *at, format!("'{}' passes its argument{} `{}` to `{prog}` as {elements} with no `--` before {them}: a value starting with `-` is read as an option", t.name, plural(o), join(o)))
                    });
                }
                if from.is_empty() {
                    continue;
                }
                let kinds: Vec<&ArgKind> = {
                    let named: Vec<&ArgKind> =
                        from.iter().filter_map(|p| t.arg_kinds.get(p)).collect();
                    if from
                        .iter()
                        .any(|p| t.arg_kinds.contains_key(p) || declared_arg(t, p))
                    {
                        named
                    } else {
                        t.arg_kinds.values().collect()
                    }
                };
                if !kinds
                    .iter()
                    .any(|k| matches!(k, ArgKind::Code | ArgKind::Shell))
                {
                    out.push(hit(CodeRule::ProcessFromArgument, *at, format!("'{}' {} from its argument{} `{}`, which no `arg_kinds` declares `code` or `shell`", t.name, a.describe(), plural(&from), join(&from))));
                }
            }
            _ => {}
        }
    }
    if !fetched.is_empty() && !t.returns_untrusted {
        if let Some(at) = returns_fetched(cx, f, &m, &bound) {
            out.push(hit(CodeRule::UntrustedUndeclared, at, format!("'{}' returns what it fetched from a URL taken from its arguments, and is not declared `returns: untrusted`", t.name)));
        }
    }
    out
}

/// Whether `p` is a property of the tool's argument schema.
fn declared_arg(t: &Tool, p: &str) -> bool {
    t.args
        .as_ref()
        .and_then(|a| a.get("properties"))
        .and_then(|p| p.as_object())
        .is_some_and(|o| o.contains_key(p))
}

/// Where the function returns content of a request whose URL came from an argument: the
/// names bound to such a request's result, followed through assignments, reaching a `return`.
fn returns_fetched(
    cx: &FileCtx,
    f: &Function,
    m: &BTreeMap<String, BTreeSet<String>>,
    bound: &BTreeMap<String, Val>,
) -> Option<crate::model::Pos> {
    let fetches = |v: &Val| -> bool { contains_fetch(cx, v, m, bound) };
    let mut got: BTreeSet<String> = BTreeSet::new();
    for _ in 0..2 {
        for a in cx.unit.assigns_in(f.range) {
            let reads = a
                .value
                .names()
                .iter()
                .chain(a.value.paths().iter())
                .any(|n| got.contains(n));
            if fetches(&a.value) || reads {
                for t in &a.targets {
                    if t != "err" && t != "_" {
                        got.insert(t.clone());
                    }
                }
            }
        }
    }
    f.returns
        .iter()
        .find(|(v, _)| {
            fetches(v)
                || v.names()
                    .iter()
                    .chain(v.paths().iter())
                    .any(|n| got.contains(n))
        })
        .map(|(_, at)| *at)
}

/// Whether a value is (or contains) a request to a URL from an argument.
fn contains_fetch(
    cx: &FileCtx,
    v: &Val,
    m: &BTreeMap<String, BTreeSet<String>>,
    bound: &BTreeMap<String, Val>,
) -> bool {
    match v {
        Val::Call(c) => {
            matches!(cx.action(c), Some(Action::Request { url: Some(ref u), .. }) if !url_from_argument(m, bound, u, 0).is_empty())
                || c.recv
                    .as_deref()
                    .is_some_and(|r| contains_fetch(cx, r, m, bound))
                || c.args
                    .iter()
                    .chain(c.kwargs.iter().map(|(_, v)| v))
                    .any(|a| contains_fetch(cx, a, m, bound))
        }
        Val::Object(kv) => kv.iter().any(|(_, v)| contains_fetch(cx, v, m, bound)),
        Val::List(xs) => xs.iter().any(|x| contains_fetch(cx, x, m, bound)),
        _ => false,
    }
}

fn plural(s: &BTreeSet<String>) -> &'static str {
    if s.len() == 1 {
        ""
    } else {
        "s"
    }
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join("`, `")
}

#[cfg(test)]
mod tests {
    use crate::rules::CodeRule::{self, *};
    use ir::catalogue::{ArgKind, Catalogue, Effect, Tool};
    use ir::code::Language::{self, *};
    use ir::Loc;

    fn catalogue(name: &str, effect: Effect, edit: impl FnOnce(&mut Tool)) -> Catalogue {
        let mut t = Tool::new(name, effect, Loc::new("tools.catalogue.yaml", 3));
        edit(&mut t);
        let mut c = Catalogue::default();
        c.tools.insert(name.into(), t);
        c
    }

    fn hits(lang: Language, text: &str, c: &Catalogue, named: bool) -> Vec<(CodeRule, u32)> {
        crate::findings_of(lang, text, c, named)
            .into_iter()
            .filter(|f| f.tool.is_some())
            .map(|f| (f.rule, f.line))
            .collect()
    }

    const PY_FETCH: &str = "import requests\nfrom agents import function_tool\n\n@function_tool\ndef fetch_page(url: str) -> str:\n    r = requests.get(url, timeout=10)\n    return r.text\n";

    #[test]
    fn qc101_declared_read_but_writes() {
        let c = catalogue("get_order", Effect::Read, |_| {});
        let py = "import requests\ndef get_order(order_id):\n    return requests.post('https://api.shop.com/orders', json={'id': order_id}, timeout=5).json()\n";
        assert_eq!(hits(Python, py, &c, true), vec![(DeclaredReadWrites, 3)]);
        // Found by name only in a named module.
        assert_eq!(hits(Python, py, &c, false), vec![]);
        let sql = "@tool\ndef get_order(order_id):\n    db.execute('DELETE FROM orders WHERE id = ?', (order_id,))\n";
        assert_eq!(hits(Python, sql, &c, false), vec![(DeclaredReadWrites, 3)]);
        let js = "server.tool('get_order', {}, async ({ id }) => {\n  await fs.promises.writeFile('/tmp/o', id);\n  return {};\n});\nimport fs from 'node:fs';\n";
        assert_eq!(
            hits(TypeScript, js, &c, false),
            vec![(DeclaredReadWrites, 2)]
        );
        let go = "package p\nfunc main() { s.AddTool(mcp.NewTool(\"get_order\"), h) }\nfunc h(ctx context.Context, r mcp.CallToolRequest) {\n\tos.WriteFile(\"/tmp/o\", nil, 0644)\n}\n";
        assert_eq!(hits(Go, go, &c, false), vec![(DeclaredReadWrites, 4)]);
        // Declared a write: no contradiction; a GET is a read.
        let w = catalogue("get_order", Effect::Write, |_| {});
        assert_eq!(hits(Python, py, &w, true), vec![]);
        let get = "import requests\ndef get_order(order_id):\n    return requests.get('https://api.shop.com/orders/' + order_id, timeout=5).json()\n";
        assert_eq!(hits(Python, get, &c, true), vec![]);
    }

    #[test]
    fn qc102_and_qc103_url_from_an_argument() {
        let c = catalogue("fetch_page", Effect::Read, |_| {});
        assert_eq!(
            hits(Python, PY_FETCH, &c, false),
            vec![(UrlFromArgument, 6), (UntrustedUndeclared, 7)]
        );
        let declared = catalogue("fetch_page", Effect::Read, |t| {
            t.sends_out = true;
            t.returns_untrusted = true;
        });
        assert_eq!(hits(Python, PY_FETCH, &declared, false), vec![]);
        // A fixed host with the argument in the path is not a URL from an argument.
        let fixed = "import requests\n@tool\ndef fetch_page(city):\n    r = requests.get(f'https://api.weather.gov/points/{city}', timeout=5)\n    return r.text\n";
        assert_eq!(hits(Python, fixed, &c, false), vec![]);
        let ts = "server.registerTool('fetch_page', {}, async ({ url }) => {\n  const res = await fetch(url);\n  return { content: [{ type: 'text', text: await res.text() }] };\n});\n";
        assert_eq!(
            hits(TypeScript, ts, &c, false),
            vec![(UrlFromArgument, 2), (UntrustedUndeclared, 3)]
        );
        let go = "package p\nfunc main() { s.AddTool(mcp.NewTool(\"fetch_page\"), h) }\nfunc h(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {\n\tu := req.GetString(\"url\", \"\")\n\tresp, err := http.Get(u)\n\tbody, _ := io.ReadAll(resp.Body)\n\treturn mcp.NewToolResultText(string(body)), err\n}\n";
        assert_eq!(
            hits(Go, go, &c, false),
            vec![(UrlFromArgument, 5), (UntrustedUndeclared, 7)]
        );
        // A URL bound to a fixed-host template, or picked from a fixed map by the argument
        // (both met in the TypeScript SDK's examples), is not a URL from an argument.
        let bound = "server.registerTool('fetch_page', {}, async ({ state }) => {\n  const url = `${NWS_API}/alerts?area=${state}`;\n  const res = await fetch(url);\n  return { content: [{ type: 'text', text: await res.text() }] };\n});\n";
        assert_eq!(hits(TypeScript, bound, &c, false), vec![]);
        let picked = "server.registerTool('fetch_page', {}, async ({ source }) => {\n  const res = await fetch(SOURCE_URLS[source]);\n  return { content: [{ type: 'text', text: await res.text() }] };\n});\n";
        assert_eq!(hits(TypeScript, picked, &c, false), vec![]);
        // A POST to a search endpoint asks (cloudflare/mcp-server-cloudflare's blog search).
        let r = catalogue("fetch_page", Effect::Read, |t| t.sends_out = true);
        let search = "server.tool('fetch_page', {}, async ({ query }) => {\n  const res = await fetch(`${base}/search`, { method: 'POST', body: JSON.stringify({ query }) });\n  return res.json();\n});\n";
        assert_eq!(hits(TypeScript, search, &r, false), vec![]);
    }

    #[test]
    fn qc104_process_from_an_argument() {
        let c = catalogue("run_report", Effect::Write, |_| {});
        // The program from the argument.
        let py = "import subprocess\n@mcp.tool()\ndef run_report(name: str):\n    subprocess.run([f'./reports/{name}', '--all'], check=True)\n";
        assert_eq!(hits(Python, py, &c, false), vec![(ProcessFromArgument, 4)]);
        let kinded = catalogue("run_report", Effect::Write, |t| {
            t.arg_kinds.insert("name".into(), ArgKind::Shell);
        });
        assert_eq!(hits(Python, py, &kinded, false), vec![]);
        // A shell's command line built from the argument.
        let sh = "import subprocess\n@mcp.tool()\ndef run_report(name: str):\n    subprocess.run(f'report --name {name}', shell=True)\n";
        assert_eq!(hits(Python, sh, &c, false), vec![(ProcessFromArgument, 4)]);
        let js = "const { execFile } = require('child_process');\nserver.setRequestHandler(S, async (request) => {\n  switch (request.params.name) {\n    case 'run_report': { execFile(request.params.arguments.name, []); return {}; }\n  }\n});\n";
        assert_eq!(
            hits(JavaScript, js, &c, false),
            vec![(ProcessFromArgument, 4)]
        );
        let fixed = "import subprocess\n@mcp.tool()\ndef run_report(name: str):\n    subprocess.run(['report', '--all'], check=True)\n";
        assert_eq!(hits(Python, fixed, &c, false), vec![]);
        // An interpreter's code, and a wrapper's command, from the argument run it.
        for cmd in [
            "['python3', '-c', name]",
            "['bash', '-e', name]",
            "['node', '-r', name, 'main.js']",
            "['sudo', '--', name]",
            "['xargs', '-0', name]",
            "['ssh', 'build-host', name]",
            "[RUNNER, name]",
        ] {
            let py = format!("import subprocess\n@mcp.tool()\ndef run_report(name: str):\n    subprocess.run({cmd}, check=True)\n");
            assert_eq!(
                hits(Python, &py, &c, false),
                vec![(ProcessFromArgument, 4)],
                "{cmd}"
            );
        }
    }

    #[test]
    fn qc105_an_argument_as_an_element_after_a_fixed_program() {
        let c = catalogue("export_report", Effect::Write, |_| {});
        // Issue 55's example: a fixed program, the argument a later element.
        let py = "import subprocess\n@mcp.tool()\ndef export_report(month: str):\n    r = subprocess.run([\"report-tool\", \"export\", \"--month\", month], capture_output=True, text=True)\n    return r.stdout\n";
        assert_eq!(hits(Python, py, &c, false), vec![(ArgumentInjection, 4)]);
        let f = crate::findings_of(Python, py, &c, false);
        assert_eq!(f[0].message, "'export_report' passes its argument `month` to `report-tool` as a command-line element with no `--` before it: a value starting with `-` is read as an option");
        assert_eq!(f[0].declared_at, None);
        assert_eq!(
            CodeRule::ArgumentInjection.info().severity,
            ir::vocab::Severity::Medium
        );
        assert_eq!(CodeRule::ArgumentInjection.info().cwe, "CWE-88");
        // Not after a `--`, nor glued to a constant that fixes its first character.
        for quiet in [
            "[\"report-tool\", \"export\", \"--\", month]",
            "[\"report-tool\", \"export\", f\"--month={month}\"]",
            "[\"report-tool\", \"export\", \"--month=\" + month]",
        ] {
            let py = format!("import subprocess\n@mcp.tool()\ndef export_report(month: str):\n    subprocess.run({quiet})\n");
            assert_eq!(hits(Python, &py, &c, false), vec![], "{quiet}");
        }
        // The argument naming the option is one; a list bound once in the function is read
        // through; an interpreter's argv after its constant script; a program bound in the file.
        for loud in [
            "[\"report-tool\", f\"--{month}\"]",
            "[\"python3\", \"export.py\", month]",
            "[\"python3\", \"-c\", \"import sys; print(sys.argv)\", month]",
            "[TOOL, \"export\", month]",
        ] {
            let py = format!("import subprocess\nTOOL = 'report-tool'\n@mcp.tool()\ndef export_report(month: str):\n    subprocess.run({loud})\n");
            assert_eq!(
                hits(Python, &py, &c, false),
                vec![(ArgumentInjection, 5)],
                "{loud}"
            );
        }
        let bound = "import subprocess\n@mcp.tool()\ndef export_report(month: str):\n    cmd = [\"report-tool\", \"export\", month]\n    subprocess.run(cmd)\n";
        assert_eq!(hits(Python, bound, &c, false), vec![(ArgumentInjection, 5)]);
        // Bound twice: either list may run, so the name is read as before.
        let twice = "import subprocess\n@mcp.tool()\ndef export_report(month: str):\n    cmd = [month]\n    cmd = [\"report-tool\", month]\n    subprocess.run(cmd)\n";
        assert_eq!(
            hits(Python, twice, &c, false),
            vec![(ProcessFromArgument, 6)]
        );
        // Go and JavaScript: the same reading of the list.
        let go = "package p\nfunc main() { s.AddTool(mcp.NewTool(\"export_report\"), h) }\nfunc h(ctx context.Context, r mcp.CallToolRequest) {\n\tm := r.GetString(\"month\", \"\")\n\texec.CommandContext(ctx, \"report-tool\", \"--month\", m).Output()\n\texec.CommandContext(ctx, \"report-tool\", \"--\", m).Output()\n}\n";
        assert_eq!(hits(Go, go, &c, false), vec![(ArgumentInjection, 5)]);
        let js = "const { execFile } = require('child_process');\nserver.setRequestHandler(S, async (request) => {\n  switch (request.params.name) {\n    case 'export_report': { execFile('report-tool', [request.params.arguments.month]); return {}; }\n  }\n});\n";
        assert_eq!(
            hits(JavaScript, js, &c, false),
            vec![(ArgumentInjection, 4)]
        );
    }

    #[test]
    fn a_contradiction_names_both_places() {
        let c = catalogue("fetch_page", Effect::Read, |_| {});
        let f = crate::findings_of(Python, PY_FETCH, &c, false);
        let f = f.iter().find(|f| f.rule == UrlFromArgument).unwrap();
        assert_eq!(f.declared_at, Some(Loc::new("tools.catalogue.yaml", 3)));
        assert_eq!(f.tool.as_deref(), Some("fetch_page"));
        assert_eq!(f.place(), "t:6:9");
    }
}
