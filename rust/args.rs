//! Reading plugin args from the Python side.
//!
//! Plugin args cross the boundary as plain dicts in upstream's JSON shape (the config
//! layer has already defaulted and validated them), e.g.
//! `{"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}]}}`.
//! These helpers read such dicts and name the offending field when a value has the wrong
//! type, so a bad config never panics the extension.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

pub fn err(path: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{path}: {msg}"))
}

/// `d[key]` when present and not None.
pub fn get<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v)),
        _ => Ok(None),
    }
}

pub fn as_dict<'py>(v: &Bound<'py, PyAny>, path: &str) -> PyResult<Bound<'py, PyDict>> {
    v.cast::<PyDict>()
        .cloned()
        .map_err(|_| err(path, "must be an object"))
}

pub fn as_list<'py>(v: &Bound<'py, PyAny>, path: &str) -> PyResult<Bound<'py, PyList>> {
    v.cast::<PyList>()
        .cloned()
        .map_err(|_| err(path, "must be a list"))
}

pub fn as_str(v: &Bound<'_, PyAny>, path: &str) -> PyResult<String> {
    v.extract::<String>()
        .map_err(|_| err(path, "must be a string"))
}

pub fn as_i64(v: &Bound<'_, PyAny>, path: &str) -> PyResult<i64> {
    v.extract::<i64>()
        .map_err(|_| err(path, "must be an integer"))
}

pub fn str_list(d: &Bound<'_, PyDict>, key: &str, path: &str) -> PyResult<Vec<String>> {
    let mut out = Vec::new();
    if let Some(v) = get(d, key)? {
        let list = as_list(&v, &format!("{path}.{key}"))?;
        for (i, item) in list.iter().enumerate() {
            out.push(as_str(&item, &format!("{path}.{key}[{i}]"))?);
        }
    }
    Ok(out)
}
