//! The one-pass reader held to the whole reader.

use vitrine_fields::{Fields, KeyMatch};

use super::*;
use crate::api::serverside::{Sender, parse};
use crate::auth::{self, Presented};

const NOW: UnixMillis = 1_800_000_000_000;

/// What the whole reader (`serde_json`'s document, as the reference) makes of a
/// body: its credentials and request when it finds no problem.
fn whole(body: &[u8]) -> Option<(Presented<'_>, ServeRequest)> {
    let arena = Box::leak(Box::new(Bump::new()));
    let json = Box::leak(Box::new(Json::parse_with_serde(body, arena).ok()?));
    let mut errors = Errors::default();
    let fields = Fields::of(&*json, "", KeyMatch::Exact, &mut errors)?;
    let presented = auth::read(&fields, Endpoint::Serverside, &mut errors);
    let request = parse(&fields, &Limits::default(), NOW, Sender::Store, &mut errors);
    errors.is_empty().then_some((presented?, request?))
}

/// Whether `body` is read in one pass; when it is, the whole reader finds no problem
/// in it and reads the same credentials and request.
fn agrees(body: &[u8]) -> bool {
    let arena = Bump::new();
    let Some(fast) = read(body, &arena, &Limits::default(), NOW) else {
        return false;
    };
    let presented = Presented::with_secret(Endpoint::Serverside, fast.access_key, fast.secret);
    assert_eq!(
        Some((presented, fast.request)),
        whole(body),
        "{}",
        String::from_utf8_lossy(body)
    );
    true
}

fn magento_bodies() -> Vec<Vec<u8>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vendor-requests/magento-serverside.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            // The request as the module wrote it, its members in their order.
            let start = line.find(r#""request": "#).unwrap() + r#""request": "#.len();
            line.as_bytes()[start..line.len() - 1].to_vec()
        })
        .collect()
}

/// Bodies of the shapes every page sends, as the plugins and the load harness write
/// them.
const PAGES: [&str; 8] = [
    r#"{"appId":"k","secretKey":"s","userAgent":"Mozilla/5.0 (X11; Linux x86_64) vitrine-loadtest","ip":"198.51.0.7","visitorId":"lt-7","sessionId":"3f2a","currentUrl":"https://shop.example/p/P0000042","events":[{"name":"page_view","data":{"page_type":"product_page","product_id":"P0000042"}},{"name":"product_view","data":{"id":"P0000042"}}],"zones":["PP-01","PP-02"]}"#,
    r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","visitorId":"v","currency":"USD","currentUrl":"https://shop.example/basket","events":[{"name":"page_view","data":{"page_type":"basket_page"}},{"name":"set_basket","data":{"items":[{"id":"P1","qty":2,"unitprice":12.5},{"id":"P2","qty":1.5,"unitprice":0,"children":[]}]}}],"zones":["BP-01"]}"#,
    r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/search?q=lamp","searchterm":"lamp","referer":"https://www.example.org/x","events":[{"name":"page_view","data":{"page_type":"search_results"}}],"zones":[]}"#,
    "{\n  \"appId\": \"k\",\n  \"secretKey\": \"s\",\n  \"userAgent\": \"curl/8\",\n  \"currentUrl\": \"https:\\/\\/shop.example\\/c\\/lamps?utm_source=mail\",\n  \"events\": [ { \"name\": \"page_view\", \"data\": { \"page_type\": \"category_listing_page\", \"category_id\": \"c\\u00e9\" } } ]\n}",
    r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"magento-admin","ip":"","visitorId":"","sessionId":null,"referer":null,"currency":null,"searchterm":"","events":null,"zones":null,"extra":{"nested":[1,{"a":null}]}}"#,
    r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/","events":[{"name":"set_basket"},{"name":"set_basket","data":null},{"name":"set_basket","data":{"items":null}},{"name":"set_basket","data":[]}]}"#,
    r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/","events":[{"name":"page_view","data":{"page_type":"content_page","product_id":"","brand_id":"b1","extra":[{}]},"extra":true}],"zones":[{"id":"HP-01","data":{"x":1}},"HP-02"]}"#,
    r#"{"secretKey":"s","zones":["Z"],"currentUrl":"https://shop.example/","appId":"k","userAgent":"curl/8","events":[]}"#,
];

/// Every plugin's page body and the harness's are read in one pass, as the whole
/// reader reads them.
#[test]
fn the_pages_plugins_send_are_read_in_one_pass_as_whole() {
    let mut read = 0;
    for body in magento_bodies() {
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let pages = value["events"].as_array().unwrap().iter().all(|event| {
            ["page_view", "product_view", "set_basket"].contains(&event["name"].as_str().unwrap())
        });
        assert_eq!(agrees(&body), pages, "{}", String::from_utf8_lossy(&body));
        read += usize::from(pages);
    }
    assert!(read >= 10, "{read} of the module's bodies are pages");
    for body in PAGES {
        assert!(agrees(body.as_bytes()), "{body}");
    }
}

