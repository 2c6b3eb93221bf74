//! JavaScript, TypeScript and TSX syntax trees walked into a [`Unit`] (the TypeScript grammars
//! extend the JavaScript one; type annotations, `as`, `satisfies` and `!` are looked through).
//! Imports and `require` are resolved (`import { exec } from "node:child_process"` makes
//! `exec(…)` the call `child_process.exec`; `promisify(exec)` stays `child_process.exec`).
//! Tools: `server.tool("name", …, handler)`, `server.registerTool("name", …, handler)`, the AI
//! SDK's `tool({ execute })`, LangChain's `tool(fn, { name })` and `new DynamicStructuredTool({
//! name, func })`, each `case "name":` of a `switch` on a tool name (the low-level MCP
//! server's `tools/call` handler), and, in such a handler, what follows an
//! `if (request.params.name !== "name") throw …` (a server with one tool).

use super::{children, descend, each_node, sides, Frame, Src, Walker};
use crate::model::{Assign, Call, Function, Literal, Pair, Unit, Val};
use std::collections::HashMap;
use tree_sitter::Node;

struct Walk<'t> {
    frame: Frame<'t>,
    /// Tools registered with a function literal, by the literal's first byte.
    by_byte: HashMap<usize, String>,
}

pub(super) fn walk(src: &Src, root: Node) -> Unit {
    let mut w = Walk {
        frame: Frame::new(src),
        by_byte: HashMap::new(),
    };
    each_node(root, &mut |n| w.import(n));
    each_node(root, &mut |n| w.registration(n));
    descend(&mut w, root);
    w.frame.unit
}

frame_deref!(Walk);

/// A module name as the callee tables know it (`node:fs/promises` is `fs`).
fn module(spec: &str) -> String {
    let m = spec.trim_start_matches("node:");
    match m {
        "fs/promises" => "fs".into(),
        _ => m.into(),
    }
}

/// Nodes that only wrap an expression.
fn unwrap(n: Node) -> Node {
    match n.kind() {
        "parenthesized_expression"
        | "as_expression"
        | "satisfies_expression"
        | "non_null_expression"
        | "await_expression"
        | "type_assertion" => children(n).first().map(|c| unwrap(*c)).unwrap_or(n),
        _ => n,
    }
}

fn is_function(n: Node) -> bool {
    matches!(
        n.kind(),
        "function_expression"
            | "function"
            | "arrow_function"
            | "function_declaration"
            | "method_definition"
            | "generator_function"
            | "generator_function_declaration"
    )
}

impl<'t> Walk<'t> {
    fn string_text(&self, n: Node) -> String {
        children(n)
            .into_iter()
            .filter(|c| matches!(c.kind(), "string_fragment" | "escape_sequence"))
            .map(|c| self.text(c))
            .collect()
    }

