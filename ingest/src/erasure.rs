//! What an account remembers of erased shoppers: only keyed hashes of the identifiers
//! given to `/api/user/forget` (HMAC-SHA256 under a key generated once per data
//! directory), so that later events carrying a forgotten email or user id can be
//! stripped of personal data before they are applied or logged.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use sha2::Sha256;
use vitrine_engine::event::{Event, Identity, PersonalDetails};

/// File of the data directory's erasure key.
pub const KEY_FILE: &str = "erasure.key";
/// File of an account's forgotten-identifier hashes (hex, one per line).
pub const FORGOTTEN_FILE: &str = "forgotten";

/// The data directory's erasure key: read from [`KEY_FILE`], or generated (32 random
/// bytes) and written there on first use.
pub fn key(data_dir: &Path) -> Result<[u8; 32], vitrine_snapshots::Error> {
    let path = data_dir.join(KEY_FILE);
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return Ok(key);
    }
    let key: [u8; 32] = rand::random();
    vitrine_snapshots::atomic_write(data_dir, KEY_FILE, &key)?;
    Ok(key)
}

/// The keyed hash of an identifier (HMAC-SHA256 under `key`; emails and ids compared
/// case-insensitively, surrounding spaces ignored).
pub fn keyed_hash(key: &[u8], identifier: &str) -> [u8; 32] {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return [0; 32];
    };
    mac.update(identifier.trim().to_lowercase().as_bytes());
    mac.finalize().into_bytes().into()
}

/// Keyed hashes of an account's forgotten identifiers.
#[derive(Debug)]
pub struct Forgotten {
    key: [u8; 32],
    dir: PathBuf,
    hashes: Mutex<HashSet<[u8; 32]>>,
    /// Whether `hashes` holds any: every request asks, and almost always none does.
    any: AtomicBool,
}

impl Forgotten {
    /// The hashes saved in `dir` (unreadable lines are skipped).
    pub fn load(dir: &Path, key: [u8; 32]) -> Forgotten {
        let text = std::fs::read_to_string(dir.join(FORGOTTEN_FILE)).unwrap_or_default();
        let hashes: HashSet<[u8; 32]> = text.lines().filter_map(parse_hex).collect();
        Forgotten {
            key,
            dir: dir.to_path_buf(),
            any: AtomicBool::new(!hashes.is_empty()),
            hashes: Mutex::new(hashes),
        }
    }

    /// The hash of an identifier (emails and ids compared case-insensitively).
    fn hash(&self, identifier: &str) -> [u8; 32] {
        keyed_hash(&self.key, identifier)
    }

    /// Remembers `identifier` as forgotten and saves the set (fsynced).
    pub fn add(&self, identifier: &str) -> Result<(), vitrine_snapshots::Error> {
        let mut hashes = self.hashes.lock();
        hashes.insert(self.hash(identifier));
        self.any.store(true, Ordering::Release);
        let mut text = String::with_capacity(hashes.len() * 65);
        let mut sorted: Vec<&[u8; 32]> = hashes.iter().collect();
        sorted.sort();
        for hash in sorted {
            for byte in hash {
                text.push_str(&format!("{byte:02x}"));
            }
            text.push('\n');
        }
        vitrine_snapshots::atomic_write(&self.dir, FORGOTTEN_FILE, text.as_bytes())
    }

    /// Whether `identifier` was forgotten.
    pub fn contains(&self, identifier: &str) -> bool {
        self.any.load(Ordering::Acquire) && self.hashes.lock().contains(&self.hash(identifier))
    }

    /// Strips personal data from events that name a forgotten email or user id: the
    /// identifiers that match and every personal detail of that event. Returns how many
    /// events were stripped.
    pub fn strip(&self, events: &mut [Event]) -> usize {
        if !self.any.load(Ordering::Acquire) {
            return 0;
        }
        let mut stripped = 0;
        for event in events {
            let (identity, details) = match event {
                Event::Order(order) | Event::CustomerOrder(order) => {
                    (&mut order.identity, &mut order.details)
                }
                Event::CustomerDetails { identity, details } => (&mut **identity, &mut **details),
                _ => continue,
            };
            if self.strip_identity(identity) {
                *details = PersonalDetails::default();
                stripped += 1;
            }
        }
        stripped
    }

    fn strip_identity(&self, identity: &mut Identity) -> bool {
        let mut matched = false;
        for field in [&mut identity.email, &mut identity.user_id] {
            if field.as_deref().is_some_and(|v| self.contains(v)) {
                *field = None;
                matched = true;
            }
        }
        matched
    }
}

fn parse_hex(line: &str) -> Option<[u8; 32]> {
    let line = line.trim();
    if line.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(line.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vitrine_engine::event::Order;

    #[test]
    fn forgotten_identifiers_are_kept_hashed_and_stripped_from_later_events() {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path()).unwrap();
        assert_eq!(super::key(dir.path()).unwrap(), key, "the key is kept");
        let forgotten = Forgotten::load(dir.path(), key);
        forgotten.add("Ann@Example.com").unwrap();
        let saved = std::fs::read_to_string(dir.path().join(FORGOTTEN_FILE)).unwrap();
        assert!(!saved.to_lowercase().contains("ann"), "{saved}");
        assert_eq!(saved.trim().len(), 64);

        let again = Forgotten::load(dir.path(), key);
        assert!(again.contains("ann@example.com"));
        assert!(!again.contains("bob@example.com"));
        let other_key = Forgotten::load(dir.path(), [7; 32]);
        assert!(!other_key.contains("ann@example.com"), "hashes are keyed");

        let details = PersonalDetails {
            first_name: Some("Ann".into()),
            ..PersonalDetails::default()
        };
        let mut events = vec![
            Event::CustomerDetails {
                identity: Box::new(Identity {
                    email: Some("ANN@example.com".into()),
                    account_id: Some("acme".into()),
                    ..Identity::default()
                }),
                details: Box::new(details.clone()),
            },
            Event::Order(Box::new(Order {
                order_id: "o1".into(),
                items: Vec::new(),
                total: None,
                identity: Identity {
                    email: Some("bob@example.com".into()),
                    ..Identity::default()
                },
                details,
            })),
        ];
        assert_eq!(again.strip(&mut events), 1);
        let Event::CustomerDetails { identity, details } = &events[0] else {
            unreachable!()
        };
        assert_eq!(identity.email, None);
        assert_eq!(identity.account_id.as_deref(), Some("acme"));
        assert_eq!(**details, PersonalDetails::default());
        let Event::Order(order) = &events[1] else {
            unreachable!()
        };
        assert_eq!(order.identity.email.as_deref(), Some("bob@example.com"));
        assert_eq!(order.details.first_name.as_deref(), Some("Ann"));
    }
}
