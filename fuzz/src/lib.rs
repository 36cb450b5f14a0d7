//! `vitrine-fuzz`: mutation fuzzing of every parser a stranger (or a failing disk) can
//! reach, in process: serverside requests, deltas, full feeds, the plugins' order CSV,
//! status requests, the configuration file, write-ahead log segments, snapshot files
//! and state-snapshot payloads.
//!
//! Each [`Target`] starts from a seed corpus (checked-in files under `corpus/<target>/`
//! and seeds built in code for the binary formats) and feeds the parser inputs mutated
//! byte-wise and token-wise (flips, inserts, deletions, duplications, splices between
//! seeds, JSON and CSV tokens: deep nesting, huge and non-finite numbers, control and
//! multi-byte characters). A parser must answer every input with a value or an error: a
//! panic is a finding, kept with its input. It is not coverage-guided: the toolchain
//! here has no nightly for libFuzzer and no AFL++ build of rustc's LLVM, so the seeds
//! and token dictionary carry the structure instead.

#![forbid(unsafe_code)]
#![expect(
    clippy::indexing_slicing,
    reason = "the mutator indexes inside lengths it has just checked; a panic there is a bug of the tool, reported like a finding"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use vitrine_engine::event::{Event, PageType};
use vitrine_fields::{Errors, Fields, KeyMatch};

/// A parser under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `/api/serverside` bodies: JSON, credentials, the whole request.
    Serverside,
    /// `/api/delta` and `/api/productdelta` bodies.
    Delta,
    /// Full feeds (simd-json, records, collections).
    Feed,
    /// The plugins' order history CSV.
    Orders,
    /// The plugins' streamed-feed form bodies (`feed-create` … `feed-close`).
    Stream,
    /// `/api/deltastatus` and `/api/productfeedstatus` bodies.
    Status,
    /// The TOML configuration.
    Config,
    /// Write-ahead log segment bytes.
    Wal,
    /// Snapshot files (header, length, checksum).
    Snapshot,
    /// State-snapshot payloads (framed rkyv entries).
    State,
    /// Campaign documents: the admin API's segments and campaign-list bodies, and a
    /// whole stored document, read and compiled against a store's zones.
    Campaigns,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 11] = [
        Target::Serverside,
        Target::Delta,
        Target::Feed,
        Target::Orders,
        Target::Stream,
        Target::Status,
        Target::Config,
        Target::Wal,
        Target::Snapshot,
        Target::State,
        Target::Campaigns,
    ];

    /// The target's name (and corpus directory).
    pub fn name(self) -> &'static str {
        match self {
            Target::Serverside => "serverside",
            Target::Delta => "delta",
            Target::Feed => "feed",
            Target::Orders => "orders",
            Target::Stream => "stream",
            Target::Status => "status",
            Target::Config => "config",
            Target::Wal => "wal",
            Target::Snapshot => "snapshot",
            Target::State => "state",
            Target::Campaigns => "campaigns",
        }
    }

    /// The target of a name.
    pub fn of_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// What its inputs are, for their mutations.
    fn form(self) -> Form {
        match self {
            Target::Wal | Target::Snapshot | Target::State => Form::Binary,
            _ => Form::Text,
        }
    }

    /// Runs the parser on one input. Only a panic is a failure.
    pub fn exercise(self, input: &[u8]) {
        match self {
            Target::Serverside => serverside_both_ways(input),
            Target::Delta => {
                if let Ok(body) = serde_json::from_slice::<serde_json::Value>(input) {
                    let mut errors = Errors::default();
                    if let Some(fields) = Fields::of(&body, "", KeyMatch::Exact, &mut errors) {
                        let _ = vitrine_ingest::delta::parse(&fields);
                    }
                }
            }
            Target::Feed => {
                let mut bytes = input.to_vec();
                let _ = vitrine_ingest::feed::parse(&mut bytes);
            }
            Target::Orders => {
                let _ = vitrine_ingest::orders::parse(input, 0);
            }
            Target::Stream => {
                let form = vitrine_http::api::stream::form_object(input);
                let mut errors = Errors::default();
                if let Some(fields) = Fields::of(&form, "", KeyMatch::Exact, &mut errors) {
                    let endpoint = vitrine_http::routes::Endpoint::FeedAppend;
                    let _ = vitrine_http::auth::read(&fields, endpoint, &mut errors);
                    if let Some(name) = fields.req_nonempty_str("feedName", &mut errors) {
                        let _ = vitrine_ingest::jobs::StreamKind::of_name(name);
                    }
                    let _ = fields.opt_str("payLoad", &mut errors);
                }
            }
            Target::Status => {
                if let Ok(body) = serde_json::from_slice::<serde_json::Value>(input) {
                    let mut errors = Errors::default();
                    if let Some(fields) = Fields::of(&body, "", KeyMatch::Exact, &mut errors) {
                        let endpoint = vitrine_http::routes::Endpoint::DeltaStatus;
                        let _ = vitrine_http::auth::read(&fields, endpoint, &mut errors);
                        let _ = vitrine_http::api::tokens(&fields, 1_000);
                    }
                }
            }
            Target::Config => {
                if let Ok(text) = std::str::from_utf8(input) {
                    let overrides = vitrine_http::config::Overrides::default();
                    let _ = vitrine_http::config::parse(text, "fuzz", &overrides);
                }
            }
            Target::Wal => {
                let _ = vitrine_snapshots::wal::decode_segment(input, 1);
            }
            Target::Snapshot => {
                for kind in [
                    vitrine_snapshots::snapshot::Kind::Catalogue,
                    vitrine_snapshots::snapshot::Kind::State,
                ] {
                    let _ = vitrine_snapshots::snapshot::check_bytes(input, kind);
                }
            }
            Target::State => {
                let _ = vitrine_ingest::state::decode(input);
            }
            Target::Campaigns => campaign_document(input),
        }
    }
}

