//! The arguments of a previous call, kept to recognise a repeat of it by identity without
//! keeping arrays alive: arrays are held by weak reference (a dead array never matches, and its
//! memory is not retained), immutable scalars by strong reference (they cannot change and are
//! small; Python ints and floats take no weak references).

use pyo3::prelude::*;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};

pub(crate) enum Held {
    Strong(Py<PyAny>),
    Weak(Py<PyWeakrefReference>),
}

impl Held {
    /// Holds `obj` weakly when it takes weak references, else strongly.
    pub(crate) fn new(obj: &Bound<'_, PyAny>) -> Held {
        match PyWeakrefReference::new(obj) {
            Ok(w) => Held::Weak(w.unbind()),
            Err(_) => Held::Strong(obj.clone().unbind()),
        }
    }

    /// Whether `obj` is the very object held (alive).
    pub(crate) fn is(&self, obj: &Bound<'_, PyAny>) -> bool {
        match self {
            Held::Strong(o) => o.as_ptr() == obj.as_ptr(),
            Held::Weak(w) => w
                .bind(obj.py())
                .upgrade()
                .is_some_and(|o| o.as_ptr() == obj.as_ptr()),
        }
    }

    /// The object, while alive.
    pub(crate) fn get<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        match self {
            Held::Strong(o) => Some(o.bind(py).clone()),
            Held::Weak(w) => w.bind(py).upgrade(),
        }
    }
}
