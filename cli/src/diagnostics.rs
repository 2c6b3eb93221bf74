//! Rendering input errors for people: `file:line:col: message`, then the source line with a
//! caret under the column where one is known, and a second place the message names (where an
//! unclosed `[` opened) beside it.

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

/// Renders an input error with the offending source line and a caret, when the file can be
/// read. The line is read from the path the file was opened with (`e.path`); only an error
/// whose loader did not record one is read by the name it shows, which is then the path as
/// given.
pub fn render_input_error(e: &InputError) -> String {
    let mut out = format!("error: {e}\n");
    if e.line == 0 {
        return out;
    }
    let path = e
        .path
        .as_deref()
        .unwrap_or_else(|| std::path::Path::new(&e.file));
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let lines: Vec<&str> = text.lines().collect();
    // Each place: its line, its column and what it is (the error's own place says nothing).
    let mut places = vec![(e.line, e.col, "")];
    if let Some(r) = &e.related {
        places.push((r.line, r.col, r.label.as_str()));
    }
    places.sort_by_key(|p| p.0);
    places.retain(|p| p.0 > 0 && (p.0 as usize) <= lines.len());
    let width = places
        .iter()
        .map(|p| p.0.to_string().len())
        .max()
        .unwrap_or(1);
    let pad = " ".repeat(width);
    if places.is_empty() {
        return out;
    }
    out.push_str(&format!("{pad} |\n"));
    for (line, col, label) in places {
        out.push_str(&format!("{line:>width$} | {}\n", lines[line as usize - 1]));
        if let Some(c) = col {
            let mark = if label.is_empty() {
                "^".to_string()
            } else {
                format!("- {label}")
            };
            out.push_str(&format!(
                "{pad} | {}{mark}\n",
                " ".repeat(c.saturating_sub(1) as usize)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_read_from_the_path_opened_and_a_related_place_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.yaml");
        std::fs::write(&path, "a:\n  b: [c\n  d: e\n").unwrap();
        // Shown as `agent.yaml`, which the current folder does not hold: read from the path.
        let e = InputError::at("agent.yaml", 3, "YAML syntax error: x")
            .with_col(4)
            .with_related(2, Some(6), "the `[` opened here")
            .opened_as("agent.yaml", &path);
        assert_eq!(
            render_input_error(&e),
            "error: agent.yaml:3:4: YAML syntax error: x\n  |\n2 |   b: [c\n  |      - the `[` opened here\n3 |   d: e\n  |    ^\n"
        );
    }
}
