//! The small code model every rule reads: what one walk over a file's syntax tree found — calls
//! with their arguments, assignments, key/value pairs (keyword arguments, dict and object
//! entries, struct fields), string literals, functions and tool registrations — in a shape
//! common to the four languages. Each language's walk (`lang/`) fills it; no rule looks at a
//! text again, and no rule sees a language's node kinds.

/// A 1-based line and column (the column counts characters) and the byte offset it stands at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
    /// Byte offset in the file.
    pub byte: usize,
}

/// An expression, summarised as far as the rules need it.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A constant string (its content, escapes left as written).
    Str(String),
    /// A string built at run time (an f-string, a template with substitutions, a
    /// concatenation, `%`/`.format`/`Sprintf` formatting): its constant prefix and the names it
    /// reads.
    Built {
        /// The constant text before the first value put in.
        prefix: String,
        /// Every name the values put in read.
        names: Vec<String>,
        /// Every constant part, in order (`{base}/search` has `/search`).
        text: String,
    },
    /// `True`/`true` or `False`/`false`.
    Bool(bool),
    /// `None`, `null`, `undefined`, `nil`.
    Null,
    /// A number.
    Num,
    /// A name or a path of attributes (`args.url`, `self.client`, `http.MethodPost`).
    Path(String),
    /// A call (awaited or not).
    Call(Box<Call>),
    /// A dict, an object literal or a composite literal: its keyed entries.
    Object(Vec<(String, Val)>),
    /// A list or an array.
    List(Vec<Val>),
    /// Anything else, with the names it reads.
    Other(Vec<String>),
}

impl Val {
    /// The constant string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the value is known when the code is written (a literal or a literal list).
    pub fn is_constant(&self) -> bool {
        match self {
            Val::Str(_) | Val::Bool(_) | Val::Null | Val::Num => true,
            Val::List(xs) => xs.iter().all(Val::is_constant),
            Val::Object(kv) => kv.iter().all(|(_, v)| v.is_constant()),
            _ => false,
        }
    }

