//! The audit log file, rotated as kube-apiserver's (lumberjack) rotates it: when a line
//! would take the file past `--audit-log-maxsize` MB it is renamed to
//! `<name>-<UTC time, 2006-01-02T15-04-05.000>.<ext>` and a new one started; then backups
//! beyond `--audit-log-maxbackup` (newest kept) or older than `--audit-log-maxage` days
//! are removed. 0 means no limit for both; a maxsize of 0 is lumberjack's 100 MB.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, NaiveDateTime, Utc};

const MEGABYTE: u64 = 1024 * 1024;
/// lumberjack's size when none is given.
const DEFAULT_MAX_MEGABYTES: u64 = 100;
/// The timestamp of a backup's name (Go's `2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// How the log is rotated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Megabytes before rotation (0: 100).
    pub max_size_mb: u64,
    /// Backups kept (0: all).
    pub max_backups: usize,
    /// Days a backup is kept (0: forever).
    pub max_age_days: u64,
}

/// An append-only log file that rotates itself.
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    file: Option<File>,
    size: u64,
}

impl RotatingFile {
    /// The log at `path` (its directory created if missing); opened on first write.
    pub fn new(path: PathBuf, rotation: Rotation) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(RotatingFile {
            path,
            rotation,
            file: None,
            size: 0,
        })
    }

    fn max_size(&self) -> u64 {
        match self.rotation.max_size_mb {
            0 => DEFAULT_MAX_MEGABYTES * MEGABYTE,
            mb => mb * MEGABYTE,
        }
    }

    /// Whether a line of `len` bytes can be written at all (fits in an empty file).
    pub fn check_fits(&self, len: usize) -> io::Result<()> {
        match len as u64 > self.max_size() {
            true => Err(io::Error::other(format!(
                "an audit event of {len} bytes exceeds --audit-log-maxsize ({} bytes)",
                self.max_size()
            ))),
            false => Ok(()),
        }
    }

    /// Appends `line` with one write, rotating first when it would not fit.
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.check_fits(line.len())?;
        let len = line.len() as u64;
        if self.file.is_none() {
            self.open_existing_or_new()?;
        }
        if self.size + len > self.max_size() {
            self.rotate()?;
        }
        let file = self.file.as_mut().expect("opened above");
        file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    /// Appends whole lines (a batch), in as few writes as rotation allows.
    pub fn write_lines(&mut self, batch: &[u8]) -> io::Result<()> {
        if self.file.is_some() && self.size + batch.len() as u64 <= self.max_size() {
            // The usual case: no rotation falls inside, no need to find the lines.
            return self.write_line(batch);
        }
        let (mut start, mut end) = (0, 0);
        for line in batch.split_inclusive(|b| *b == b'\n') {
            let pending = (end - start) as u64;
            if pending > 0 && self.size + pending + line.len() as u64 > self.max_size() {
                self.write_line(&batch[start..end])?;
                start = end;
            }
            end += line.len();
        }
        if end > start {
            self.write_line(&batch[start..end])?;
        }
        Ok(())
    }

    fn open_existing_or_new(&mut self) -> io::Result<()> {
        match std::fs::metadata(&self.path) {
            Ok(meta) => {
                self.file = Some(OpenOptions::new().append(true).open(&self.path)?);
                self.size = meta.len();
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.open_new(),
            Err(e) => Err(e),
        }
    }

    /// A new, empty file, readable by its owner only (the log holds request bodies).
    fn open_new(&mut self) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        self.file = Some(options.open(&self.path)?);
        self.size = 0;
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        if self.path.exists() {
            std::fs::rename(&self.path, backup_name(&self.path, Utc::now()))?;
        }
        self.open_new()?;
        if let Err(e) = self.remove_old_backups() {
            tracing::warn!(path = %self.path.display(), error = %e, "removing old audit log backups");
        }
        Ok(())
    }

    fn remove_old_backups(&self) -> io::Result<()> {
        let Rotation {
            max_backups,
            max_age_days,
            ..
        } = self.rotation;
        if max_backups == 0 && max_age_days == 0 {
            return Ok(());
        }
        let mut backups = backups(&self.path)?;
        backups.sort_by_key(|b| std::cmp::Reverse(b.1));
        let cutoff = (max_age_days > 0).then(|| {
            let age = Duration::from_secs(max_age_days * 24 * 3600);
            DateTime::<Utc>::from(SystemTime::now() - age)
        });
        for (i, (path, at)) in backups.iter().enumerate() {
            let too_many = max_backups > 0 && i >= max_backups;
            let too_old = cutoff.is_some_and(|c| *at < c);
            if too_many || too_old {
                std::fs::remove_file(path)?;
            }
        }
        Ok(())
    }
}

/// `dir/audit.log` → `dir/audit-2026-12-02T10-11-12.123.log`.
pub fn backup_name(path: &Path, at: DateTime<Utc>) -> PathBuf {
    let (stem, ext) = stem_and_ext(path);
    path.with_file_name(format!("{stem}-{}{ext}", at.format(BACKUP_TIME_FORMAT)))
}

/// The file name without and with its extension (the last `.`-part, dot included).
fn stem_and_ext(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rfind('.') {
        Some(i) if i > 0 => (name[..i].to_string(), name[i..].to_string()),
        _ => (name, String::new()),
    }
}

/// The backups of the log at `path`, with the time their names carry.
fn backups(path: &Path) -> io::Result<Vec<(PathBuf, DateTime<Utc>)>> {
    let (stem, ext) = stem_and_ext(path);
    let prefix = format!("{stem}-");
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stamp) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(ext.as_str()))
        else {
            continue;
        };
        if let Ok(at) = NaiveDateTime::parse_from_str(stamp, BACKUP_TIME_FORMAT) {
            out.push((entry.path(), at.and_utc()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_are_named_as_lumberjack_names_them() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T10:11:12.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), at),
            Path::new("/var/log/audit-2026-12-02T10-11-12.123.log")
        );
        assert_eq!(
            backup_name(Path::new("/var/log/audit"), at),
            Path::new("/var/log/audit-2026-12-02T10-11-12.123")
        );
    }

    #[test]
    fn rotates_at_the_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut log = RotatingFile::new(path.clone(), rotation).unwrap();
        let line = vec![b'x'; 300 * 1024];
        for _ in 0..14 {
            log.write_line(&line).unwrap();
            // Backups are told apart by their millisecond.
            std::thread::sleep(Duration::from_millis(2));
        }
        let found = backups(&path).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        for (p, _) in &found {
            assert_eq!(std::fs::metadata(p).unwrap().len(), 3 * 300 * 1024);
        }
        // 14 lines, 3 per file: the current file holds the last 2.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 * 300 * 1024);
        assert!(log.write_line(&vec![b'x'; 2 * 1024 * 1024]).is_err());
    }
}
