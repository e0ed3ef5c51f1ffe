//! The raw-engine baseline: durable redb write transactions (the server's redb version,
//! `Durability::Immediate`, i.e. fsync on commit) on the same disk, so the server's
//! create rate can be read as a share of what the engine itself sustains.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redb::{Database, TableDefinition};

use crate::metrics::{Outcome, Recorder, Row};

const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");

/// What the raw baseline writes.
#[derive(Clone, Debug)]
pub struct RawOptions {
    /// Directory for the database files (on the disk under test); a temporary
    /// directory is made inside it.
    pub dir: Option<PathBuf>,
    /// Transactions per concurrency level.
    pub count: u64,
    /// Writer threads; redb serialises write transactions, so more threads queue on
    /// `begin_write` rather than commit together.
    pub concurrency: Vec<usize>,
    /// Bytes per value (about what the server stores for a ~1 KiB ConfigMap).
    pub value_size: usize,
    /// Also measure transactions of this many keys each (a group-commit ceiling); 0 or 1
    /// to skip.
    pub batch: usize,
    /// Stop a level after this long even if `count` is not reached.
    pub max_time: Duration,
}

impl Default for RawOptions {
    fn default() -> Self {
        RawOptions {
            dir: None,
            count: 10_000,
            concurrency: vec![1, 8, 32],
            value_size: 1400,
            batch: 32,
            max_time: Duration::from_secs(120),
        }
    }
}

/// Runs every level once; one row per level (keys/s).
pub fn run(opts: &RawOptions) -> Result<Vec<Row>> {
    let parent = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("loadgen-raw-redb-")
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))?;
    let mut rows = Vec::new();
    for &c in &opts.concurrency {
        rows.push(level(dir.path(), opts, c, 1)?);
    }
    if opts.batch > 1 {
        rows.push(level(dir.path(), opts, 1, opts.batch)?);
    }
    Ok(rows)
}

/// One durable transaction writing keys `t*batch .. (t+1)*batch`.
fn write_txn(db: &Database, t: u64, batch: u64, value: &[u8]) -> Result<(), String> {
    let tx = db.begin_write().map_err(|e| e.to_string())?;
    {
        let mut table = tx.open_table(KV).map_err(|e| e.to_string())?;
        for k in 0..batch {
            let key = format!("/registry/configmaps/raw/cm-{:07}", t * batch + k);
            table
                .insert(key.as_str(), value)
                .map_err(|e| e.to_string())?;
        }
    }
    tx.commit().map_err(|e| e.to_string())
}

fn level(dir: &Path, opts: &RawOptions, threads: usize, batch: usize) -> Result<Row> {
    let path = dir.join(format!("raw-c{threads}-b{batch}.redb"));
    let _ = std::fs::remove_file(&path);
    let db =
        Arc::new(Database::create(&path).with_context(|| format!("creating {}", path.display()))?);
    {
        let tx = db.begin_write()?;
        tx.open_table(KV)?;
        tx.commit()?;
    }
    let value: Arc<Vec<u8>> = Arc::new(
        (0..opts.value_size)
            .map(|i| b'a' + (i % 26) as u8)
            .collect(),
    );
    let next = Arc::new(AtomicU64::new(0));
    let txns = opts.count.div_ceil(batch as u64);
    let started = Instant::now();
    let max_time = opts.max_time;
    let handles: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let (db, value, next) = (db.clone(), value.clone(), next.clone());
            std::thread::spawn(move || {
                let mut rec = Recorder::default();
                loop {
                    let t = next.fetch_add(1, Ordering::Relaxed);
                    if t >= txns || started.elapsed() >= max_time {
                        break;
                    }
                    let begin = Instant::now();
                    let result = write_txn(&db, t, batch as u64, &value);
                    match result {
                        Ok(()) => rec.record(begin.elapsed(), Outcome::Status(200)),
                        Err(e) => {
                            rec.record(begin.elapsed(), Outcome::Transport);
                            rec.note_error(e);
                        }
                    }
                }
                rec
            })
        })
        .collect();
    let mut total = Recorder::default();
    for h in handles {
        match h.join() {
            Ok(r) => total.merge(&r),
            Err(_) => total.fail(Outcome::Check, 1, "writer thread panicked"),
        }
    }
    let elapsed = started.elapsed();
    drop(db);
    let _ = std::fs::remove_file(&path);
    let scenario = if batch == 1 {
        "redb durable write, 1 key/txn".to_string()
    } else {
        format!("redb durable write, {batch} keys/txn (keys/s)")
    };
    Ok(total.row(&scenario, threads, total.count() * batch as u64, elapsed))
}
