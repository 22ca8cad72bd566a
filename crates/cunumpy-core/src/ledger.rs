//! The transfer and launch ledger: one process-wide, thread-safe record of every host/device
//! copy, conversion, fallback, synchronisation and kernel launch that cunumpy makes.
//!
//! Events go to the counters that are open when they happen. A counter opened with
//! [`Scope::Thread`] sees only the events of the thread that opened it, so concurrent
//! threads each measure their own work; [`Scope::AllThreads`] sees everything. When no
//! counter is open, recording costs one relaxed atomic load.

use crate::sync::lock;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What an event is. The order is the report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    ToHost,
    ToDevice,
    KernelConversion,
    Fallback,
    DeviceCopy,
    Sync,
    Launch,
    /// One replay of a captured CUDA graph (`cunumpy.cuda.graph`): one launch that ran
    /// [`Event::kernels`] kernels.
    GraphLaunch,
}

impl EventKind {
    pub const ALL: [EventKind; 8] = [
        EventKind::ToHost,
        EventKind::ToDevice,
        EventKind::KernelConversion,
        EventKind::Fallback,
        EventKind::DeviceCopy,
        EventKind::Sync,
        EventKind::Launch,
        EventKind::GraphLaunch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKind::ToHost => "to_host",
            EventKind::ToDevice => "to_device",
            EventKind::KernelConversion => "kernel_conversion",
            EventKind::Fallback => "fallback",
            EventKind::DeviceCopy => "device_copy",
            EventKind::Sync => "sync",
            EventKind::Launch => "launch",
            EventKind::GraphLaunch => "graph_launch",
        }
    }

    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the event counts towards a counter's `total` (copies and markers do;
    /// synchronisations, launches and graph launches are reported but not counted as
    /// transfers).
    pub fn is_transfer(self) -> bool {
        !matches!(
            self,
            EventKind::Sync | EventKind::Launch | EventKind::GraphLaunch
        )
    }

    /// Whether the event is a launch (of a kernel, or of a graph of kernels).
    pub fn is_launch(self) -> bool {
        matches!(self, EventKind::Launch | EventKind::GraphLaunch)
    }
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub description: String,
    /// `file:line` of the user code that caused it.
    pub site: String,
    pub nbytes: Option<u64>,
    pub blocking: bool,
    pub implicit: bool,
    /// When it was recorded: nanoseconds on [`clock_ns`]'s clock (set by [`Ledger::record`]).
    pub time_ns: u64,
    /// The recording thread's [`current_thread_key`] (set by [`Ledger::record`]).
    pub thread: u64,
    /// The kernels a graph launch ran (0 for every other kind).
    pub kernels: u64,
}

impl Event {
    /// The description plus ` [async]` and/or ` [implicit]`.
    pub fn label(&self) -> String {
        let mut label = self.description.clone();
        if !self.blocking {
            label.push_str(" [async]");
        }
        if self.implicit {
            label.push_str(" [implicit]");
        }
        label
    }
}

/// Which events a counter receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only events recorded on the thread with this key (see [`current_thread_key`]).
    Thread(u64),
    /// Events of every thread.
    AllThreads,
}

/// Nanoseconds since the first call in this process, on a monotonic clock: the time base of
/// recorded events, shared with the Python profilers so their timelines line up.
pub fn clock_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let elapsed = EPOCH.get_or_init(Instant::now).elapsed();
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}

/// A small integer naming the calling OS thread for the lifetime of the process.
pub fn current_thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static KEY: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    KEY.with(|k| *k)
}

/// The events one counter has collected, shared between the ledger and the counter's owner.
pub type EventLog = Arc<Mutex<Vec<Event>>>;

struct OpenCounter {
    id: u64,
    scope: Scope,
    log: EventLog,
}

/// The ledger. Use [`Ledger::global`] for the process-wide one.
#[derive(Default)]
pub struct Ledger {
    open_count: AtomicUsize,
    next_id: AtomicU64,
    open: Mutex<Vec<OpenCounter>>,
}

