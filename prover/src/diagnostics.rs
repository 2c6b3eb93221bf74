//! Rendering input errors for people: `file:line:col: message`, then the source line with a
//! caret under the column where one is known.

use ir::InputError;

/// Prints an operational error to stderr; input errors get their file, line and a caret.
pub fn print_error(e: &anyhow::Error) {
    eprint!("{}", render_error(e));
}

/// An operational error as [`print_error`] prints it (input errors with their line and caret).
pub fn render_error(e: &anyhow::Error) -> String {
    match e.downcast_ref::<InputError>() {
        Some(ie) => render_input_error(ie),
        None => format!("error: {e:#}\n"),
    }
}

/// Renders an input error with the offending source line and a caret, when the file can be read.
pub fn render_input_error(e: &InputError) -> String {
    let mut out = format!("error: {e}\n");
    if e.line > 0 {
        if let Some(src) = std::fs::read_to_string(&e.file).ok().and_then(|t| {
            let t = t.strip_prefix('\u{feff}').unwrap_or(&t);
            t.lines().nth(e.line as usize - 1).map(str::to_string)
        }) {
            let gutter = e.line.to_string();
            out.push_str(&format!(
                "{} |\n{gutter} | {src}\n",
                " ".repeat(gutter.len())
            ));
            if let Some(c) = e.col {
                out.push_str(&format!(
                    "{} | {}^\n",
                    " ".repeat(gutter.len()),
                    " ".repeat(c.saturating_sub(1) as usize)
                ));
            }
        }
    }
    out
}
