//! What the merchandiser's console reads beside the campaign endpoints, with the real
//! server: the catalogue search its pickers use (best matches first, every bad
//! parameter named, a viewer may search).

use serde_json::Value;

use crate::campaigns::{EDITOR, VIEWER, admin, store};

fn found(server: &crate::common::Server, query: &str, token: &str) -> Value {
    let resp = admin(
        server,
        "GET",
        &format!("/catalogue?{query}"),
        token,
        None,
        &[],
    );
    assert_eq!(resp.status, 200, "{query}: {}", resp.body);
    resp.json()
}

fn ids(answer: &Value) -> Vec<&str> {
    answer["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect()
}

#[test]
fn the_catalogue_search_finds_products_categories_and_brands_best_first() {
    let server = store(Vec::new());
    // An id, case aside, is the best match; ids that begin with the text come next.
    let s2 = found(&server, "q=s2", EDITOR);
    assert_eq!(ids(&s2), ["S2"], "{s2}");
    assert_eq!(s2["total"], 1);
    let shoes = found(&server, "q=S&limit=3", VIEWER);
    assert_eq!(ids(&shoes), ["S1", "S2", "S3"], "{shoes}");
    assert_eq!(
        shoes["total"], 5,
        "every product whose id begins with S: {shoes}"
    );
    let first = &shoes["found"][0];
    assert_eq!(first["title"], "Product S1", "{shoes}");
    // Categories and brands, by the ids products name.
    let bags = found(&server, "q=ba&kind=categories", EDITOR);
    assert_eq!(ids(&bags), ["bags"], "{bags}");
    assert_eq!(bags["kind"], "categories");
    let brands = found(&server, "q=zen&kind=brands", EDITOR);
    assert_eq!(ids(&brands), ["zenith"], "{brands}");
    assert_eq!(found(&server, "q=nothing-like-it", EDITOR)["total"], 0);

    // Every bad parameter is named.
    for (query, named) in [
        ("", "q: required"),
        ("q=%20", "q: required"),
        (
            "q=a&kind=shoes",
            "kind: expected one of products, categories, brands",
        ),
        ("q=a&limit=0", "limit: expected 1 to 100"),
        ("q=a&limit=101", "limit: expected 1 to 100"),
        ("q=a&limit=x", "limit: expected 1 to 100"),
        ("q=a&page=2", "page: unknown query parameter"),
        ("q=a&q=b", "q: given twice"),
    ] {
        let resp = admin(
            &server,
            "GET",
            &format!("/catalogue?{query}"),
            EDITOR,
            None,
            &[],
        );
        assert_eq!(resp.status, 400, "{query}: {}", resp.body);
        assert!(resp.body.contains(named), "{query}: {}", resp.body);
    }
    let long = "x".repeat(201);
    let resp = admin(
        &server,
        "GET",
        &format!("/catalogue?q={long}"),
        EDITOR,
        None,
        &[],
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(
        resp.body.contains("q: at most 200 characters"),
        "{}",
        resp.body
    );
}