    fn import(&mut self, n: Node) {
        match n.kind() {
            "import_statement" => {
                let Some(source) = n.child_by_field_name("source") else {
                    return;
                };
                let m = module(&self.string_text(source));
                let mut names = Vec::new();
                each_node(n, &mut |c| match c.kind() {
                    "import_specifier" => {
                        let name = c.child_by_field_name("name");
                        let alias = c.child_by_field_name("alias").or(name);
                        if let (Some(name), Some(alias)) = (name, alias) {
                            names.push((
                                self.text(alias).to_string(),
                                format!("{m}.{}", self.text(name)),
                            ));
                        }
                    }
                    "namespace_import" => {
                        if let Some(id) = children(c).into_iter().find(|x| x.kind() == "identifier")
                        {
                            names.push((self.text(id).to_string(), m.clone()));
                        }
                    }
                    "import_clause" => {
                        if let Some(id) = children(c).into_iter().find(|x| x.kind() == "identifier")
                        {
                            names.push((self.text(id).to_string(), m.clone()));
                        }
                    }
                    _ => {}
                });
                self.frame.aliases.extend(names);
            }
            "variable_declarator" => {
                let (Some(name), Some(value)) = (
                    n.child_by_field_name("name"),
                    n.child_by_field_name("value"),
                ) else {
                    return;
                };
                let value = unwrap(value);
                if value.kind() != "call_expression" {
                    return;
                }
                let Some(Val::Call(c)) = Some(self.val(value)) else {
                    return;
                };
                let target = match (c.callee.as_str(), c.args.first()) {
                    ("require", Some(Val::Str(s))) => module(s),
                    (p, Some(Val::Path(f))) if crate::model::last(p) == "promisify" => {
                        self.resolve(f)
                    }
                    _ => return,
                };
                match name.kind() {
                    "identifier" => {
                        self.frame.aliases.insert(self.text(name).into(), target);
                    }
                    "object_pattern" => {
                        for p in children(name) {
                            let (key, alias) = match p.kind() {
                                "shorthand_property_identifier_pattern" => {
                                    (self.text(p), self.text(p))
                                }
                                "pair_pattern" => match (
                                    p.child_by_field_name("key"),
                                    p.child_by_field_name("value"),
                                ) {
                                    (Some(k), Some(v)) => (self.text(k), self.text(v)),
                                    _ => continue,
                                },
                                _ => continue,
                            };
                            self.frame
                                .aliases
                                .insert(alias.into(), format!("{target}.{key}"));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn path(&self, n: Node) -> Option<String> {
        let n = unwrap(n);
        match n.kind() {
            "identifier" | "this" | "property_identifier" | "shorthand_property_identifier" => {
                Some(self.text(n).to_string())
            }
            "member_expression" => {
                let o = self.path(n.child_by_field_name("object")?)?;
                let p = self.text(n.child_by_field_name("property")?);
                Some(format!("{o}.{p}"))
            }
            _ => None,
        }
    }

    fn paths_in(&self, n: Node) -> Vec<String> {
        if let Some(p) = self.path(n) {
            return vec![p];
        }
        match n.kind() {
            "pair" => n
                .child_by_field_name("value")
                .map(|v| self.paths_in(v))
                .unwrap_or_default(),
            "string" | "property_identifier" | "type_annotation" => vec![],
            _ => children(n)
                .into_iter()
                .flat_map(|c| self.paths_in(c))
                .collect(),
        }
    }

    fn val(&self, n: Node) -> Val {
        let n = unwrap(n);
        match n.kind() {
            "string" => Val::Str(self.string_text(n)),
            "template_string" => {
                let mut prefix = String::new();
                let mut names = Vec::new();
                let mut text = String::new();
                for c in children(n) {
                    if matches!(c.kind(), "string_fragment" | "escape_sequence") {
                        text.push_str(self.text(c));
                    }
                    match c.kind() {
                        "string_fragment" | "escape_sequence" if names.is_empty() => {
                            prefix.push_str(self.text(c))
                        }
                        "template_substitution" => names.extend(self.paths_in(c)),
                        _ => {}
                    }
                }
                // A template with no substitution is a constant.
                if children(n)
                    .iter()
                    .any(|c| c.kind() == "template_substitution")
                {
                    Val::Built {
                        prefix,
                        names,
                        text,
                    }
                } else {
                    Val::Str(prefix)
                }
            }
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            "null" | "undefined" => Val::Null,
            "number" => Val::Num,
            "identifier" | "member_expression" | "this" => match self.path(n) {
                Some(p) => Val::Path(p),
                None => Val::Other(self.paths_in(n)),
            },
            "call_expression" | "new_expression" => self
                .call(n)
                .map(|c| Val::Call(Box::new(c)))
                .unwrap_or_else(|| Val::Other(self.paths_in(n))),
            "binary_expression" => {
                let op = n.child_by_field_name("operator").map(|o| self.text(o));
                match (
                    op,
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    (Some("+"), Some(l), Some(r)) => {
                        super::python::concat(vec![self.val(l), self.val(r)])
                    }
                    _ => Val::Other(self.paths_in(n)),
                }
            }
            "object" => Val::Object(
                children(n)
                    .into_iter()
                    .filter_map(|p| match p.kind() {
                        "pair" => {
                            let k = self.key(p.child_by_field_name("key")?)?;
                            Some((k, self.val(p.child_by_field_name("value")?)))
                        }
                        "shorthand_property_identifier" => {
                            Some((self.text(p).to_string(), Val::Path(self.text(p).into())))
                        }
                        "method_definition" => Some((
                            self.text(p.child_by_field_name("name")?).to_string(),
                            Val::Other(vec![]),
                        )),
                        _ => None,
                    })
                    .collect(),
            ),
            "array" => Val::List(children(n).into_iter().map(|c| self.val(c)).collect()),
            _ => Val::Other(self.paths_in(n)),
        }
    }

    fn key(&self, k: Node) -> Option<String> {
        match k.kind() {
            "property_identifier" | "identifier" => Some(self.text(k).to_string()),
            "string" => Some(self.string_text(k)),
            _ => None,
        }
    }

    fn call(&self, n: Node) -> Option<Call> {
        let f = n
            .child_by_field_name("function")
            .or(n.child_by_field_name("constructor"))?;
        let mut recv = None;
        let callee = self.path(f).map(|p| self.resolve(&p)).unwrap_or_else(|| {
            if unwrap(f).kind() == "member_expression" {
                recv = unwrap(f)
                    .child_by_field_name("object")
                    .map(|o| Box::new(self.val(o)));
                let p = unwrap(f)
                    .child_by_field_name("property")
                    .map(|x| self.text(x))
                    .unwrap_or("");
                format!("?.{p}")
            } else {
                "?".into()
            }
        });
        let mut call = Call {
            callee,
            args: vec![],
            kwargs: vec![],
            spread: false,
            recv,
            at: self.frame.src.pos(n),
        };
        if let Some(argl) = n.child_by_field_name("arguments") {
            for a in children(argl) {
                match a.kind() {
                    "spread_element" => call.spread = true,
                    "comment" => {}
                    _ => call.args.push(self.val(a)),
                }
            }
        }
        Some(call)
    }

    /// The name an anonymous function or a `tool({…})` call is bound to: the variable or the
    /// object key it is the value of.
    fn bound_name(&self, n: Node) -> Option<String> {
        let mut cur = n.parent();
        while let Some(p) = cur {
            match p.kind() {
                "variable_declarator" => {
                    return p.child_by_field_name("name").map(|x| self.text(x).into())
                }
                "pair" => return p.child_by_field_name("key").and_then(|k| self.key(k)),
                "assignment_expression" => {
                    return p
                        .child_by_field_name("left")
                        .and_then(|l| self.path(l))
                        .map(|s| crate::model::last(&s).to_string())
                }
                "arguments"
                | "call_expression"
                | "new_expression"
                | "parenthesized_expression"
                | "as_expression"
                | "satisfies_expression"
                | "await_expression" => cur = p.parent(),
                _ => return None,
            }
        }
        None
    }

    /// Tool registrations whose handler is a function literal, by the literal's first byte.
    fn registration<'a>(&mut self, n: Node<'a>) {
        if !matches!(n.kind(), "call_expression" | "new_expression") {
            return;
        }
        let Some(c) = self.call(n) else { return };
        let Some(argl) = n.child_by_field_name("arguments") else {
            return;
        };
        let args: Vec<Node> = children(argl)
            .into_iter()
            .filter(|a| a.kind() != "comment")
            .collect();
        let last = crate::model::last(&c.callee);
        let object_fn = |obj: Node<'a>, keys: &[&str]| -> Option<Node<'a>> {
            children(obj).into_iter().find_map(|p| {
                let k = p.child_by_field_name("key").and_then(|k| self.key(k))?;
                if p.kind() == "pair" && keys.contains(&k.as_str()) {
                    p.child_by_field_name("value")
                        .map(unwrap)
                        .filter(|v| is_function(*v))
                } else if p.kind() == "method_definition" && keys.contains(&k.as_str()) {
                    Some(p)
                } else {
                    None
                }
            })
        };
        let found: Option<(String, Node<'a>)> = match last {
            // server.tool("name", …, handler) / server.registerTool("name", {…}, handler)
            "tool" | "registerTool" if matches!(c.args.first(), Some(Val::Str(_))) => {
                let name = c.args[0].as_str().unwrap_or_default().to_string();
                args.last()
                    .map(|h| unwrap(*h))
                    .filter(|h| is_function(*h))
                    .map(|h| (name, h))
            }
            // tool({ description, parameters, execute }) / tool(fn, { name })
            "tool" => {
                let first = args.first().map(|a| unwrap(*a));
                match first {
                    Some(f) if is_function(f) => {
                        let name = c
                            .args
                            .get(1)
                            .and_then(|o| o.entry("name"))
                            .and_then(Val::as_str)
                            .map(str::to_string);
                        name.map(|nm| (nm, f))
                    }
                    Some(o) if o.kind() == "object" => {
                        let name = c.args[0]
                            .entry("name")
                            .and_then(Val::as_str)
                            .map(str::to_string)
                            .or_else(|| self.bound_name(n));
                        match (name, object_fn(o, &["execute", "func"])) {
                            (Some(nm), Some(f)) => Some((nm, f)),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            "DynamicStructuredTool" | "DynamicTool" => {
                let o = args
                    .first()
                    .map(|a| unwrap(*a))
                    .filter(|o| o.kind() == "object");
                let name = c
                    .args
                    .first()
                    .and_then(|o| o.entry("name"))
                    .and_then(Val::as_str)
                    .map(str::to_string);
                match (name, o.and_then(|o| object_fn(o, &["func"]))) {
                    (Some(nm), Some(f)) => Some((nm, f)),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((name, f)) = found {
            self.by_byte.insert(f.start_byte(), name);
        }
    }

    fn targets(&self, l: Node) -> Vec<String> {
        match self.path(l) {
            Some(p) => vec![p],
            None => match l.kind() {
                "object_pattern" | "array_pattern" | "pair_pattern" | "assignment_pattern"
                | "rest_pattern" => children(l)
                    .into_iter()
                    .flat_map(|c| match c.kind() {
                        "shorthand_property_identifier_pattern" => vec![self.text(c).to_string()],
                        "property_identifier" if l.kind() == "pair_pattern" => vec![],
                        _ => self.targets(c),
                    })
                    .collect(),
                "shorthand_property_identifier_pattern" => vec![self.text(l).to_string()],
                _ => vec![],
            },
        }
    }

    fn params(&self, ps: Node) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |n: Node| out.extend(self.targets(n));
        match ps.kind() {
            "identifier" => add(ps),
            _ => {
                for p in children(ps) {
                    match p.kind() {
                        "required_parameter" | "optional_parameter" => {
                            if let Some(x) = p.child_by_field_name("pattern") {
                                add(x)
                            }
                        }
                        "assignment_pattern" => {
                            if let Some(x) = p.child_by_field_name("left") {
                                add(x)
                            }
                        }
                        _ => add(p),
                    }
                }
            }
        }
        out
    }

    fn function(&self, n: Node) -> Function {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.text(x).to_string())
            .or_else(|| self.bound_name(n));
        let params = n
            .child_by_field_name("parameters")
            .or(n.child_by_field_name("parameter"))
            .map(|p| self.params(p))
            .unwrap_or_default();
        self.frame
            .function(n, name, params, self.by_byte.get(&n.start_byte()).cloned())
    }

    /// Whether a path names a tool (`request.params.name`, `toolName`).
    fn names_a_tool(&self, n: Node) -> bool {
        self.path(n).is_some_and(|p| {
            matches!(
                crate::model::last(&p),
                "name" | "toolName" | "tool_name" | "tool"
            )
        })
    }

    /// `if (request.params.name !== "get_page") { throw … }` (or `return …`), with no `else`, in
    /// a handler: every other tool is turned away, so the rest of the handler after the `if` is
    /// that tool's implementation, with the handler's parameters (anaisbetts/mcp-youtube names
    /// its one tool this way).
    fn tool_guard(&mut self, n: Node) {
        let Some(&outer) = self.frame.stack.last() else {
            return;
        };
        if n.child_by_field_name("alternative").is_some() {
            return;
        }
        let mut cond = n.child_by_field_name("condition");
        while let Some(c) = cond.filter(|c| c.kind() == "parenthesized_expression") {
            cond = children(c).into_iter().next();
        }
        let Some(cond) = cond.filter(|c| c.kind() == "binary_expression") else {
            return;
        };
        let op = cond.child_by_field_name("operator").map(|o| self.text(o));
        let (Some(l), Some(r)) = (
            cond.child_by_field_name("left"),
            cond.child_by_field_name("right"),
        ) else {
            return;
        };
        let name = match (self.val(l), self.val(r)) {
            (Val::Str(s), _) if self.names_a_tool(r) => s,
            (_, Val::Str(s)) if self.names_a_tool(l) => s,
            _ => return,
        };
        let leaves = |s: Node| matches!(s.kind(), "throw_statement" | "return_statement");
        let turns_away = n.child_by_field_name("consequence").is_some_and(|c| {
            leaves(c)
                || (c.kind() == "statement_block"
                    && children(c)
                        .into_iter()
                        .rfind(|x| x.is_named())
                        .is_some_and(leaves))
        });
        if !matches!(op, Some("!==" | "!=")) || !turns_away {
            return;
        }
        let params = self.frame.unit.functions[outer].params.clone();
        let end = self.frame.unit.functions[outer].range.1;
        self.frame.unit.functions.push(Function {
            name: Some(name.clone()),
            params,
            at: self.frame.src.pos(n),
            range: (n.end_byte(), end),
            tool: Some(name),
            returns: vec![],
        });
    }

    /// `switch (name) { case "get_page": … }` on a tool name: each case with a string label is
    /// the tool's implementation, with the enclosing function's parameters.
    fn tool_switch(&mut self, n: Node) {
        let Some(disc) = n.child_by_field_name("value") else {
            return;
        };
        let on_name = self.names_a_tool(disc);
        let Some(&outer) = self.frame.stack.last() else {
            return;
        };
        let Some(body) = n.child_by_field_name("body") else {
            return;
        };
        if !on_name {
            return;
        }
        let params = self.frame.unit.functions[outer].params.clone();
        for case in children(body)
            .into_iter()
            .filter(|c| c.kind() == "switch_case")
        {
            let Some(Val::Str(name)) = case.child_by_field_name("value").map(|v| self.val(v))
            else {
                continue;
            };
            self.frame.unit.functions.push(Function {
                name: Some(name.clone()),
                params: params.clone(),
                at: self.frame.src.pos(case),
                range: (case.start_byte(), case.end_byte()),
                tool: Some(name),
                returns: vec![],
            });
        }
    }
}

impl<'t> Walker<'t> for Walk<'t> {
    fn at(&mut self, n: Node) -> bool {
        let mut pushed = false;
        match n.kind() {
            "call_expression" | "new_expression" => {
                if let Some(c) = self.call(n) {
                    self.frame.unit.calls.push(c);
                }
            }
            "pair" => {
                if let (Some(k), Some(v)) = (
                    n.child_by_field_name("key").and_then(|k| self.key(k)),
                    n.child_by_field_name("value"),
                ) {
                    self.frame.unit.pairs.push(Pair {
                        key: k,
                        value: self.val(v),
                        at: self.frame.src.pos(n),
                    });
                }
            }
            "variable_declarator" | "assignment_expression" | "augmented_assignment_expression" => {
                let (l, r) = sides(n, n.kind() == "variable_declarator");
                if let (Some(l), Some(r)) = (l, r) {
                    let targets = self.targets(l);
                    self.frame.unit.assigns.push(Assign {
                        targets,
                        value: self.val(r),
                        at: self.frame.src.pos(n),
                    });
                }
            }
            "string" => {
                let prose = n
                    .parent()
                    .is_some_and(|p| p.kind() == "expression_statement");
                self.frame.unit.literals.push(Literal {
                    text: self.string_text(n),
                    at: self.frame.src.pos(n),
                    prose,
                });
            }
            "template_string" => {
                for c in children(n) {
                    if c.kind() == "string_fragment" {
                        self.frame.unit.literals.push(Literal {
                            text: self.text(c).into(),
                            at: self.frame.src.pos(c),
                            prose: false,
                        });
                    }
                }
            }
            _ if is_function(n) => {
                let f = self.function(n);
                pushed = self.open(f);
            }
            "return_statement" => {
                if let (Some(&fi), Some(e)) = (self.frame.stack.last(), children(n).first()) {
                    let v = self.val(*e);
                    let at = self.frame.src.pos(n);
                    self.frame.unit.functions[fi].returns.push((v, at));
                }
            }
            "switch_statement" => self.tool_switch(n),
            "if_statement" => self.tool_guard(n),
            _ => {}
        }
        // An arrow function's expression body is its return value.
        if n.kind() == "arrow_function" {
            if let Some(b) = n
                .child_by_field_name("body")
                .filter(|b| b.kind() != "statement_block")
            {
                let v = self.val(b);
                let at = self.frame.src.pos(b);
                if let Some(&fi) = self.frame.stack.last() {
                    self.frame.unit.functions[fi].returns.push((v, at));
                }
            }
        }
        pushed
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::walk;
    use ir::code::Language;

    #[test]
    fn imports_registrations_and_switches() {
        let src = r#"
import { exec } from "node:child_process";
import { promisify } from "util";
const run = promisify(exec);
server.tool("fetch_page", "Fetch", { url: z.string() }, async ({ url }) => {
  const r = await fetch(url);
  return r.text();
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  switch (request.params.name) {
    case "shell": { await run(`ls ${request.params.arguments.dir}`); return {}; }
  }
});
"#;
        for lang in [Language::JavaScript, Language::TypeScript] {
            let u = walk(lang, src).unwrap();
            let callees: Vec<&str> = u.calls.iter().map(|c| c.callee.as_str()).collect();
            assert!(callees.contains(&"child_process.exec"), "{callees:?}");
            let tools: Vec<(&str, &Vec<String>)> = u
                .functions
                .iter()
                .filter_map(|f| f.tool.as_deref().map(|t| (t, &f.params)))
                .collect();
            assert_eq!(tools.len(), 2, "{tools:?}");
            assert_eq!(tools[0].0, "fetch_page");
            assert_eq!(tools[0].1, &vec!["url".to_string()]);
            assert_eq!(tools[1].0, "shell");
            assert_eq!(tools[1].1, &vec!["request".to_string()]);
        }
    }

    #[test]
    fn a_handler_that_turns_away_every_other_tool_implements_the_one_it_names() {
        let src = r#"
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name !== "download_youtube_url") {
    throw new Error(`Unknown tool: ${request.params.name}`);
  }
  const { url } = request.params.arguments;
  await spawnPromise("yt-dlp", ["--skip-download", url]);
});
server.setRequestHandler(Other, async (request) => {
  if (request.params.name !== "kept_going") { log("other"); }
  if ("returned" != request.params.name) return {};
  if (request.params.name !== "has_else") { throw new Error("x"); } else { run(); }
});
"#;
        let u = walk(Language::TypeScript, src).unwrap();
        let tools: Vec<(&str, usize, usize)> = u
            .functions
            .iter()
            .filter_map(|f| f.tool.as_deref().map(|t| (t, f.range.0, f.range.1)))
            .collect();
        let names: Vec<&str> = tools.iter().map(|t| t.0).collect();
        assert_eq!(names, vec!["download_youtube_url", "returned"]);
        let (_, start, end) = tools[0];
        assert!(src[start..end].contains("spawnPromise") && !src[start..end].contains("Unknown"));
        assert!(!src[start..end].contains("kept_going"));
    }
}
