//! The configuration's validation, key by key.
use super::*;
use vitrine_engine::models::ModelSettings;
use vitrine_engine::zone::{
    DEFAULT_CONTENT, DEFAULT_HISTORY, DEFAULT_LONG_TERM, DEFAULT_RECENCY, Strategy,
};

const MINIMAL: &str = r#"
        [[accounts]]
        access_key = "k1"
        secret_key = "secret-1234"
        default_currency = "GBP"
          [[accounts.zones]]
          id = "HP-01"
          title = "Trending"
          type = "recommender-product"
          strategy = "trending"
    "#;

fn fails(text: &str) -> String {
    parse(text, "test.toml", &Overrides::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn demo_config_is_valid() {
    let config = demo(&Overrides::default()).unwrap();
    assert_eq!(config.accounts.len(), 1);
    let ids: Vec<&str> = config.accounts[0]
        .zones
        .iter()
        .map(|z| z.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "HP-01", "PP-01", "PP-02", "BP-01", "OC-01", "CP-01", "SR-01"
        ]
    );
    assert!(config.accounts[0].demo_catalogue);
}

#[test]
fn overrides_win_over_the_file() {
    let text = format!("listen = \"127.0.0.1:1\"\ndata_dir = \"d\"\n{MINIMAL}");
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        data_dir: Some("/tmp/x".into()),
    };
    let config = parse(&text, "t", &overrides).unwrap();
    assert_eq!(config.listen.port(), 0);
    assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
    let config = parse(&text, "t", &Overrides::default()).unwrap();
    assert_eq!(config.listen.port(), 1);
}