/// Bodies with a problem, or of a shape read whole, are left to the whole reader.
#[test]
fn other_bodies_are_left_to_the_whole_reader() {
    let page = PAGES[0];
    let swaps: &[(&str, &str)] = &[
        (r#""appId":"k""#, r#""appId":" ""#),
        (r#""appId":"k""#, r#""appId":null"#),
        (r#""secretKey":"s","#, ""),
        (r#""ip":"198.51.0.7""#, r#""ip":"1.2.3""#),
        (r#""visitorId":"lt-7""#, r#""visitorId":"lt 7""#),
        (r#""visitorId":"lt-7""#, r#""visitorId":7"#),
        (
            r#""visitorId":"lt-7""#,
            r#""visitorId":"a","visitorId":"b""#,
        ),
        (
            r#""currentUrl":"https://shop.example/p/P0000042""#,
            r#""currentUrl":"/p""#,
        ),
        (r#""currentUrl":"https://shop.example/p/P0000042","#, ""),
        (
            r#""userAgent":"Mozilla/5.0 (X11; Linux x86_64) vitrine-loadtest","#,
            "",
        ),
        (r#""product_id":"P0000042""#, r#""product_id":42"#),
        (r#""page_type":"product_page""#, r#""page_type":"nowhere""#),
        (r#""page_type":"product_page","#, ""),
        (r#"{"id":"P0000042"}"#, r#"{"id":""}"#),
        (r#"{"id":"P0000042"}"#, "[]"),
        (r#"{"id":"P0000042"}"#, "null"),
        (
            r#""name":"product_view","data":{"id":"P0000042"}"#,
            r#""data":{"id":"P0000042"},"name":"product_view""#,
        ),
        (r#""name":"product_view""#, r#""name":"product_rate""#),
        (r#""name":"product_view""#, r#""name":"order""#),
        (r#""zones":["PP-01","PP-02"]"#, r#""zones":["PP-01",""]"#),
        (r#""zones":["PP-01","PP-02"]"#, r#""zones":"PP-01""#),
        (r#""zones":["PP-01","PP-02"]"#, r#""zones":[{"data":{}}]"#),
        (
            r#""zones":["PP-01","PP-02"]"#,
            r#""zones":[{"id":"A","id":"B"}]"#,
        ),
        (
            r#""sessionId":"3f2a""#,
            r#""sessionId":"3f2a","currency":"XYZ""#,
        ),
        (
            r#""sessionId":"3f2a""#,
            r#""sessionId":"3f2a","searchterm":"ab""#,
        ),
    ];
    for (from, to) in swaps {
        assert!(page.contains(from), "{from}");
        let body = page.replacen(from, to, 1);
        assert!(!agrees(body.as_bytes()), "{body}");
    }
    let basket = PAGES[1];
    for (from, to) in [
        (r#""qty":2"#, r#""qty":0"#),
        (r#""qty":2"#, r#""qty":"2x""#),
        (r#""qty":2"#, r#""qty":"1e2""#),
        (r#""unitprice":12.5"#, r#""unitprice":-1"#),
        (r#""id":"P1","#, ""),
        (r#"{"id":"P1""#, r#"["P1""#),
    ] {
        let body = basket.replacen(from, to, 1);
        assert!(!agrees(body.as_bytes()), "{body}");
    }
    let many_zones = format!(
        r#"{{"appId":"k","secretKey":"s","userAgent":"a","currentUrl":"https://s.example/","zones":[{}]}}"#,
        vec![r#""Z""#; Limits::default().max_zones + 1].join(",")
    );
    assert!(!agrees(many_zones.as_bytes()));
    for tail in [" x", "}", ","] {
        assert!(!agrees(format!("{page}{tail}").as_bytes()));
    }
}

/// Bodies of every shape, bent at random places: wherever one is read in one pass,
/// the whole reader finds no problem and reads the same request.
#[test]
fn bent_bodies_read_in_one_pass_read_as_whole() {
    let mut seeds: Vec<Vec<u8>> = PAGES.iter().map(|p| p.as_bytes().to_vec()).collect();
    seeds.extend(magento_bodies());
    let pieces: [&[u8]; 16] = [
        b"\"",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"null",
        b"0",
        b"-1",
        b"\\u0041",
        b" ",
        b"\"name\"",
        b"\"id\"",
        b"\"\"",
        b"\"page_view\"",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut read = 0;
    for _ in 0..20_000 {
        let mut body = seeds[next(seeds.len())].clone();
        for _ in 0..1 + next(2) {
            let at = next(body.len() + 1);
            match next(3) {
                0 => {
                    let piece = pieces[next(pieces.len())];
                    body.splice(at..at, piece.iter().copied());
                }
                1 if at < body.len() => {
                    let end = (at + 1 + next(8)).min(body.len());
                    body.drain(at..end);
                }
                _ if at < body.len() => body[at] = b' ' + next(95) as u8,
                _ => {}
            }
        }
        read += usize::from(agrees(&body));
    }
    assert!(
        read > 1_000,
        "only {read} bent bodies were read in one pass"
    );
}

/// A key is blank where `str::trim` leaves nothing, whatever its first byte.
#[test]
fn a_blank_key_is_told_as_trim_tells_it() {
    for key in [
        "",
        " ",
        "\t\n",
        "k",
        " k",
        "k ",
        "\u{3000}",
        "\u{3000}k",
        "\u{a0}",
        "é",
        "\u{85}",
        "~",
        "\u{7f}",
        "\u{1}",
    ] {
        assert_eq!(super::not_blank(key), !key.trim().is_empty(), "{key:?}");
    }
}
