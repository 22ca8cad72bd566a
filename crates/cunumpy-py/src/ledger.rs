//! Python face of the transfer/launch ledger (`cunumpy.profiling` builds on it).

use cunumpy_core::ledger::{self, current_thread_key, Event, EventKind, EventLog, Ledger, Scope};
use cunumpy_core::sync::lock;
use pyo3::prelude::*;

fn kind_from(name: &str) -> PyResult<EventKind> {
    EventKind::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        crate::errors::raise_here(
            "InvalidArgumentError",
            format!(
                "unknown transfer event kind {name:?}; expected one of {}",
                known.join(", ")
            ),
        )
    })
}

/// The user's `file:line` that made the current call (`cunumpy._where.call_site`), for a
/// ledger entry.
pub(crate) fn call_site(py: Python<'_>) -> String {
    py.import("cunumpy._where")
        .and_then(|m| m.getattr("call_site"))
        .and_then(|f| f.call0())
        .and_then(|s| s.extract::<String>())
        .unwrap_or_else(|_| "<unknown>:0".into())
}

/// One event as a plain tuple: (kind, description, where, nbytes, blocking, implicit, time_ns,
/// thread).
type EventTuple = (
    &'static str,
    String,
    String,
    Option<u64>,
    bool,
    bool,
    u64,
    u64,
);

/// A counter's collected events; opened and closed by `cunumpy.profiling.count_transfers`.
#[pyclass(module = "cunumpy._core", name = "EventCounter")]
pub struct EventCounter {
    log: EventLog,
    open_id: Option<u64>,
    all_threads: bool,
}

#[pymethods]
impl EventCounter {
    #[new]
    #[pyo3(signature = (all_threads=false))]
    fn new(all_threads: bool) -> Self {
        EventCounter {
            log: EventLog::default(),
            open_id: None,
            all_threads,
        }
    }

    /// Starts receiving events (of the calling thread, unless `all_threads`). Idempotent.
    fn open(&mut self) {
        if self.open_id.is_none() {
            let scope = if self.all_threads {
                Scope::AllThreads
            } else {
                Scope::Thread(current_thread_key())
            };
            self.open_id = Some(Ledger::global().open(scope, self.log.clone()));
        }
    }

    /// Stops receiving events.
    fn close(&mut self) {
        if let Some(id) = self.open_id.take() {
            Ledger::global().close(id);
        }
    }

    #[getter]
    fn is_open(&self) -> bool {
        self.open_id.is_some()
    }

    fn events(&self) -> Vec<EventTuple> {
        lock(&self.log)
            .iter()
            .map(|e| {
                (
                    e.kind.name(),
                    e.description.clone(),
                    e.site.clone(),
                    e.nbytes,
                    e.blocking,
                    e.implicit,
                    e.time_ns,
                    e.thread,
                )
            })
            .collect()
    }

    fn count(&self, kind: &str) -> PyResult<usize> {
        Ok(ledger::count(&lock(&self.log), kind_from(kind)?))
    }

    fn nbytes(&self, kind: &str) -> PyResult<u64> {
        Ok(ledger::bytes(&lock(&self.log), kind_from(kind)?))
    }

    /// Kernels run by the graph launches among the events.
    fn graph_kernels(&self) -> u64 {
        ledger::graph_kernels(&lock(&self.log))
    }

    fn total(&self) -> usize {
        ledger::total(&lock(&self.log))
    }

    fn report(&self) -> String {
        ledger::report(&lock(&self.log))
    }

    fn clear(&self) {
        lock(&self.log).clear();
    }
}

impl Drop for EventCounter {
    fn drop(&mut self) {
        self.close();
    }
}

/// True when some open counter would receive an event recorded now on this thread.
#[pyfunction]
fn is_recording() -> bool {
    Ledger::global().is_recording_here()
}

/// Records one event in the ledger.
#[pyfunction]
#[pyo3(signature = (kind, description, site, nbytes=None, blocking=true, implicit=false))]
fn record_event(
    kind: &str,
    description: String,
    site: String,
    nbytes: Option<u64>,
    blocking: bool,
    implicit: bool,
) -> PyResult<()> {
    Ledger::global().record(Event {
        kind: kind_from(kind)?,
        description,
        site,
        nbytes,
        blocking,
        implicit,
        time_ns: 0,
        thread: 0,
        kernels: 0,
    });
    Ok(())
}

/// Nanoseconds on the ledger's clock (the time base of recorded events).
#[pyfunction]
fn clock_ns() -> u64 {
    ledger::clock_ns()
}

/// The calling thread's ledger key (the `thread` of the events it records).
#[pyfunction]
fn thread_key() -> u64 {
    current_thread_key()
}

/// The event kinds in report order.
#[pyfunction]
fn event_kinds() -> Vec<&'static str> {
    EventKind::ALL.iter().map(|k| k.name()).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventCounter>()?;
    m.add_function(wrap_pyfunction!(is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(record_event, m)?)?;
    m.add_function(wrap_pyfunction!(event_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(clock_ns, m)?)?;
    m.add_function(wrap_pyfunction!(thread_key, m)?)?;
    Ok(())
}