/// A campaign document read every way the server reads one: as the segments' body, as
/// a zone's list, as a stored document, and as a draft rule.
fn campaign_document(input: &[u8]) {
    use vitrine_ingest::campaigns::{self, Target as Zones};
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(input) else {
        return;
    };
    let zones = [
        vitrine_testkit::zone("HP-01", vitrine_engine::zone::Strategy::Trending, 8),
        vitrine_testkit::zone("PP-01", vitrine_engine::zone::Strategy::Similar, 4),
    ];
    let time_zone = jiff::tz::TimeZone::UTC;
    let target = Zones {
        zones: &zones,
        time_zone: &time_zone,
    };
    let empty = vitrine_engine::campaign::CampaignDocument::default();
    let none = vitrine_engine::campaign::CampaignSet::default();
    if let Ok((document, set)) = campaigns::with_segments(&empty, &body, 1, target) {
        let _ = campaigns::with_campaigns(
            campaigns::Installed {
                document: &document,
                set: &set,
            },
            "HP-01",
            &body,
            2,
            target,
        );
    }
    let _ = campaigns::with_campaigns(
        campaigns::Installed {
            document: &empty,
            set: &none,
        },
        "HP-01",
        &body,
        1,
        target,
    );
    if let Ok(stored) =
        serde_json::from_value::<vitrine_engine::campaign::CampaignDocument>(body.clone())
    {
        let _ = campaigns::compile(&stored, 1, target);
        let _ = campaigns::summary(&empty, &stored);
        let _ = empty.restored(&stored, 3);
        let _ = campaigns::compile_change(
            &stored,
            &none,
            Some(vitrine_engine::campaign::document::Part::Zone("HP-01")),
            2,
            target,
        );
    }
    let mut errors = Errors::default();
    let _ = campaigns::read_rule(&body, &mut errors);
}

/// A panic found, with the input that caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The panic's message.
    pub message: String,
    /// The input.
    pub input: Vec<u8>,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Inputs run.
    pub execs: u64,
    /// Panics, at most one per distinct message.
    pub findings: Vec<Finding>,
}

