//! The log backend (`--audit-log-path`, `--audit-log-mode`): where event lines go and
//! what a failed write does to the request.
//!
//! - `blocking` (upstream's default): the request waits until its line has been
//!   written (`write(2)`, no fsync, as upstream); a failure is logged and counted and
//!   the request goes on. Lines that reach the log while a worker thread runs its other
//!   ready requests are written together, in one `write(2)` (group commit): each
//!   request still waits for its own line, but a busy server makes one system call per
//!   group instead of one per event.
//! - `blocking-strict`: as blocking, but a RequestReceived event that cannot be written
//!   fails the request (500), as upstream.
//! - `batch`: lines are queued (up to [`BATCH_BUFFER`]) for one writer thread, which
//!   writes whatever is queued through a buffer and flushes when the queue is empty;
//!   a full queue drops the event, logged and counted.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::rotation::{RotatingFile, Rotation};

/// Events the batch queue holds before it drops (upstream's default buffer size).
pub const BATCH_BUFFER: usize = 10_000;

/// The group buffer's capacity kept between groups; a larger one (a group of large
/// events) is given back.
const GROUP_CAPACITY_KEPT: usize = 256 * 1024;

/// `--audit-log-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Blocking,
    BlockingStrict,
    Batch,
}

impl Mode {
    /// The flag's spellings.
    pub const NAMES: &'static [&'static str] = &["blocking", "blocking-strict", "batch"];

    /// The mode a flag value names, if it is one.
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "blocking" => Mode::Blocking,
            "blocking-strict" => Mode::BlockingStrict,
            "batch" => Mode::Batch,
            _ => return None,
        })
    }
}

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `--audit-log-path=-`.
    Stdout,
    /// A file, rotated.
    File(PathBuf, Rotation),
}

/// Why an event was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("writing the audit log: {0}")]
    Io(#[from] io::Error),
    #[error("the audit batch queue is full ({BATCH_BUFFER} events)")]
    QueueFull,
    #[error("the audit writer has stopped")]
    WriterGone,
    #[error("sending to the audit webhook: {0}")]
    Webhook(String),
}

enum Sink {
    Stdout,
    File(RotatingFile),
}

impl Sink {
    /// Whether a line of `len` bytes can be written at all.
    fn check_fits(&self, len: usize) -> io::Result<()> {
        match self {
            Sink::Stdout => Ok(()),
            Sink::File(f) => f.check_fits(len),
        }
    }

    /// Writes whole lines, in as few writes as rotation allows.
    fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(lines)?;
                out.flush()
            }
            Sink::File(f) => f.write_lines(lines),
        }
    }
}

/// What the write of one group of lines did; set once, when it is written.
type Outcome = OnceLock<Result<(), Arc<io::Error>>>;

/// Blocking modes' writer: the lines waiting for their write, and the sink.
struct Direct {
    sink: Sink,
    /// Whole lines, in the order they came.
    group: Vec<u8>,
    /// Events in `group`.
    events: u64,
    /// What `group`'s write does, shared with the requests waiting for it.
    outcome: Arc<Outcome>,
}

impl Direct {
    /// Writes the group with one write (more only where rotation falls) and starts the
    /// next; the group's event count and its outcome.
    fn write_group(&mut self) -> (u64, Arc<Outcome>) {
        let result = self.sink.write_lines(&self.group).map_err(Arc::new);
        self.group.clear();
        if self.group.capacity() > GROUP_CAPACITY_KEPT {
            self.group.shrink_to(GROUP_CAPACITY_KEPT);
        }
        let outcome = std::mem::take(&mut self.outcome);
        let _ = outcome.set(result);
        (std::mem::take(&mut self.events), outcome)
    }
}

enum Writer {
    Direct(Mutex<Direct>),
    Queue(SyncSender<Vec<u8>>),
}

/// The log backend: writes event lines and counts the ones lost.
pub struct LogBackend {
    mode: Mode,
    writer: Writer,
    lost: AtomicU64,
}

