//! One model step's allowed calls in one crossing (issue 57): `Session.run_allowed` decides and
//! appends each call, runs the tool through the Python runner and completes its entry, without a
//! JSON text between the guard and the check. What it converts here is exactly what the text
//! crossing gave: plain values directly, anything else through the encoder the guard passes
//! (Python's `json` module), read back as the text path reads it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

/// Why a value did not become JSON: `encode` raised (the exception), or serde_json did not read
/// its text (what serde said).
pub(crate) enum NotJson {
    Raised(PyErr),
    Unread(String),
}

/// `obj` as the JSON `encode` (a `json.JSONEncoder`'s `encode`) writes and serde_json reads back.
/// Exact `dict` (string keys), `list`, `tuple`, `str`, `int`, `bool`, `None` and finite `float`
/// (read from its `repr`, the text `json` writes, so the number is the one the text gave) are
/// converted here; for anything else — a subclass, another key type, an integer outside 64 bits,
/// a float that is not finite — the whole of `obj` crosses as `encode`'s text, which raises or
/// is not read where the text crossing raised or was not read.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, encode: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    if let Some(v) = plain(obj) {
        return Ok(v);
    }
    let text: String = encode
        .call1((obj,))
        .and_then(|t| t.extract())
        .map_err(NotJson::Raised)?;
    serde_json::from_str(&text).map_err(|e| NotJson::Unread(e.to_string()))
}

/// [`to_json`] for a call's parts: what the text crossing raised, raised here.
fn call_json(obj: &Bound<'_, PyAny>, encode: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json(obj, encode).map_err(|e| match e {
        NotJson::Raised(e) => e,
        NotJson::Unread(why) => PyValueError::new_err(format!("not a call: {why}")),
    })
}

fn plain(v: &Bound<'_, PyAny>) -> Option<Value> {
    if v.is_none() {
        return Some(Value::Null);
    }
    if let Ok(s) = v.cast_exact::<PyString>() {
        return s.to_str().ok().map(|s| Value::String(s.to_owned()));
    }
    if let Ok(b) = v.cast_exact::<PyBool>() {
        return Some(Value::Bool(b.is_true()));
    }
    if let Ok(i) = v.cast_exact::<PyInt>() {
        return i
            .extract::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| i.extract::<u64>().ok().map(Value::from));
    }
    if let Ok(f) = v.cast_exact::<PyFloat>() {
        if !f.value().is_finite() {
            return None;
        }
        let text = f.repr().ok()?;
        return serde_json::from_str(text.to_str().ok()?).ok();
    }
    if let Ok(d) = v.cast_exact::<PyDict>() {
        let mut m = Map::with_capacity(d.len());
        for (k, item) in d.iter() {
            let k = k.cast_exact::<PyString>().ok()?;
            m.insert(k.to_str().ok()?.to_owned(), plain(&item)?);
        }
        return Some(Value::Object(m));
    }
    if let Ok(l) = v.cast_exact::<PyList>() {
        return l
            .iter()
            .map(|x| plain(&x))
            .collect::<Option<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = v.cast_exact::<PyTuple>() {
        return t
            .iter()
            .map(|x| plain(&x))
            .collect::<Option<_>>()
            .map(Value::Array);
    }
    None
}

/// A JSON value as the Python value `json.loads` gives.
pub(crate) fn to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any().unbind(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any().unbind(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN))
                .into_any()
                .unbind(),
        },
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(xs) => {
            let items = xs
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}

/// The call the guard's `Guard._call(c)` builds (`Call.to_json` with the guard's turn and, when
/// the call names none, its agent), as a JSON value; `None` when `c` is not one the one-crossing
/// step takes (an undo, which waits for the run it undoes; arguments, origins or context that are
/// not plain dicts): the guard decides that call on its own path.
pub(crate) fn call_value(
    c: &Bound<'_, PyAny>,
    agent: Option<&str>,
    turn: &Bound<'_, PyAny>,
    encode: &Bound<'_, PyAny>,
) -> PyResult<Option<Value>> {
    if !c.getattr("undoes")?.is_none() {
        return Ok(None);
    }
    let args = c.getattr("args")?;
    let Ok(args) = args.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let origins = c.getattr("origins")?;
    let origins = if origins
        .cast_exact::<PyString>()
        .is_ok_and(|s| s.to_str().is_ok_and(|s| s == "auto"))
    {
        Value::String("auto".into())
    } else if let Ok(given) = origins.cast_exact::<PyDict>() {
        let mut m = Map::with_capacity(args.len());
        for k in args.keys() {
            let origin = match given.get_item(&k)? {
                Some(o) => o,
                None => PyString::new(c.py(), "model").into_any(),
            };
            let Ok(k) = k.cast_exact::<PyString>() else {
                return Ok(None);
            };
            m.insert(k.to_str()?.to_owned(), call_json(&origin, encode)?);
        }
        Value::Object(m)
    } else {
        return Ok(None);
    };
    let mut out = Map::new();
    out.insert("tool".into(), call_json(&c.getattr("tool")?, encode)?);
    out.insert("args".into(), call_json(args.as_any(), encode)?);
    out.insert("origins".into(), origins);
    match c.getattr("agent")? {
        a if !a.is_none() => {
            out.insert("agent".into(), call_json(&a, encode)?);
        }
        _ => {
            if let Some(a) = agent {
                out.insert("agent".into(), Value::String(a.to_owned()));
            }
        }
    }
    let context = c.getattr("context")?;
    if context.is_truthy()? {
        let Ok(context) = context.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        out.insert("context".into(), call_json(context.as_any(), encode)?);
    }
    let marks = c.getattr("marks")?;
    if marks.is_truthy()? {
        let list = PyList::new(c.py(), marks.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
        out.insert("marks".into(), call_json(list.as_any(), encode)?);
    }
    if !turn.is_none() {
        out.insert("turn".into(), call_json(turn, encode)?);
    }
    Ok(Some(Value::Object(out)))
}

/// What the guard's `_error_text` writes for a tool that raised: `Type: message`, or the type's
/// name when the message is empty.
pub(crate) fn error_text(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    match e.value(py).str().map(|s| s.to_string()) {
        Ok(s) if !s.is_empty() => format!("{name}: {s}"),
        _ => name,
    }
}
