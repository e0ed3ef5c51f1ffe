//! JSON paths of the field being read or written, for error messages.

use std::fmt::Write as _;

#[derive(Clone, Copy)]
pub(super) enum Seg<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    Key(&'a str),
    MapKey,
}

/// A JSON path built on the stack while recursing; rendered only for errors.
#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl<'a> Path<'a> {
    pub(super) const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

    pub(super) fn child(&'a self, seg: Seg<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            seg,
        }
    }

    pub(super) fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut s = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Field(name) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
                Seg::Key(k) => {
                    let _ = write!(s, "[{k:?}]");
                }
                Seg::MapKey => s.push_str("[key]"),
            }
        }
        if s.is_empty() {
            s.push_str("object");
        }
        s
    }
}