impl LogBackend {
    /// A backend writing to `to` in `mode` (batch mode starts its writer thread).
    pub fn open(to: Destination, mode: Mode) -> io::Result<Arc<LogBackend>> {
        let sink = match to {
            Destination::Stdout => Sink::Stdout,
            Destination::File(path, rotation) => Sink::File(RotatingFile::new(path, rotation)?),
        };
        let writer = match mode {
            Mode::Blocking | Mode::BlockingStrict => Writer::Direct(Mutex::new(Direct {
                sink,
                group: Vec::new(),
                events: 0,
                outcome: Arc::default(),
            })),
            Mode::Batch => {
                let (tx, rx) = sync_channel::<Vec<u8>>(BATCH_BUFFER);
                crate::panics::thread("audit-log", move || batch_writer(sink, rx))?;
                Writer::Queue(tx)
            }
        };
        Ok(Arc::new(LogBackend {
            mode,
            writer,
            lost: AtomicU64::new(0),
        }))
    }

    /// Whether a RequestReceived event that cannot be written fails its request.
    pub fn strict(&self) -> bool {
        self.mode == Mode::BlockingStrict
    }

    /// Writes one line now (blocking modes) or queues it (batch). A failure has been
    /// logged and counted when this returns it.
    pub fn write(&self, line: Vec<u8>) -> Result<(), WriteError> {
        match &self.writer {
            Writer::Direct(direct) => self.join(direct, &line)?.wait(),
            Writer::Queue(tx) => tx.try_send(line).map_err(|e| {
                let e = match e {
                    TrySendError::Full(_) => WriteError::QueueFull,
                    TrySendError::Disconnected(_) => WriteError::WriterGone,
                };
                self.count_lost(1, &e);
                e
            }),
        }
    }

    /// Adds `line` to the group waiting for its write.
    fn join<'a>(
        &'a self,
        direct: &'a Mutex<Direct>,
        line: &[u8],
    ) -> Result<Waiting<'a>, WriteError> {
        let mut d = lock(direct);
        if let Err(e) = d.sink.check_fits(line.len()) {
            // Alone: one oversized event must not fail the others' write.
            let e = WriteError::from(e);
            self.count_lost(1, &e);
            return Err(e);
        }
        d.group.extend_from_slice(line);
        d.events += 1;
        Ok(Waiting {
            backend: self,
            direct,
            outcome: Some(d.outcome.clone()),
        })
    }

    /// Logs and counts `events` events that were not written.
    pub fn count_lost(&self, events: u64, e: &dyn std::fmt::Display) {
        let lost = self.lost.fetch_add(events, Ordering::Relaxed) + events;
        tracing::error!(error = %e, events, lost_so_far = lost, "audit event not written");
    }

    /// Events lost so far.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

fn lock(direct: &Mutex<Direct>) -> MutexGuard<'_, Direct> {
    direct.lock().unwrap_or_else(|e| e.into_inner())
}

/// A line in a group not yet known to be written. Dropped unwaited (its request went
/// away), it writes the group rather than leave the line behind.
struct Waiting<'a> {
    backend: &'a LogBackend,
    direct: &'a Mutex<Direct>,
    outcome: Option<Arc<Outcome>>,
}

impl Waiting<'_> {
    /// The outcome of the line's group, writing the group if nobody has yet.
    fn wait(mut self) -> Result<(), WriteError> {
        let outcome = self.outcome.take().expect("waited once");
        self.write_unless_written(&outcome);
        match outcome.get().expect("written above") {
            Ok(()) => Ok(()),
            Err(e) => Err(WriteError::Io(io::Error::new(e.kind(), e.to_string()))),
        }
    }

    fn write_unless_written(&self, outcome: &Outcome) {
        if outcome.get().is_some() {
            return;
        }
        let mut d = lock(self.direct);
        // Groups are replaced only when written, so an unwritten one is still d's.
        if outcome.get().is_none() {
            let (events, written) = d.write_group();
            drop(d);
            if let Some(Err(e)) = written.get() {
                self.backend.count_lost(events, e);
            }
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(outcome) = self.outcome.take() {
            self.write_unless_written(&outcome);
        }
    }
}

