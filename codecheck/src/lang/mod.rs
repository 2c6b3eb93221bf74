//! The walks: each language's syntax tree (parsed by its tree-sitter grammar) turned into the
//! [`Unit`] the rules read. `python.rs`, `js.rs` (JavaScript, TypeScript and TSX: the
//! TypeScript grammars extend the JavaScript one, so one walk reads all three) and `go.rs`; this
//! file holds the parser and what every walk shares.

/// A walk `$walk<'t>` with a `frame: Frame<'t>` field reads and writes the frame's fields
/// and methods as its own.
macro_rules! frame_deref {
    ($walk:ident) => {
        impl<'t> std::ops::Deref for $walk<'t> {
            type Target = Frame<'t>;
            fn deref(&self) -> &Frame<'t> {
                &self.frame
            }
        }

        impl<'t> std::ops::DerefMut for $walk<'t> {
            fn deref_mut(&mut self) -> &mut Frame<'t> {
                &mut self.frame
            }
        }
    };
}

mod go;
mod js;
mod python;

use crate::model::{Function, Pos, Unit};
use ir::code::Language;
use std::collections::HashMap;
use std::ops::DerefMut;
use tree_sitter::{Node, Parser};

/// Why a file could not be parsed at all (a file with syntax errors still parses: the grammar
/// recovers, and the rules read what it recovered).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The grammar and the tree-sitter library do not fit (a build problem, never the input's).
    #[error("the {0} grammar does not load: {1}")]
    Grammar(&'static str, String),
    /// The parser gave up (it only does on cancellation or a timeout, neither of which is set).
    #[error("the {0} parser returned no tree")]
    NoTree(&'static str),
}

/// Parses `text` as `lang` and walks its tree into a [`Unit`].
pub fn walk(lang: Language, text: &str) -> Result<Unit, ParseError> {
    walk_checked(lang, text).map(|(u, _)| u)
}

/// [`walk`], and whether the grammar found syntax errors (and recovered from them).
pub fn walk_checked(lang: Language, text: &str) -> Result<(Unit, bool), ParseError> {
    let tree = parse(lang, text)?;
    let src = Src { text };
    let mut unit = match lang {
        Language::Python => python::walk(&src, tree.root_node()),
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            js::walk(&src, tree.root_node())
        }
        Language::Go => go::walk(&src, tree.root_node()),
    };
    unit.attach_registrations();
    Ok((unit, tree.root_node().has_error()))
}

/// `text`'s syntax tree under `lang`'s grammar: the one parse the walks and the source fixes
/// (`fixes/`) read.
pub(crate) fn parse(lang: Language, text: &str) -> Result<tree_sitter::Tree, ParseError> {
    let grammar: tree_sitter::Language = match lang {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
    };
    let mut parser = Parser::new();
    parser
        .set_language(&grammar)
        .map_err(|e| ParseError::Grammar(lang.name(), e.to_string()))?;
    parser
        .parse(text, None)
        .ok_or(ParseError::NoTree(lang.name()))
}

/// The text a tree was parsed from.
#[derive(Clone, Copy)]
pub(crate) struct Src<'t> {
    text: &'t str,
}

impl<'t> Src<'t> {
    /// A node's text.
    pub(crate) fn of(&self, n: Node) -> &'t str {
        &self.text[n.byte_range()]
    }

    /// Where a node starts: line, column in characters, byte.
    pub(crate) fn pos(&self, n: Node) -> Pos {
        let p = n.start_position();
        let start = n.start_byte();
        let line_start = start - p.column.min(start);
        Pos {
            line: p.row as u32 + 1,
            col: self.text[line_start..start].chars().count() as u32 + 1,
            byte: start,
        }
    }
}

/// What every language's walk holds (each walk derefs to it): the text, the import aliases
/// callees are resolved through, the [`Unit`] being built, and the functions open around the
/// node being visited (innermost last), whose returns a `return` adds to.
pub(crate) struct Frame<'t> {
    pub(crate) src: Src<'t>,
    pub(crate) aliases: HashMap<String, String>,
    pub(crate) unit: Unit,
    pub(crate) stack: Vec<usize>,
}

