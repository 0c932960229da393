//! Which pre-token a preprocessed run takes, and the list of labels a client has used,
//! so that no pre-token is ever used twice.

use crate::api::{self, Pretoken, PretokenState};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The pre-token a preprocessed run takes: the first ready one of `dataset` whose label is
/// not on the used list; and the ready ones whose labels are (burned: to withdraw).
/// Labels are compared as the bytes they decode to, so no spelling of a used label (upper
/// case hex, say) passes as a new one.
pub(super) fn choose(
    listed: &[Pretoken],
    dataset: &str,
    used: &UsedLabels,
) -> (Option<(String, [u8; 32])>, Vec<String>) {
    let ready = listed
        .iter()
        .filter(|p| p.state == PretokenState::Ready && p.dataset == dataset);
    let mut chosen = None;
    let mut burned = Vec::new();
    for p in ready {
        let Ok(label) = api::from_hex::<32>(&p.label, "label") else {
            continue;
        };
        if used.contains(&label) {
            burned.push(p.id.clone());
        } else if chosen.is_none() {
            chosen = Some((p.id.clone(), label));
        }
    }
    (chosen, burned)
}

/// The labels of the pre-tokens a client used, in a file beside the key file (one hex
/// label per line, owner-only, append-only), locked while open.
pub(super) struct UsedLabels {
    file: std::fs::File,
    path: PathBuf,
    labels: std::collections::HashSet<[u8; 32]>,
}

impl UsedLabels {
    /// Opens (creating) and locks the list, and reads it.
    pub(super) fn open(path: &Path) -> Result<UsedLabels> {
        let fail = |e: std::io::Error| {
            Error::BadRequest(format!(
                "cannot keep the used pre-tokens in '{}': {e}",
                path.display()
            ))
        };
        let created = !path.exists();
        let mut options = std::fs::OpenOptions::new();
        options.read(true).append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(fail)?;
        file.lock().map_err(fail)?;
        if created {
            venn::util::files::sync_dir(path)?;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).map_err(fail)?;
        let labels = text
            .lines()
            .map(|l| api::from_hex::<32>(l, "used label"))
            .collect::<Result<_>>()
            .map_err(|_| {
                Error::BadRequest(format!(
                    "'{}' is damaged: it holds a line that is no label",
                    path.display()
                ))
            })?;
        Ok(UsedLabels {
            file,
            path: path.to_owned(),
            labels,
        })
    }

    fn contains(&self, label: &[u8; 32]) -> bool {
        self.labels.contains(label)
    }

    /// Appends a label, synced before returning.
    pub(super) fn record(&mut self, label: &[u8; 32]) -> Result<()> {
        writeln!(self.file, "{}", hex::encode(label))
            .and_then(|_| self.file.sync_all())
            .map_err(|e| {
                Error::BadRequest(format!(
                    "cannot record a used pre-token in '{}': {e}",
                    self.path.display()
                ))
            })?;
        self.labels.insert(*label);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A used label is recognised however the service spells it; ready pre-tokens with
    /// used labels are burned; the list survives reopening and refuses damage.
    #[test]
    fn used_labels_are_never_chosen_again() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("k.used");
        let pretoken = |id: &str, label: String, state| Pretoken {
            id: id.into(),
            dataset: "d".into(),
            label,
            state,
        };
        let (l1, l2) = ([1u8; 32], [0xab; 32]);
        {
            let mut used = UsedLabels::open(&path).unwrap();
            used.record(&l2).unwrap();
        }
        let used = UsedLabels::open(&path).unwrap();
        let listed = [
            pretoken("a", hex::encode(l2).to_uppercase(), PretokenState::Ready),
            pretoken("b", hex::encode(l1), PretokenState::Computing),
            pretoken("c", hex::encode(l2), PretokenState::Ready),
            pretoken("d", "not hex".into(), PretokenState::Ready),
        ];
        assert_eq!(
            choose(&listed, "d", &used),
            (None, vec!["a".into(), "c".into()])
        );
        let listed = [
            pretoken("e", hex::encode(l1), PretokenState::Ready),
            pretoken("f", hex::encode(l2), PretokenState::Ready),
        ];
        assert_eq!(
            choose(&listed, "d", &used),
            (Some(("e".into(), l1)), vec!["f".into()])
        );
        assert!(choose(&listed, "other", &used).0.is_none());
        drop(used);
        std::fs::write(&path, "zz\n").unwrap();
        assert!(UsedLabels::open(&path).is_err());
    }
}