/// Runs `execs` mutated inputs through `target`, starting from `seeds`.
pub fn fuzz(target: Target, seeds: &[Vec<u8>], execs: u64, seed: u64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut outcome = Outcome::default();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let seeds: Vec<Vec<u8>> = if seeds.is_empty() {
        vec![Vec::new()]
    } else {
        seeds.to_vec()
    };
    for _ in 0..execs {
        let base = &seeds[rng.random_range(0..seeds.len())];
        let mut input = base.clone();
        let rounds = 1 + rng.random_range(0..4);
        for _ in 0..rounds {
            mutate(&mut input, &seeds, target.form(), &mut rng);
        }
        if let Some(message) = run_one(target, &input)
            && !outcome.findings.iter().any(|f| f.message == message)
        {
            outcome.findings.push(Finding { message, input });
        }
        outcome.execs += 1;
    }
    std::panic::set_hook(previous);
    outcome
}

/// Runs one input; the panic message if it panicked.
pub fn run_one(target: Target, input: &[u8]) -> Option<String> {
    let result = catch_unwind(AssertUnwindSafe(|| target.exercise(input)));
    result.err().map(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

/// Tokens spliced into text inputs.
const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "false",
    "0",
    "-0",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "1.0000",
    "\"1.0000\"",
    "9007199254740993",
    "-9223372036854775809",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "é",
    "💥",
    "\u{202e}",
    "\"\"",
    "[]",
    "{}",
    "\\",
    "\n",
    "\r\n",
    ",,",
    "\"page_view\"",
    "\"order\"",
    "\"data\"",
    "\"items\"",
    "\"Products\"",
    "\"Id\"",
    "\"Prices\"",
    "\"1 GBP\"",
    "\"GroupPrices\"",
    "[[[[[[[[[[[[[[[[[[[[",
    "]]]]]]]]]]]]]]]]]]]]",
    "[[accounts]]",
    "[[accounts.zones]]",
    "= ",
    "\"zones\"",
    "OrderId",
    "2024-03-01 10:11:12",
];

/// What an input is, for its mutations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Text: tokens are spliced in, and JSON is changed as JSON half the time.
    Text,
    /// Bytes: random runs are spliced in.
    Binary,
}

fn mutate(input: &mut Vec<u8>, seeds: &[Vec<u8>], form: Form, rng: &mut StdRng) {
    // Half of the mutations of a JSON input change its structure and stay JSON, so that
    // they reach the validators behind the parser.
    if form == Form::Text
        && rng.random_bool(0.5)
        && let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(input)
    {
        mutate_json(&mut value, rng, 0);
        *input = serde_json::to_vec(&value).unwrap_or_default();
        return;
    }
    let len = input.len();
    match rng.random_range(0..9) {
        // Flip a bit.
        0 if len > 0 => {
            let at = rng.random_range(0..len);
            input[at] ^= 1 << rng.random_range(0..8);
        }
        // Set a byte.
        1 if len > 0 => {
            let at = rng.random_range(0..len);
            input[at] = rng.random();
        }
        // Delete a range.
        2 if len > 0 => {
            let at = rng.random_range(0..len);
            let end = (at + 1 + rng.random_range(0..16)).min(len);
            input.drain(at..end);
        }
        // Duplicate a range.
        3 if len > 0 => {
            let at = rng.random_range(0..len);
            let end = (at + 1 + rng.random_range(0..64)).min(len);
            let piece = input[at..end].to_vec();
            let to = rng.random_range(0..=input.len());
            input.splice(to..to, piece);
        }
        // Splice a piece of another seed.
        4 => {
            let other = &seeds[rng.random_range(0..seeds.len())];
            if !other.is_empty() {
                let at = rng.random_range(0..other.len());
                let end = (at + 1 + rng.random_range(0..128)).min(other.len());
                let to = rng.random_range(0..=input.len());
                input.splice(to..to, other[at..end].iter().copied());
            }
        }
        // Cut the end (a torn write).
        5 if len > 0 => input.truncate(rng.random_range(0..len)),
        // A token (text) or a random byte run (binary).
        _ if form == Form::Text => {
            let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
            let to = rng.random_range(0..=input.len());
            if rng.random_bool(0.5) || len == 0 {
                input.splice(to..to, token.iter().copied());
            } else {
                let end = (to + token.len()).min(len);
                input.splice(to..end, token.iter().copied());
            }
        }
        _ => {
            let to = rng.random_range(0..=input.len());
            let run: Vec<u8> = (0..rng.random_range(1..9)).map(|_| rng.random()).collect();
            input.splice(to..to, run);
        }
    }
}