    /// Every root name the value reads (`args.url` reads `args`; a call reads its callee's root
    /// and its arguments).
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_names(&mut out);
        out
    }

    fn collect_names(&self, out: &mut Vec<String>) {
        match self {
            Val::Built { names, .. } | Val::Other(names) => {
                out.extend(names.iter().map(|n| root(n).to_string()))
            }
            Val::Path(p) => out.push(root(p).to_string()),
            Val::Call(c) => {
                out.push(root(&c.callee).to_string());
                if let Some(r) = &c.recv {
                    r.collect_names(out);
                }
                for a in c.args.iter().chain(c.kwargs.iter().map(|(_, v)| v)) {
                    a.collect_names(out);
                }
            }
            Val::Object(kv) => kv.iter().for_each(|(_, v)| v.collect_names(out)),
            Val::List(xs) => xs.iter().for_each(|v| v.collect_names(out)),
            Val::Str(_) | Val::Bool(_) | Val::Null | Val::Num => {}
        }
    }

    /// Every full name or attribute path the value reads (`args.api_key`, `password`).
    pub fn paths(&self) -> Vec<String> {
        match self {
            Val::Built { names, .. } | Val::Other(names) => names.clone(),
            Val::Path(p) => vec![p.clone()],
            Val::Call(c) => c
                .args
                .iter()
                .chain(c.kwargs.iter().map(|(_, v)| v))
                .flat_map(Val::paths)
                .collect(),
            Val::Object(kv) => kv.iter().flat_map(|(_, v)| v.paths()).collect(),
            Val::List(xs) => xs.iter().flat_map(Val::paths).collect(),
            _ => vec![],
        }
    }

    /// The value's entry under `key`, when it is an object with one.
    pub fn entry(&self, key: &str) -> Option<&Val> {
        match self {
            Val::Object(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// The first segment of a dotted path.
pub fn root(path: &str) -> &str {
    path.split(['.', '[', '(']).next().unwrap_or(path)
}

/// The last segment of a dotted path.
pub fn last(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// One call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The callee as a dotted path (`requests.get`, `exec.Command`, `child_process.exec`,
    /// imports resolved by the walk), or `?` when it is not a name.
    pub callee: String,
    /// Positional arguments.
    pub args: Vec<Val>,
    /// Keyword arguments (Python).
    pub kwargs: Vec<(String, Val)>,
    /// Whether some argument is spread (`**kw`, `*a`, `...x`): what it holds is unknown.
    pub spread: bool,
    /// The value a method is called on when it is not a name (`fetch(u).then(…)`'s
    /// `fetch(u)`), so a chain keeps what it started from.
    pub recv: Option<Box<Val>>,
    /// Where the call is.
    pub at: Pos,
}

impl Call {
    /// The keyword argument `name`.
    pub fn kwarg(&self, name: &str) -> Option<&Val> {
        self.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// `x = value` (also `with value as x`, `x := value`, `const {a} = value`).
#[derive(Clone, Debug, PartialEq)]
pub struct Assign {
    /// The names or attribute paths bound.
    pub targets: Vec<String>,
    /// The value.
    pub value: Val,
    /// Where.
    pub at: Pos,
}

/// A key with a value: a keyword argument, a dict or object entry, a struct field.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// The key as written (a string key's content, or the identifier).
    pub key: String,
    /// The value.
    pub value: Val,
    /// Where the key is.
    pub at: Pos,
}

/// A string literal (constant text only; a template's constant parts are one literal each).
#[derive(Clone, Debug, PartialEq)]
pub struct Literal {
    /// Its content.
    pub text: String,
    /// Where it starts.
    pub at: Pos,
    /// A docstring or a bare string statement: prose, not a value.
    pub prose: bool,
}

/// A function (or a method, an arrow function, a function literal, a `case` of an MCP
/// `tools/call` handler's switch on the tool name).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Its name (the variable or key it is bound to for an anonymous one), if any.
    pub name: Option<String>,
    /// Its parameters' names (`self`, `cls` and Go's `ctx` dropped).
    pub params: Vec<String>,
    /// Where its name (or its start) is.
    pub at: Pos,
    /// Its byte range.
    pub range: (usize, usize),
    /// The tool name a framework registers it under (a decorator, a registration call), if one
    /// does.
    pub tool: Option<String>,
    /// The values it returns.
    pub returns: Vec<(Val, Pos)>,
}

/// A registration of a function under a tool name that the walk could not attach to a
/// function's definition by itself (`FunctionTool(fn)`, `s.AddTool(mcp.NewTool("x"), h)`):
/// the function is found by name afterwards.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    /// The tool's name (the function's name when the registration gives none).
    pub tool: String,
    /// The function's name.
    pub function: String,
}

/// Everything the walk found in one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unit {
    /// Calls, in source order.
    pub calls: Vec<Call>,
    /// Assignments, in source order.
    pub assigns: Vec<Assign>,
    /// Keyed pairs, in source order.
    pub pairs: Vec<Pair>,
    /// String literals, in source order.
    pub literals: Vec<Literal>,
    /// Functions, in source order.
    pub functions: Vec<Function>,
    /// Registrations by name.
    pub registrations: Vec<Registration>,
}

impl Unit {
    /// Attaches every registration by name to the function it names (the first one of that name
    /// without a tool of its own).
    pub fn attach_registrations(&mut self) {
        for r in std::mem::take(&mut self.registrations) {
            if let Some(f) = self
                .functions
                .iter_mut()
                .find(|f| f.tool.is_none() && f.name.as_deref() == Some(&r.function))
            {
                f.tool = Some(r.tool);
            }
        }
    }

    /// The calls inside a byte range, in order.
    pub fn calls_in(&self, range: (usize, usize)) -> impl Iterator<Item = &Call> {
        self.calls
            .iter()
            .filter(move |c| c.at.byte >= range.0 && c.at.byte < range.1)
    }

    /// The assignments inside a byte range, in order.
    pub fn assigns_in(&self, range: (usize, usize)) -> impl Iterator<Item = &Assign> {
        self.assigns
            .iter()
            .filter(move |a| a.at.byte >= range.0 && a.at.byte < range.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_roots_and_paths_are_whole() {
        let v = Val::Built {
            prefix: "https://".into(),
            names: vec!["args.host".into(), "port".into()],
            text: "https://:/".into(),
        };
        assert_eq!(v.names(), vec!["args", "port"]);
        assert_eq!(v.paths(), vec!["args.host", "port"]);
        assert!(!v.is_constant());
        assert!(Val::List(vec![Val::Str("ls".into())]).is_constant());
        assert_eq!(root("self.client.get"), "self");
        assert_eq!(last("self.client.get"), "get");
    }
}