impl<'t> Frame<'t> {
    pub(crate) fn new(src: &Src<'t>) -> Frame<'t> {
        Frame {
            src: *src,
            aliases: HashMap::new(),
            unit: Unit::default(),
            stack: Vec::new(),
        }
    }

    /// A node's text.
    pub(crate) fn text(&self, n: Node) -> &'t str {
        self.src.of(n)
    }

    /// A dotted path with its first segment resolved through the imports (a bare name too).
    pub(crate) fn resolve(&self, path: &str) -> String {
        let (head, rest) = match path.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (path, None),
        };
        match (self.aliases.get(head), rest) {
            (Some(full), Some(r)) => format!("{full}.{r}"),
            (Some(full), None) => full.clone(),
            (None, _) => path.to_string(),
        }
    }

    /// Function node `n` as the model holds it: its name's position (or its start), its body's
    /// byte range (the whole node without a body), no returns yet.
    pub(crate) fn function(
        &self,
        n: Node,
        name: Option<String>,
        params: Vec<String>,
        tool: Option<String>,
    ) -> Function {
        let body = n.child_by_field_name("body").unwrap_or(n);
        Function {
            at: self.src.pos(n.child_by_field_name("name").unwrap_or(n)),
            name,
            params,
            range: (body.start_byte(), body.end_byte()),
            tool,
            returns: vec![],
        }
    }

    /// Records function `f` and opens it: the nodes below are inside it until [`descend`]
    /// leaves the node that opened it.
    pub(crate) fn open(&mut self, f: Function) -> bool {
        self.unit.functions.push(f);
        self.stack.push(self.unit.functions.len() - 1);
        true
    }
}

/// A language's walk: what it records at one node, before the nodes below it.
pub(crate) trait Walker<'t>: DerefMut<Target = Frame<'t>> {
    /// Records what `n` holds; whether it opened a function ([`Frame::open`]).
    fn at(&mut self, n: Node) -> bool;
}

/// Visits `n` and every node below it, parents first, each inside the functions around it.
pub(crate) fn descend<'t>(w: &mut impl Walker<'t>, n: Node) {
    let opened = w.at(n);
    for c in children(n) {
        descend(w, c);
    }
    if opened {
        w.stack.pop();
    }
}

/// An assignment's two sides: `name` and `value` where it declares, `left` and `right` where
/// it assigns.
pub(crate) fn sides(n: Node, declares: bool) -> (Option<Node>, Option<Node>) {
    let (l, r) = if declares {
        ("name", "value")
    } else {
        ("left", "right")
    };
    (n.child_by_field_name(l), n.child_by_field_name(r))
}

/// A node's named children.
pub(crate) fn children(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    n.named_children(&mut c).collect()
}

/// A node's children, named or not.
pub(crate) fn all_children(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    n.children(&mut c).collect()
}

/// Visits every node below `n` (`n` included), parents first.
pub(crate) fn each_node<'a>(n: Node<'a>, f: &mut impl FnMut(Node<'a>)) {
    f(n);
    for c in children(n) {
        each_node(c, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grammar_loads_and_columns_count_characters() {
        for (lang, text) in [
            (Language::Python, "x = 'é'; f(x)\n"),
            (Language::JavaScript, "const x = 'é'; f(x);\n"),
            (Language::TypeScript, "const x: string = 'é'; f(x);\n"),
            (Language::Tsx, "const x = <a/>; f(x);\n"),
            (Language::Go, "package p\nfunc g() { x := \"é\"; f(x) }\n"),
        ] {
            let u = walk(lang, text).unwrap();
            let call = u.calls.iter().find(|c| c.callee == "f").unwrap();
            let line = text.lines().nth(call.at.line as usize - 1).unwrap();
            let chars = line[..line.find("f(x)").unwrap()].chars().count() as u32;
            assert_eq!(call.at.col, chars + 1, "{lang:?}: {:?}", call.at);
        }
    }
}