/// Replaces, removes, nests or retypes one node of a JSON value, chosen at random.
fn mutate_json(value: &mut serde_json::Value, rng: &mut StdRng, depth: usize) {
    use serde_json::Value;
    let descend = rng.random_bool(0.7) && depth < 12;
    match value {
        Value::Object(map) if descend && !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.random_range(0..keys.len())];
            match rng.random_range(0..6) {
                0 => {
                    map.remove(key);
                }
                1 => {
                    let copy = map.get(key).cloned().unwrap_or(Value::Null);
                    map.insert(format!("{key}{}", rng.random_range(0..3)), copy);
                }
                _ => {
                    if let Some(child) = map.get_mut(key) {
                        mutate_json(child, rng, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let at = rng.random_range(0..items.len());
            match rng.random_range(0..5) {
                0 => {
                    items.remove(at);
                }
                1 => {
                    let copy = items[at].clone();
                    items.insert(at, copy);
                }
                _ => mutate_json(&mut items[at], rng, depth + 1),
            }
        }
        _ => *value = random_json(rng, value),
    }
}

/// A value to put in place of `old`: another type, an edge value, or `old` nested.
fn random_json(rng: &mut StdRng, old: &serde_json::Value) -> serde_json::Value {
    use serde_json::{Value, json};
    match rng.random_range(0..16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(1.5),
        5 => json!(9_007_199_254_740_993_u64),
        6 => json!(""),
        7 => json!(" "),
        8 => json!("x".repeat(rng.random_range(100..5_000))),
        9 => json!("\u{0000}\u{202e}é💥"),
        10 => json!([]),
        11 => json!({}),
        12 => json!([old.clone()]),
        13 => json!({"id": old.clone(), "data": old.clone()}),
        14 => json!(old.to_string()),
        _ => json!(f64::MAX),
    }
}

/// The seed corpus of `target`: the files under `corpus_dir/<target>/`, and for the
/// binary formats seeds written by the real code.
pub fn seeds(target: Target, corpus_dir: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut seeds = Vec::new();
    let dir = corpus_dir.join(target.name());
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            seeds.push(std::fs::read(&path)?);
        }
    }
    match target {
        Target::Wal => seeds.extend(wal_seeds()?),
        Target::Snapshot | Target::State => {
            let (file, payload) = state_seed()?;
            seeds.push(if target == Target::State {
                payload
            } else {
                file
            });
        }
        Target::Config => seeds.push(vitrine_http::config::DEMO_CONFIG.as_bytes().to_vec()),
        _ => {}
    }
    Ok(seeds)
}

/// Segments written by the real log: a few records of each kind.
fn wal_seeds() -> anyhow::Result<Vec<Vec<u8>>> {
    use vitrine_snapshots::wal::{SyncPolicy, Wal, WalConfig, segments};
    let dir = tempfile::tempdir()?;
    let (wal, _) = Wal::open(WalConfig {
        dir: dir.path().join("wal"),
        segment_bytes: 1 << 20,
        policy: SyncPolicy::Never,
        first_sequence: 1,
    })?;
    wal.append(1, b"dlt_0123\n{\"DeleteProducts\":[\"a\"]}".to_vec())?;
    wal.append(2, vec![7; 40])?;
    wal.append(3, b"ann@example.com".to_vec())?;
    wal.close();
    let mut seeds = Vec::new();
    for (_, path) in segments(&dir.path().join("wal"))? {
        seeds.push(std::fs::read(path)?);
    }
    Ok(seeds)
}