impl Ledger {
    pub fn global() -> &'static Ledger {
        static GLOBAL: OnceLock<Ledger> = OnceLock::new();
        GLOBAL.get_or_init(Ledger::default)
    }

    /// True when at least one counter is open anywhere (a cheap check before building an event).
    #[inline]
    pub fn is_recording(&self) -> bool {
        self.open_count.load(Ordering::Relaxed) != 0
    }

    /// Opens a counter; events go into `log` until [`Ledger::close`] is called with the id.
    pub fn open(&self, scope: Scope, log: EventLog) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut open = lock(&self.open);
        open.push(OpenCounter { id, scope, log });
        self.open_count.store(open.len(), Ordering::Relaxed);
        id
    }

    /// Closes a counter. Closing an unknown id does nothing.
    pub fn close(&self, id: u64) {
        let mut open = lock(&self.open);
        open.retain(|c| c.id != id);
        self.open_count.store(open.len(), Ordering::Relaxed);
    }

    /// Whether an event recorded now, on this thread, would reach some counter.
    pub fn is_recording_here(&self) -> bool {
        if !self.is_recording() {
            return false;
        }
        let here = current_thread_key();
        lock(&self.open)
            .iter()
            .any(|c| c.scope == Scope::AllThreads || c.scope == Scope::Thread(here))
    }

    /// Records an event for every open counter that sees the calling thread.
    /// Stamps it with the time and thread first.
    pub fn record(&self, mut event: Event) {
        if !self.is_recording() {
            return;
        }
        let here = current_thread_key();
        event.time_ns = clock_ns();
        event.thread = here;
        let open = lock(&self.open);
        for counter in open.iter() {
            if counter.scope == Scope::AllThreads || counter.scope == Scope::Thread(here) {
                lock(&counter.log).push(event.clone());
            }
        }
    }
}

/// Counts and bytes of one kind in a list of events.
pub fn count(events: &[Event], kind: EventKind) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

/// Total bytes of one kind (events of unknown size count as zero).
pub fn bytes(events: &[Event], kind: EventKind) -> u64 {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .filter_map(|e| e.nbytes)
        .sum()
}

/// Kernels run by graph launches (the sum of their [`Event::kernels`]).
pub fn graph_kernels(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| e.kind == EventKind::GraphLaunch)
        .map(|e| e.kernels)
        .sum()
}

/// Number of transfer events (everything except `sync`, `launch` and `graph_launch`).
pub fn total(events: &[Event]) -> usize {
    events.iter().filter(|e| e.kind.is_transfer()).count()
}

