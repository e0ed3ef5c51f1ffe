//! The log backend (`--audit-log-path`, `--audit-log-mode`): where event lines go and
//! what a failed write does to the request.
//!
//! - `blocking` (upstream's default): the request waits for its line's `write(2)` (no
//!   fsync, as upstream); a failure is logged and counted and the request goes on.
//! - `blocking-strict`: as blocking, but a RequestReceived event that cannot be written
//!   fails the request (500), as upstream.
//! - `batch`: lines are queued (up to [`BATCH_BUFFER`]) for one writer thread, which
//!   writes whatever is queued through a buffer and flushes when the queue is empty;
//!   a full queue drops the event, logged and counted.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::rotation::{RotatingFile, Rotation};

/// Events the batch queue holds before it drops (upstream's default buffer size).
pub const BATCH_BUFFER: usize = 10_000;

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
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(line)?;
                out.flush()
            }
            Sink::File(f) => f.write_line(line),
        }
    }
}

enum Writer {
    Direct(Mutex<Sink>),
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
            Mode::Blocking | Mode::BlockingStrict => Writer::Direct(Mutex::new(sink)),
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

    /// Writes one line (blocking modes) or queues it (batch). A failure has been logged
    /// and counted when this returns it.
    pub fn write(&self, line: Vec<u8>) -> Result<(), WriteError> {
        let result = match &self.writer {
            Writer::Direct(sink) => sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_line(&line)
                .map_err(WriteError::from),
            Writer::Queue(tx) => tx.try_send(line).map_err(|e| match e {
                TrySendError::Full(_) => WriteError::QueueFull,
                TrySendError::Disconnected(_) => WriteError::WriterGone,
            }),
        };
        if let Err(e) = &result {
            self.count_lost(e);
        }
        result
    }

    /// Logs and counts an event that was not written.
    pub fn count_lost(&self, e: &dyn std::fmt::Display) {
        let lost = self.lost.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(error = %e, lost_so_far = lost, "audit event not written");
    }

    /// Events lost so far.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl super::Backend for LogBackend {
    async fn process(&self, line: bytes::Bytes) -> Result<(), WriteError> {
        self.write(Vec::from(line))
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
        if let Err(e) = write_batch(&mut sink, &batch) {
            lost += 1;
            tracing::error!(error = %e, failed_batches_so_far = lost, "audit events not written");
        }
    }
}

/// A batch is whole lines; the rotating file splits it where rotation falls.
fn write_batch(sink: &mut Sink, batch: &[u8]) -> io::Result<()> {
    match sink {
        Sink::Stdout => sink.write_line(batch),
        Sink::File(f) => f.write_lines(batch),
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
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 0,
        };
        let log =
            LogBackend::open(Destination::File(path, rotation), Mode::BlockingStrict).unwrap();
        assert!(log.strict());
        assert!(log.write(b"{}\n".to_vec()).is_err());
        assert_eq!(log.lost(), 1);
    }

    #[test]
    fn batch_mode_writes_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 0,
        };
        let log = LogBackend::open(Destination::File(path.clone(), rotation), Mode::Batch).unwrap();
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
