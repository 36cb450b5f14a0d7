//! The spool of streamed feeds: what a stream's name says it holds, why a piece is
//! refused, and the feeds left open (name → bytes so far), read back at start.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use parking_lot::Mutex;

/// What a streamed feed holds, from the prefix of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `product-…`: a JSON document with `Products`.
    Product,
    /// `category-…`: `Categories`.
    Category,
    /// `brand-…`: `Brands`.
    Brand,
    /// `user-…`: `Users`.
    User,
    /// `orders-…`: the order history as CSV.
    Orders,
}

impl StreamKind {
    /// The kind of a feed name `<type>-<hex>` (1 to 40 lower-case hex digits).
    pub fn of_name(name: &str) -> Option<StreamKind> {
        let (kind, id) = name.split_once('-')?;
        let id_ok = !id.is_empty()
            && id.len() <= 40
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !id_ok {
            return None;
        }
        match kind {
            "product" => Some(StreamKind::Product),
            "category" => Some(StreamKind::Category),
            "brand" => Some(StreamKind::Brand),
            "user" => Some(StreamKind::User),
            "orders" => Some(StreamKind::Orders),
            _ => None,
        }
    }
}

/// Why a piece of a streamed feed was refused.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The name is not `<type>-<hex>`.
    #[error(
        "feedName: expected <type>-<hex> with type product, category, brand, user or orders, got {0:?}"
    )]
    BadName(String),
    /// No feed of that name is open (never created, closed already, or expired).
    #[error("feedName: no open feed {0:?}; start it with feed-create")]
    Unknown(String),
    /// The feed would grow past the size limit; it is dropped.
    #[error("the feed {name:?} is larger than the limit of {limit} bytes; it was dropped")]
    TooLarge {
        /// The feed.
        name: String,
        /// `feeds.max_bytes`.
        limit: u64,
    },
    /// The spool or the job could not be written.
    #[error("the feed could not be saved: {0}")]
    Journal(#[from] vitrine_snapshots::Error),
    /// In a cluster: the replicated log did not store the submission.
    #[error("{0}")]
    Replication(String),
}

/// The open feeds of an account: name → bytes so far. Locked for a whole piece, so
/// pieces of one feed are written in the order they are taken.
#[derive(Debug, Default)]
pub(in crate::jobs) struct Streams {
    pub(in crate::jobs) open: Mutex<HashMap<String, u64>>,
}

impl Streams {
    /// The spools left open by an earlier run, so that their feeds can go on.
    pub(in crate::jobs) fn load(dir: &Path) -> Result<Streams, vitrine_snapshots::Error> {
        let spool = dir.join("streams");
        fs::create_dir_all(&spool)
            .map_err(vitrine_snapshots::Error::io("creating directory", &spool))?;
        let mut open = HashMap::new();
        for entry in fs::read_dir(&spool)
            .map_err(vitrine_snapshots::Error::io("reading directory", &spool))?
        {
            let path = entry
                .map_err(vitrine_snapshots::Error::io("reading directory", &spool))?
                .path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".part"))
                .filter(|n| StreamKind::of_name(n).is_some());
            if let Some(name) = name {
                let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                open.insert(name.to_owned(), bytes);
            }
        }
        Ok(Streams {
            open: Mutex::new(open),
        })
    }
}