/// The human-readable report: a header with the counts per kind, then for each kind that
/// occurred the events grouped by call site and label, in order of first appearance.
pub fn report(events: &[Event]) -> String {
    let mut out = format!("{} transfer(s) through cunumpy (", total(events));
    let header_kinds: Vec<String> = EventKind::ALL
        .iter()
        .filter(|k| !k.is_launch())
        .map(|k| format!("{} {}", count(events, *k), k.name()))
        .collect();
    out.push_str(&header_kinds.join(", "));
    out.push(')');
    let launches = count(events, EventKind::Launch);
    if launches > 0 {
        let _ = write!(out, ", {launches} kernel launch(es)");
    }
    let graphs = count(events, EventKind::GraphLaunch);
    if graphs > 0 {
        let _ = write!(
            out,
            ", {graphs} graph launch(es) running {} kernel(s)",
            graph_kernels(events)
        );
    }
    for kind in EventKind::ALL {
        let of_kind: Vec<&Event> = events.iter().filter(|e| e.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let _ = write!(out, "\n  {} ({}):", kind.name(), of_kind.len());
        let mut groups: Vec<(String, String, usize, u64)> = Vec::new();
        for event in of_kind {
            let label = event.label();
            let nbytes = event.nbytes.unwrap_or(0);
            match groups
                .iter_mut()
                .find(|(site, l, _, _)| *site == event.site && *l == label)
            {
                Some(group) => {
                    group.2 += 1;
                    group.3 += nbytes;
                }
                None => groups.push((event.site.clone(), label, 1, nbytes)),
            }
        }
        for (site, label, n, _) in groups {
            let _ = write!(out, "\n    {site}: {label}");
            if n > 1 {
                let _ = write!(out, " (x{n})");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, site: &str, nbytes: u64) -> Event {
        Event {
            kind,
            description: format!("{} of {nbytes} bytes", kind.name()),
            site: site.into(),
            nbytes: Some(nbytes),
            blocking: true,
            implicit: false,
            time_ns: 0,
            thread: 0,
            kernels: 0,
        }
    }

    #[test]
    fn graph_launches_count_their_kernels_and_are_no_transfers() {
        let mut a = event(EventKind::GraphLaunch, "a.py:1", 0);
        a.kernels = 20;
        let mut b = a.clone();
        b.kernels = 3;
        let events = vec![a, b, event(EventKind::Launch, "a.py:2", 0)];
        assert_eq!(graph_kernels(&events), 23);
        assert_eq!(total(&events), 0);
        assert_eq!(count(&events, EventKind::GraphLaunch), 2);
        let text = report(&events);
        assert!(
            text.contains("2 graph launch(es) running 23 kernel(s)"),
            "{text}"
        );
        assert!(text.contains("1 kernel launch(es)"), "{text}");
        assert!(!text.contains("0 graph_launch"), "{text}");
    }

    #[test]
    fn recorded_events_carry_the_time_and_thread() {
        let ledger = Ledger::default();
        let log = EventLog::default();
        let id = ledger.open(Scope::AllThreads, log.clone());
        let before = clock_ns();
        ledger.record(event(EventKind::ToHost, "a.py:1", 8));
        ledger.record(event(EventKind::ToDevice, "a.py:2", 8));
        let after = clock_ns();
        ledger.close(id);
        let events = lock(&log).clone();
        assert_eq!(events.len(), 2);
        assert!(before <= events[0].time_ns && events[0].time_ns <= events[1].time_ns);
        assert!(events[1].time_ns <= after);
        assert!(events.iter().all(|e| e.thread == current_thread_key()));
    }

    #[test]
    fn nothing_is_recorded_without_an_open_counter() {
        let ledger = Ledger::default();
        assert!(!ledger.is_recording());
        ledger.record(event(EventKind::ToHost, "a.py:1", 8));
        let log = EventLog::default();
        let id = ledger.open(Scope::AllThreads, log.clone());
        ledger.close(id);
        assert!(lock(&log).is_empty());
    }

    #[test]
    fn each_thread_counter_sees_only_its_own_thread() {
        let ledger = Arc::new(Ledger::default());
        let handles: Vec<_> = (0..8u64)
            .map(|i| {
                let ledger = ledger.clone();
                std::thread::spawn(move || {
                    let log = EventLog::default();
                    let id = ledger.open(Scope::Thread(current_thread_key()), log.clone());
                    for _ in 0..=i {
                        ledger.record(event(EventKind::ToDevice, "t.py:1", 10 * (i + 1)));
                    }
                    ledger.close(id);
                    let events = lock(&log).clone();
                    (i, events)
                })
            })
            .collect();
        for handle in handles {
            let (i, events) = handle.join().expect("thread");
            assert_eq!(events.len() as u64, i + 1);
            assert!(events.iter().all(|e| e.nbytes == Some(10 * (i + 1))));
        }
    }

    #[test]
    fn all_threads_scope_sees_other_threads() {
        let ledger = Arc::new(Ledger::default());
        let log = EventLog::default();
        let id = ledger.open(Scope::AllThreads, log.clone());
        let other = ledger.clone();
        std::thread::spawn(move || other.record(event(EventKind::Sync, "x.py:2", 0)))
            .join()
            .expect("thread");
        ledger.close(id);
        assert_eq!(lock(&log).len(), 1);
    }

    #[test]
    fn report_groups_by_site_and_label() {
        let events = vec![
            event(EventKind::ToHost, "a.py:3", 8),
            event(EventKind::ToHost, "a.py:3", 8),
            event(EventKind::ToDevice, "a.py:4", 16),
            event(EventKind::Sync, "a.py:5", 0),
        ];
        let text = report(&events);
        let expected = "3 transfer(s) through cunumpy (2 to_host, 1 to_device, 0 kernel_conversion, \
                        0 fallback, 0 device_copy, 1 sync)\n  to_host (2):\n    a.py:3: to_host of 8 bytes (x2)\
                        \n  to_device (1):\n    a.py:4: to_device of 16 bytes\n  sync (1):\n    a.py:5: sync of 0 bytes";
        assert_eq!(text, expected);
        assert_eq!(bytes(&events, EventKind::ToHost), 16);
    }

    #[test]
    fn labels_mark_async_and_implicit() {
        let mut e = event(EventKind::ToHost, "a.py:1", 1);
        e.blocking = false;
        e.implicit = true;
        assert_eq!(e.label(), "to_host of 1 bytes [async] [implicit]");
    }
}