#[test]
fn the_cluster_table_is_checked() {
    let cluster = |body: &str| format!("{MINIMAL}\n[cluster]\n{body}\n");
    let config = parse(
        &cluster("servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\""),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    let settings = config.cluster.unwrap().settings;
    assert_eq!(settings.servers, ["nats://127.0.0.1:4222"]);
    assert_eq!((settings.replicas, settings.ready_lag), (3, 0));
    assert!(settings.accounts.is_empty());
    assert!(
        parse(MINIMAL, "t", &Overrides::default())
            .unwrap()
            .cluster
            .is_none()
    );
    assert!(fails(&cluster("node = \"a\"")).contains("cluster.servers: give at least one"));
    assert!(
        fails(&cluster(
            "servers = [\"http://127.0.0.1:4222\"]\nnode = \"a\""
        ))
        .contains("cluster.servers[0]: expected a NATS URL")
    );
    assert!(
        fails(&cluster("servers = [\"nats://127.0.0.1:4222\"]"))
            .contains("cluster.node: expected 1 to 64 letters")
    );
    assert!(
        fails(&cluster(
            "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a b\""
        ))
        .contains("cluster.node")
    );
    assert!(
        fails(&cluster(
            "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\nreplicas = 7"
        ))
        .contains("cluster.replicas: must be between 1 and 5")
    );
    assert!(
        fails(&cluster(
            "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\naccounts = [\"nobody\"]"
        ))
        .contains("cluster.accounts[0]: no [[accounts]] entry has the access key \"nobody\"")
    );
    assert!(
        fails(&cluster(
            "servers = [\"nats://h:1\"]\nnode = \"a\"\nbogus = 1"
        ))
        .contains("unknown field")
    );
}

#[test]
fn admin_tokens_and_the_attribution_window_are_checked() {
    let admin = |tokens: &str| format!("{MINIMAL}\n[admin]\ntokens = [{tokens}]\n");
    let config = parse(
        &admin("\"a-long-enough-admin-token-1\""),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        config.admin_tokens,
        [AdminToken {
            token: "a-long-enough-admin-token-1".to_owned(),
            role: AdminRole::Editor,
            label: "tokens[0]".to_owned(),
        }]
    );
    assert_eq!(config.accounts[0].attribution_days, 7);
    let roles = parse(
        &admin(
            "\"a-long-enough-admin-token-1\", { token = \"a-long-enough-admin-token-2\", role = \"viewer\", label = \"merchandising\" }",
        ),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(roles.admin_tokens[1].role, AdminRole::Viewer);
    assert_eq!(roles.admin_tokens[1].label, "merchandising");
    assert_eq!(
        fails(&admin(
            "{ token = \"a-long-enough-admin-token-2\", role = \"owner\" }"
        )),
        "test.toml: admin.tokens[0].role: expected \"editor\" or \"viewer\", got \"owner\""
    );
    assert_eq!(
        fails(&MINIMAL.replace(
            "default_currency = \"GBP\"",
            "default_currency = \"GBP\"\ntime_zone = \"Mars/Olympus\""
        )),
        "test.toml: accounts[0].time_zone: \"Mars/Olympus\" is not an IANA time zone (such as \"Europe/London\")"
    );
    assert_eq!(
        fails(&admin("\"short\"")),
        "test.toml: admin.tokens[0]: must be at least 24 characters, got 5"
    );
    assert!(fails(&admin("\"a long enough admin token 1\"")).contains("without spaces"));
    let store_key = MINIMAL.replace("secret-1234", "a-secret-key-long-as-a-token");
    assert_eq!(
        fails(&format!(
            "{store_key}\n[admin]\ntokens = [\"a-secret-key-long-as-a-token\"]\n"
        )),
        "test.toml: admin.tokens[0]: must not be an account's access key or secret key"
    );
    assert!(
        fails(&admin(
            "\"a-long-enough-admin-token-1\", \"a-long-enough-admin-token-1\""
        ))
        .contains("admin.tokens[1]: is given twice")
    );
    let window = |days: u32| {
        MINIMAL.replace(
            "default_currency = \"GBP\"",
            &format!("default_currency = \"GBP\"\nattribution_days = {days}"),
        )
    };
    let config = parse(&window(30), "t", &Overrides::default()).unwrap();
    assert_eq!(config.accounts[0].attribution_days, 30);
    assert!(fails(&window(0)).contains("accounts[0].attribution_days: must be between 1 and 90"));
}

#[test]
fn experiments_are_checked_against_the_zones() {
    let with = |experiments: &str| format!("{MINIMAL}\n{experiments}");
    let two = r#"
        [[accounts.experiments]]
        id = "hp-test"
        zone = "HP-01"
        start = "2026-11-01"
        end = "2026-12-01"
          [[accounts.experiments.variants]]
          name = "control"
          [[accounts.experiments.variants]]
          name = "top"
          strategy = "top_sellers"
          count = 4
          weight = 3
        "#;
    let config = parse(&with(two), "t", &Overrides::default()).unwrap();
    let experiment = &config.accounts[0].experiments[0];
    assert_eq!(experiment.zone, "HP-01");
    assert_eq!(experiment.start, Some(1_793_491_200_000));
    assert_eq!(
        experiment.variants[0].spec.strategy,
        Some(Strategy::Trending)
    );
    assert_eq!(experiment.variants[0].weight, 1);
    assert_eq!(
        experiment.variants[1].spec.strategy,
        Some(Strategy::TopSellers)
    );
    assert_eq!(experiment.variants[1].spec.count, 4);
    assert_eq!(experiment.variants[1].weight, 3);
    // A variant sets the model keys its strategy reads, checked as a zone's are.
    let personal = two.replace(
        "\"top_sellers\"",
        "\"personalized\"\n          content = 0.5",
    );
    let config = parse(&with(&personal), "t", &Overrides::default()).unwrap();
    assert_eq!(
        config.accounts[0].experiments[0].variants[1]
            .spec
            .recipe
            .content,
        0.5
    );
    assert!(
        fails(&with(
            &two.replace("count = 4", "count = 4\n          content = 0.5")
        ))
        .contains("accounts[0].experiments[0].variants[1].content: only blends mix content")
    );
    let fails_with = |from: &str, to: &str| fails(&with(&two.replace(from, to)));
    assert!(
        fails_with("zone = \"HP-01\"", "zone = \"NOPE\"").contains(
            "accounts[0].experiments[0].zone: no zone \"NOPE\"; the account's zones: HP-01"
        )
    );
    assert!(
        fails_with("\"top_sellers\"", "\"nope\"")
            .contains("accounts[0].experiments[0].variants[1].strategy: unknown strategy \"nope\"")
    );
    assert!(fails_with("\"top_sellers\"", "\"category_affinity\"").contains(
            "accounts[0].experiments[0].variants[1].strategy: strategy \"category_affinity\" does not fill recommender-product zones"
        ));
    assert!(fails_with("weight = 3", "weight = 0").contains(
        "accounts[0].experiments[0].variants[1].weight: must be between 1 and 10000, got 0"
    ));
    assert!(
        fails_with("name = \"top\"", "name = \"control\"")
            .contains("variants[1].name: variant \"control\" is given twice")
    );
    assert!(
        fails_with("end = \"2026-12-01\"", "end = \"2026-10-01\"")
            .contains("accounts[0].experiments[0].end: must be after start")
    );
    assert!(
        fails_with("start = \"2026-11-01\"", "start = \"soon\"").contains(
            "experiments[0].start: expected a date (YYYY-MM-DD) or an RFC 3339 time, got \"soon\""
        )
    );
    let one_variant = two
        .split("[[accounts.experiments.variants]]\n          name = \"top\"")
        .next()
        .unwrap();
    assert!(
        fails(&with(one_variant))
            .contains("experiments[0].variants: expected 2 to 8 variants, got 1")
    );
    // Two experiments on one zone at once: an error; one after the other: fine.
    let second = two.replace("hp-test", "hp-later");
    assert!(fails(&with(&format!("{two}{second}"))).contains(
            "accounts[0].experiments[1].zone: zone \"HP-01\" is already in experiment \"hp-test\" at the same time"
        ));
    let later = second
        .replace("2026-11-01", "2026-12-01")
        .replace("end = \"2026-12-01\"", "end = \"2027-01-01\"");
    assert_eq!(
        parse(&with(&format!("{two}{later}")), "t", &Overrides::default())
            .unwrap()
            .accounts[0]
            .experiments
            .len(),
        2
    );
}

#[test]
fn errors_name_file_key_and_problem() {
    assert_eq!(
        fails(&MINIMAL.replace("\"trending\"", "\"nope\"")),
        "test.toml: accounts[0].zones[0].strategy: unknown strategy \"nope\"; available: \
             trending, top_sellers, recently_viewed, new_arrivals, on_offer, category_top, similar, \
             viewed_together, bought_together, complete_the_look, associated, personalized, \
             similar_sessions, basket_cross_sell, buy_again, category_affinity, brand_affinity"
    );
    assert!(fails(&MINIMAL.replace("\"GBP\"", "\"gbp\"")).starts_with(
        "test.toml: accounts[0].default_currency: expected a three-letter upper-case ISO 4217 code"
    ));
    assert!(
        fails(&format!("{MINIMAL}\n count = 0"))
            .contains("accounts[0].zones[0].count: must be between 1 and 100, got 0")
    );
    assert!(fails(&format!("bogus = 1\n{MINIMAL}")).contains("unknown field `bogus`"));
    assert!(fails(&format!("{MINIMAL}\n history = 5")).contains(
        "accounts[0].zones[0].history: only the personalized strategy starts from the \
             visitor's history"
    ));
    let personalized = MINIMAL.replace("\"trending\"", "\"personalized\"");
    assert!(
        fails(&format!("{personalized}\n history = 0"))
            .contains("accounts[0].zones[0].history: must be between 1 and 50, got 0")
    );
    let config = parse(
        &format!("{personalized}\n history = 20"),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(config.accounts[0].zones[0].recipe.history, 20);
    let config = parse(&personalized, "t", &Overrides::default()).unwrap();
    assert_eq!(config.accounts[0].zones[0].recipe.history, DEFAULT_HISTORY);
    assert_eq!(config.accounts[0].zones[0].recipe.recency, DEFAULT_RECENCY);
    assert_eq!(
        config.accounts[0].zones[0].recipe.long_term,
        DEFAULT_LONG_TERM
    );
    let config = parse(
        &format!("{personalized}\n recency = 0.5\n long_term = 0"),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(config.accounts[0].zones[0].recipe.recency, 0.5);
    assert_eq!(config.accounts[0].zones[0].recipe.long_term, 0.0);
    for (line, error) in [
        (
            "recency = 0",
            "accounts[0].zones[0].recency: must be greater than 0 and at most 1, got 0",
        ),
        (
            "recency = 1.25",
            "accounts[0].zones[0].recency: must be greater than 0 and at most 1, got 1.25",
        ),
        (
            "long_term = -1",
            "accounts[0].zones[0].long_term: must be between 0 and 100, got -1",
        ),
        (
            "long_term = inf",
            "accounts[0].zones[0].long_term: must be between 0 and 100",
        ),
    ] {
        assert!(
            fails(&format!("{personalized}\n {line}")).contains(error),
            "{line}"
        );
    }
    assert!(fails(&format!("{MINIMAL}\n recency = 0.5")).contains(
        "accounts[0].zones[0].recency: only the personalized, viewed_together and \
             bought_together strategies weigh the visitor's history"
    ));
    let together = MINIMAL.replace("\"trending\"", "\"viewed_together\"");
    let config = parse(
        &format!("{together}\n context = 5\n recency = 0.5"),
        "t",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(config.accounts[0].zones[0].recipe.context, 5);
    assert_eq!(config.accounts[0].zones[0].recipe.recency, 0.5);
    assert_eq!(
        parse(&together, "t", &Overrides::default())
            .unwrap()
            .accounts[0]
            .zones[0]
            .recipe
            .context,
        0
    );
    assert!(
        fails(&format!("{together}\n context = 51"))
            .contains("accounts[0].zones[0].context: must be between 0 and 50, got 51")
    );
    assert!(fails(&format!("{personalized}\n context = 2")).contains(
        "accounts[0].zones[0].context: only the viewed_together and bought_together \
             strategies read the visitor's history"
    ));
    assert!(
        fails(&format!("{together}\n long_term = 1"))
            .contains("accounts[0].zones[0].long_term: only the personalized strategy")
    );
    // `content`: the blending strategies only, 0..1, 0 by default.
    assert_eq!(config.accounts[0].zones[0].recipe.content, DEFAULT_CONTENT);
    let cross_sell = MINIMAL.replace("\"trending\"", "\"basket_cross_sell\"");
    let together_blended = format!("{together}\n context = 3");
    for zone in [&personalized, &together_blended, &cross_sell] {
        let config = parse(
            &format!("{zone}\n content = 0.25"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.accounts[0].zones[0].recipe.content, 0.25);
    }
    assert!(
        fails(&format!("{together_blended}\n content = 1.5"))
            .contains("accounts[0].zones[0].content: must be between 0 and 1, got 1.5")
    );
    assert!(fails(&format!("{together}\n content = 0.5")).contains(
        "accounts[0].zones[0].content: only blends mix content with pairs: personalized, \
             basket_cross_sell, and viewed_together or bought_together with context above 0"
    ));
    assert!(
        fails(&format!("{personalized}\n content = -0.1"))
            .contains("accounts[0].zones[0].content: must be between 0 and 1, got -0.1")
    );
    assert!(
        fails(&format!("{MINIMAL}\n content = 0.1"))
            .contains("accounts[0].zones[0].content: only blends mix content with pairs")
    );
    // `sessions`: personalized only, 0..10, 0 by default; similar_sessions a strategy.
    assert_eq!(config.accounts[0].zones[0].recipe.sessions, 0.0);
    let config_with = |zone: &str| parse(zone, "t", &Overrides::default()).unwrap();
    assert_eq!(
        config_with(&format!("{personalized}\n sessions = 1.5")).accounts[0].zones[0]
            .recipe
            .sessions,
        1.5
    );
    assert!(
        fails(&format!("{personalized}\n sessions = 11"))
            .contains("accounts[0].zones[0].sessions: must be between 0 and 10, got 11")
    );
    assert!(
        fails(&format!("{together}\n sessions = 1"))
            .contains("accounts[0].zones[0].sessions: only the personalized strategy")
    );
    // `popularity` likewise.
    assert_eq!(config.accounts[0].zones[0].recipe.popularity, 0.0);
    assert_eq!(
        config_with(&format!("{personalized}\n popularity = 0.5")).accounts[0].zones[0]
            .recipe
            .popularity,
        0.5
    );
    assert!(
        fails(&format!("{personalized}\n popularity = -1"))
            .contains("accounts[0].zones[0].popularity: must be between 0 and 10, got -1")
    );
    assert!(
        fails(&format!("{MINIMAL}\n popularity = 1"))
            .contains("accounts[0].zones[0].popularity: only the personalized strategy")
    );
    // `purchases` likewise, between 0 and 1.
    assert_eq!(config.accounts[0].zones[0].recipe.purchases, 0.25);
    assert_eq!(
        config_with(&format!("{personalized}\n purchases = 0")).accounts[0].zones[0]
            .recipe
            .purchases,
        0.0
    );
    assert!(
        fails(&format!("{personalized}\n purchases = 1.5"))
            .contains("accounts[0].zones[0].purchases: must be between 0 and 1, got 1.5")
    );
    assert!(
        fails(&format!("{MINIMAL}\n purchases = 1"))
            .contains("accounts[0].zones[0].purchases: only the personalized strategy")
    );
    let sessions_zone = MINIMAL.replace("\"trending\"", "\"similar_sessions\"");
    assert_eq!(
        config_with(&sessions_zone).accounts[0].zones[0].strategy,
        Some(vitrine_engine::zone::Strategy::SimilarSessions)
    );
    assert_eq!(config.accounts[0].models, ModelSettings::default());
    assert!(
        fails(&format!("region = \"asia\"\n{MINIMAL}"))
            .contains("test.toml: region: expected \"eu\" or \"us\"")
    );
    assert!(fails("listen = \"nowhere\"\n").contains("test.toml: listen: expected an address"));
    assert!(
        fails(&format!(
            "[feeds]\nbackground_priority = \"high\"\n{MINIMAL}"
        ))
        .contains(
            "test.toml: feeds.background_priority: expected \"lowest\" or \"normal\", got \"high\""
        )
    );
    assert!(
        fails(&format!("[feeds]\nstream_listen = \"here\"\n{MINIMAL}"))
            .contains("test.toml: feeds.stream_listen: expected an address")
    );
    assert!(
        fails(&format!("[limits]\nheader_read_timeout_ms = 5\n{MINIMAL}"))
            .contains("limits.header_read_timeout_ms: must be between 100 and 600000, got 5")
    );
    assert!(fails("").contains("test.toml: accounts: at least one [[accounts]] entry is required"));
    assert_eq!(
        fails(&MINIMAL.replace("\"trending\"", "\"category_affinity\"")),
        "test.toml: accounts[0].zones[0].strategy: strategy \"category_affinity\" does not \
             fill recommender-product zones; use one of trending, top_sellers, recently_viewed, \
             new_arrivals, on_offer, category_top, similar, viewed_together, bought_together, \
             complete_the_look, associated, personalized, similar_sessions, basket_cross_sell, \
             buy_again"
    );
    assert!(
        fails(&MINIMAL.replace("\"recommender-product\"", "\"recommender-brand\"")).contains(
            "strategy \"trending\" does not fill recommender-brand zones; use one of brand_affinity"
        )
    );
    assert!(
        fails(&format!("[limits]\nmax_events = 0\n{MINIMAL}"))
            .contains("test.toml: limits.max_events: must be between 1 and 10000, got 0")
    );
    let image = MINIMAL
        .replace("\"recommender-product\"", "\"image\"")
        .replace("strategy = \"trending\"", "");
    assert_eq!(
        fails(&image),
        "test.toml: accounts[0].zones[0].images: at least one image is required"
    );
    assert!(
        fails(&MINIMAL.replace("\"recommender-product\"", "\"image\""))
            .contains("zones[0].strategy: image zones show their configured images")
    );
    let two = format!("{image}  images = [{{ url = \"/a.jpg\" }}, {{ url = \"/b.jpg\" }}]\n");
    assert!(fails(&two).contains("an image zone shows one image, got 2"));
    assert!(
        parse(
            &two.replace("\"image\"", "\"carousel\""),
            "t",
            &Overrides::default()
        )
        .is_ok()
    );
    assert!(
        fails(&format!("{image}  images = [{{ url = \" \" }}]\n"))
            .contains("zones[0].images[0].url: must not be empty")
    );
    let html = MINIMAL.replace("\"recommender-product\"", "\"html\"");
    assert!(fails(&html).contains("zones[0].template: required for html zones"));
    assert!(
        fails(&format!("{html}  template = \"{{% for x in %}}\"\n"))
            .contains("zones[0].template: not a valid template")
    );
    assert!(
        fails(&format!("{MINIMAL}  template = \"<p/>\"\n"))
            .contains("recommender-product zones have no template")
    );
    let twice = format!(
        "{MINIMAL}{}",
        MINIMAL.replace("access_key = \"k1\"", "access_key = \"k2\"")
    );
    assert!(parse(&twice, "t", &Overrides::default()).is_ok());
    let dup = format!("{MINIMAL}{MINIMAL}");
    assert!(fails(&dup).contains("accounts[1].access_key: \"k1\" is used by an earlier account"));
}

mod models;