#[async_trait::async_trait]
impl super::Backend for LogBackend {
    async fn process(&self, line: bytes::Bytes) -> Result<(), WriteError> {
        let Writer::Direct(direct) = &self.writer else {
            return self.write(Vec::from(line));
        };
        let waiting = self.join(direct, &line)?;
        // Let the thread's other ready requests add their lines to the group first.
        tokio::task::yield_now().await;
        waiting.wait()
    }

    fn strict(&self) -> bool {
        LogBackend::strict(self)
    }
}

/// Batch mode's writer: whatever is queued goes through one buffer, flushed when the
/// queue runs dry, so a burst costs few writes.
fn batch_writer(mut sink: Sink, rx: std::sync::mpsc::Receiver<Vec<u8>>) {
    let mut lost = 0u64;
    while let Ok(first) = rx.recv() {
        let mut batch = first;
        while let Ok(more) = rx.try_recv() {
            batch.extend_from_slice(&more);
            if batch.len() > 1024 * 1024 {
                break;
            }
        }
        if let Err(e) = sink.write_lines(&batch) {
            lost += 1;
            tracing::error!(error = %e, failed_batches_so_far = lost, "audit events not written");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_an_error_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: every write fails.
        let path = dir.path().join("audit.log");
        std::fs::create_dir(&path).unwrap();
        let log = file_backend(&path, Mode::BlockingStrict);
        assert!(log.strict());
        assert!(log.write(b"{}\n".to_vec()).is_err());
        assert_eq!(log.lost(), 1);
    }

    fn file_backend(path: &std::path::Path, mode: Mode) -> Arc<LogBackend> {
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 0,
        };
        LogBackend::open(Destination::File(path.to_path_buf(), rotation), mode).unwrap()
    }

    fn direct(log: &LogBackend) -> &Mutex<Direct> {
        match &log.writer {
            Writer::Direct(d) => d,
            Writer::Queue(_) => unreachable!("a blocking backend"),
        }
    }

    #[test]
    fn lines_joined_before_a_write_share_it_and_each_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = file_backend(&path, Mode::Blocking);
        let d = direct(&log);
        let waiting: Vec<Waiting> = (0..3)
            .map(|i| log.join(d, format!("{i}\n").as_bytes()).unwrap())
            .collect();
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), "");
        let mut waiting = waiting.into_iter();
        let second = waiting.nth(1).unwrap();
        second.wait().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n1\n2\n");
        // The others find their group written and write nothing again.
        for w in waiting {
            w.wait().unwrap();
        }
        log.join(d, b"3\n").unwrap().wait().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n1\n2\n3\n");
    }

    #[test]
    fn a_line_whose_request_went_away_is_still_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = file_backend(&path, Mode::Blocking);
        drop(log.join(direct(&log), b"gone\n").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "gone\n");
    }

    #[test]
    fn a_failed_group_fails_every_line_in_it_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::create_dir(&path).unwrap();
        let log = file_backend(&path, Mode::BlockingStrict);
        let d = direct(&log);
        let waiting: Vec<Waiting> = (0..3).map(|_| log.join(d, b"{}\n").unwrap()).collect();
        for w in waiting {
            assert!(matches!(w.wait(), Err(WriteError::Io(_))));
        }
        assert_eq!(log.lost(), 3);
    }

    #[test]
    fn an_oversized_line_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = file_backend(&path, Mode::Blocking);
        let d = direct(&log);
        let before = log.join(d, b"before\n").unwrap();
        assert!(log.join(d, &vec![b'x'; 2 * 1024 * 1024]).is_err());
        before.wait().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "before\n");
        assert_eq!(log.lost(), 1);
    }

    #[test]
    fn batch_mode_writes_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = file_backend(&path, Mode::Batch);
        for i in 0..100 {
            log.write(format!("{i}\n").into_bytes()).unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.lines().count() == 100 {
                let want: Vec<String> = (0..100).map(|i| i.to_string()).collect();
                assert_eq!(text.lines().collect::<Vec<_>>(), want);
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{text}");
            std::thread::yield_now();
        }
    }
}