/// A state snapshot written by the real code from an account with a little history:
/// (the whole file, its payload).
fn state_seed() -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let account = Arc::new(vitrine_testkit::account(
        vec![vitrine_testkit::zone(
            "Z",
            vitrine_engine::zone::Strategy::Trending,
            4,
        )],
        vitrine_testkit::catalogue(["a", "b"].map(vitrine_testkit::product)),
    ));
    account.serve(vitrine_engine::account::ServeRequest {
        visitor_id: Some("v".into()),
        session_id: None,
        currency: None,
        events: vec![
            Event::PageView {
                page_type: PageType::Homepage,
                product_id: None,
                category_id: Some("c".into()),
                brand_id: None,
            },
            Event::ProductView { id: "a".into() },
            Event::ProductView { id: "b".into() },
        ]
        .into(),
        zones: vec!["Z".into()].into(),
        now: 1_800_000_000_000,
        search: None,
        context: Default::default(),
    });
    let dir = tempfile::tempdir()?;
    let saved = vitrine_ingest::state::write(dir.path(), &account, 3, || Ok(()))?;
    let file = std::fs::read(&saved.path)?;
    let (payload, _) = vitrine_snapshots::snapshot::read_checked(
        &saved.path,
        vitrine_snapshots::snapshot::Kind::State,
    )?;
    Ok((file, payload))
}

/// A JSON seed, for tests that build their corpus in code.
pub fn json_seed(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A minimal serverside request, as a seed.
pub fn serverside_seed() -> Vec<u8> {
    json_seed(
        &json!({"appId": "k", "secretKey": "s", "currentUrl": "https://x/",
        "userAgent": "a", "ip": "1.2.3.4",
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}], "zones": ["Z"]}),
    )
}

/// Reads a serverside body as the server does ([`vitrine_fields::Json`], strings
/// borrowed) and as a `serde_json::Value`, and panics unless both readings agree: the
/// same syntax error, or the same validation errors and the same request. Where the
/// one-pass reader reads the body, it panics unless the whole reading finds no problem
/// and the same credentials and request.
fn serverside_both_ways(input: &[u8]) {
    let value = serde_json::from_slice::<serde_json::Value>(input);
    let arena = vitrine_fields::Bump::new();
    let json = vitrine_fields::Json::parse(input, &arena);
    assert_eq!(
        value.is_ok(),
        json.is_ok(),
        "one reading of a serverside body failed: {value:?} / {json:?}"
    );
    match (&value, &json) {
        (Ok(value), Ok(json)) => {
            let by_value = read_serverside(value);
            let by_json = read_serverside(json);
            assert_eq!(
                by_value, by_json,
                "the two readings of a serverside body differ"
            );
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => {}
    }
    let arena = vitrine_fields::Bump::new();
    let limits = vitrine_http::config::Limits::default();
    if let Some(read) =
        vitrine_http::api::serverside::shape::read(input, &arena, &limits, SERVED_AT)
    {
        // Read in one pass: the whole reader must find no problem and read the same.
        assert!(
            value.is_ok(),
            "a body read in one pass is not JSON to serde_json"
        );
        let Ok(value) = &value else { return };
        let (errors, request) = read_serverside(value);
        assert_eq!(
            (errors, request),
            (Vec::new(), Some(read.request)),
            "the one-pass and whole readings of a serverside body differ"
        );
        let mut errors = Errors::default();
        let presented = Fields::of(value, "", KeyMatch::Exact, &mut errors).and_then(|fields| {
            let endpoint = vitrine_http::routes::Endpoint::Serverside;
            vitrine_http::auth::read(&fields, endpoint, &mut errors)
        });
        let endpoint = vitrine_http::routes::Endpoint::Serverside;
        assert_eq!(
            presented,
            Some(vitrine_http::auth::Presented::with_secret(
                endpoint,
                read.access_key,
                read.secret
            )),
            "the one-pass and whole readings of the credentials differ"
        );
    }
}

/// The time the fuzzed serverside bodies are read at.
const SERVED_AT: i64 = 1_800_000_000_000;

/// What the serverside handler reads of a body before serving it.
fn read_serverside<V: vitrine_fields::JsonValue>(
    body: &V,
) -> (Vec<String>, Option<vitrine_engine::account::ServeRequest>) {
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return (errors.messages(), None);
    };
    let endpoint = vitrine_http::routes::Endpoint::Serverside;
    let _ = vitrine_http::auth::read(&fields, endpoint, &mut errors);
    let limits = vitrine_http::config::Limits::default();
    let request = vitrine_http::api::serverside::parse(
        &fields,
        &limits,
        SERVED_AT,
        vitrine_http::api::serverside::Sender::Store,
        &mut errors,
    );
    (errors.messages(), request)
}
