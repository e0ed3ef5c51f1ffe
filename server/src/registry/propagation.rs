//! How a delete hands an object's dependents to the garbage collector: a Foreground or
//! Orphan delete leaves the object in place behind a finalizer the collector removes once
//! it has dealt with the dependents; a Background delete removes it at once.

use crate::api::options::{DeleteOptions, PropagationPolicy};

/// Held by an owner deleted with `propagationPolicy=Orphan` until its dependents no
/// longer name it.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// Held by an owner deleted with `propagationPolicy=Foreground` until its blocking
/// dependents are gone.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizers an object should have once this delete is applied, or `None` when they
/// stay as they are. An explicit policy (or the deprecated `orphanDependents`) decides;
/// without one, a collector finalizer the object already holds stands (a repeated plain
/// delete does not undo a Foreground one); the default is Background.
pub fn finalizers_after_delete(
    existing: &[String],
    options: &DeleteOptions,
) -> Option<Vec<String>> {
    let held = existing
        .iter()
        .find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER)
        .map(String::as_str);
    let policy = match (options.orphan_dependents, options.propagation_policy) {
        (Some(true), _) => PropagationPolicy::Orphan,
        (Some(false), _) => PropagationPolicy::Background,
        (None, Some(policy)) => policy,
        (None, None) => match held {
            Some(ORPHAN_FINALIZER) => PropagationPolicy::Orphan,
            Some(_) => PropagationPolicy::Foreground,
            None => PropagationPolicy::Background,
        },
    };
    let wanted = match policy {
        PropagationPolicy::Orphan => Some(ORPHAN_FINALIZER),
        PropagationPolicy::Foreground => Some(FOREGROUND_FINALIZER),
        PropagationPolicy::Background => None,
    };
    let mut next: Vec<String> = existing
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    next.extend(wanted.map(str::to_string));
    let same = next.len() == existing.len() && next.iter().all(|f| existing.contains(f));
    (!same).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(policy: Option<PropagationPolicy>, orphan: Option<bool>) -> DeleteOptions {
        DeleteOptions {
            propagation_policy: policy,
            orphan_dependents: orphan,
            ..DeleteOptions::default()
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_policy_picks_the_collector_finalizer() {
        let mine = strings(&["example.com/keep"]);
        assert_eq!(finalizers_after_delete(&mine, &with(None, None)), None);
        assert_eq!(
            finalizers_after_delete(&mine, &with(Some(PropagationPolicy::Background), None)),
            None
        );
        assert_eq!(
            finalizers_after_delete(&mine, &with(Some(PropagationPolicy::Orphan), None)),
            Some(strings(&["example.com/keep", "orphan"]))
        );
        assert_eq!(
            finalizers_after_delete(&[], &with(Some(PropagationPolicy::Foreground), None)),
            Some(strings(&["foregroundDeletion"]))
        );
        assert_eq!(
            finalizers_after_delete(&[], &with(None, Some(true))),
            Some(strings(&["orphan"]))
        );
    }

    #[test]
    fn a_held_finalizer_stands_unless_a_policy_says_otherwise() {
        let orphaning = strings(&["orphan"]);
        assert_eq!(finalizers_after_delete(&orphaning, &with(None, None)), None);
        assert_eq!(
            finalizers_after_delete(&orphaning, &with(Some(PropagationPolicy::Foreground), None)),
            Some(strings(&["foregroundDeletion"]))
        );
        assert_eq!(
            finalizers_after_delete(&orphaning, &with(None, Some(false))),
            Some(Vec::new())
        );
        let foreground = strings(&["foregroundDeletion"]);
        assert_eq!(
            finalizers_after_delete(&foreground, &with(None, None)),
            None
        );
    }
}
