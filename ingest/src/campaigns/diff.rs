//! What changed between two versions of the campaign document, for the audit log, a
//! conflict's message and a restore's confirmation: each change as a structured entry
//! ([`changes`]) and all of them as a sentence ([`summary`]).
//!
//! A zone's list changes by campaigns added (at a place), removed, moved (the fewest
//! that explain the new order: those outside the longest run of campaigns that kept
//! their order), paused, resumed, or changed in named fields (`segment`, `schedule`,
//! `content`, `filters`, `pins`, `boosts`, `minItems`, `name`, `title`, ...); a list
//! removed sends the zone back to its configuration. Segments are added, removed or
//! changed (`name`, `rule`).

use serde_json::{Map, Value, json};

/// The parts of a campaign's content named on their own.
const CONTENT_PARTS: [&str; 3] = ["filters", "pins", "boosts"];

/// Every change from `before` to `after`, segments first, then zones by id.
pub fn changes(before: &Value, after: &Value) -> Vec<Value> {
    let mut found = Vec::new();
    segments(before, after, &mut found);
    let mut zones: Vec<&String> = Vec::new();
    for map in [before, after]
        .iter()
        .filter_map(|d| d.get("zones").and_then(Value::as_object))
    {
        zones.extend(
            map.keys()
                .filter(|k| !zones.contains(k))
                .collect::<Vec<_>>(),
        );
    }
    zones.sort();
    for zone in zones {
        let list = |d: &Value| {
            d.get("zones")
                .and_then(|z| z.get(zone))
                .and_then(|p| p.get("campaigns"))
                .and_then(Value::as_array)
                .cloned()
        };
        zone_changes(zone, list(before), list(after), &mut found);
    }
    found
}

/// The changes as one sentence ("no change" when there are none).
pub fn summary(before: &Value, after: &Value) -> String {
    sentence(&changes(before, after))
}

/// Changes as one sentence: each part's changes after its name.
pub fn sentence(changes: &[Value]) -> String {
    let mut parts: Vec<(String, Vec<String>)> = Vec::new();
    for change in changes {
        let part = match change.get("zone").and_then(Value::as_str) {
            Some(zone) => format!("zone {zone}"),
            None => "segments".to_owned(),
        };
        let text = describe(change);
        match parts.iter_mut().find(|(p, _)| *p == part) {
            Some((_, texts)) => texts.push(text),
            None => parts.push((part, vec![text])),
        }
    }
    if parts.is_empty() {
        return "no change".to_owned();
    }
    parts
        .into_iter()
        .map(|(part, texts)| format!("{part}: {}", texts.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe(change: &Value) -> String {
    let text = |key: &str| {
        change.get(key).map_or(String::new(), |v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let fields = || {
        change
            .get("fields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    if let Some(segment) = change.get("segment").and_then(Value::as_str)
        && change.get("zone").is_none()
    {
        return match text("change").as_str() {
            "changed" => format!("segment {segment} changed ({})", fields()),
            verb => format!("segment {segment} {verb}"),
        };
    }
    let campaign = text("campaign");
    match text("change").as_str() {
        "added" => format!("campaign {campaign} added at place {}", text("place")),
        "removed" => format!("campaign {campaign} removed from place {}", text("place")),
        "moved" => format!(
            "campaign {campaign} moved from place {} to {}",
            text("from"),
            text("to")
        ),
        "changed" => format!("campaign {campaign} changed ({})", fields()),
        "listRemoved" => "list removed: filled as configured".to_owned(),
        verb => format!("campaign {campaign} {verb}"),
    }
}

fn segments(before: &Value, after: &Value, found: &mut Vec<Value>) {
    let list = |d: &Value| {
        d.pointer("/segments/list")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (was, now) = (list(before), list(after));
    let id = |s: &Value| s.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
    for old in &was {
        match now.iter().find(|s| id(s) == id(old)) {
            None => {
                found.push(json!({"part": "segments", "change": "removed", "segment": id(old)}))
            }
            Some(new) => {
                let fields = changed_fields(old, new, &["id"]);
                if !fields.is_empty() {
                    found.push(json!({"part": "segments", "change": "changed", "segment": id(old), "fields": fields}));
                }
            }
        }
    }
    for new in now.iter().filter(|s| !was.iter().any(|o| id(o) == id(s))) {
        found.push(json!({"part": "segments", "change": "added", "segment": id(new)}));
    }
}

fn zone_changes(
    zone: &str,
    was: Option<Vec<Value>>,
    now: Option<Vec<Value>>,
    found: &mut Vec<Value>,
) {
    let part = format!("zone:{zone}");
    let entry = |change: &str, extra: Value| {
        let mut entry = json!({"part": part, "zone": zone, "change": change});
        if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
            entry.extend(extra);
        }
        entry
    };
    let (was, now) = match (was, now) {
        (Some(_), None) => {
            found.push(entry("listRemoved", json!({})));
            return;
        }
        (None, None) => return,
        (was, now) => (was.unwrap_or_default(), now.unwrap_or_default()),
    };
    let id = |c: &Value| c.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
    let place_of = |list: &[Value], wanted: &str| list.iter().position(|c| id(c) == wanted);
    for (at, old) in was.iter().enumerate() {
        if place_of(&now, &id(old)).is_none() {
            found.push(entry(
                "removed",
                json!({"campaign": id(old), "place": at + 1}),
            ));
        }
    }
    for (at, new) in now.iter().enumerate() {
        if place_of(&was, &id(new)).is_none() {
            found.push(entry(
                "added",
                json!({"campaign": id(new), "place": at + 1}),
            ));
        }
    }
    // The campaigns in both, in the new order, with their old places: those outside the
    // longest run that kept its order moved.
    let common: Vec<(usize, usize, &Value, &Value)> = now
        .iter()
        .enumerate()
        .filter_map(|(to, new)| {
            let from = place_of(&was, &id(new))?;
            Some((from, to, was.get(from)?, new))
        })
        .collect();
    let kept = longest_increasing(&common.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>());
    for (at, (from, to, _, new)) in common.iter().enumerate() {
        if !kept.contains(&at) {
            found.push(entry(
                "moved",
                json!({"campaign": id(new), "from": from + 1, "to": to + 1}),
            ));
        }
    }
    let enabled = |c: &Value| c.get("enabled").and_then(Value::as_bool).unwrap_or(true);
    for (_, _, old, new) in &common {
        match (enabled(old), enabled(new)) {
            (true, false) => found.push(entry("paused", json!({"campaign": id(old)}))),
            (false, true) => found.push(entry("resumed", json!({"campaign": id(old)}))),
            _ => {}
        }
        let fields = changed_fields(old, new, &["id", "enabled"]);
        if !fields.is_empty() {
            found.push(entry(
                "changed",
                json!({"campaign": id(old), "fields": fields}),
            ));
        }
    }
}

/// The names of the fields that differ between two objects, `skip` left out; a
/// campaign's content is `content`, and its filters, pins and boosts each by name.
fn changed_fields(old: &Value, new: &Value, skip: &[&str]) -> Vec<String> {
    let empty = Map::new();
    let (old, new) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut fields = Vec::new();
    for key in keys.into_iter().filter(|k| !skip.contains(&k.as_str())) {
        let (a, b) = (old.get(key), new.get(key));
        if key == "content" {
            let without = |c: Option<&Value>| {
                let mut c = c.cloned().unwrap_or(Value::Null);
                if let Some(map) = c.as_object_mut() {
                    for part in CONTENT_PARTS {
                        map.remove(part);
                    }
                }
                c
            };
            if without(a) != without(b) {
                fields.push("content".to_owned());
            }
            for part in CONTENT_PARTS {
                let of = |c: Option<&Value>| c.and_then(|c| c.get(part)).cloned();
                if of(a) != of(b) {
                    fields.push(part.to_owned());
                }
            }
        } else if a != b {
            fields.push(key.clone());
        }
    }
    fields
}

/// The positions (in `moves`, each an old and a new place, in the new order) of one
/// longest run whose old places increase: the campaigns that kept their order. Of runs
/// as long, the one whose campaigns moved the least (so that a campaign dragged to the
/// top is the one said to move, not the ones it passed). Quadratic: a list holds at
/// most 50 campaigns.
fn longest_increasing(moves: &[(usize, usize)]) -> Vec<usize> {
    let shift = |(from, to): &(usize, usize)| from.abs_diff(*to);
    // For each position: the run ending there (its length, how far its campaigns moved)
    // and the position before it in that run.
    let mut best: Vec<((usize, usize), Option<usize>)> = Vec::with_capacity(moves.len());
    for (i, one) in moves.iter().enumerate() {
        let before = moves
            .iter()
            .zip(&best)
            .enumerate()
            .take(i)
            .filter(|(_, (earlier, _))| earlier.0 < one.0)
            .max_by_key(|(_, (_, ((length, moved), _)))| (*length, std::cmp::Reverse(*moved)))
            .map(|(j, (_, (score, _)))| (j, *score));
        best.push(match before {
            Some((j, (length, moved))) => ((length + 1, moved + shift(one)), Some(j)),
            None => ((1, shift(one)), None),
        });
    }
    let mut at = best
        .iter()
        .enumerate()
        .max_by_key(|(_, ((length, moved), _))| (*length, std::cmp::Reverse(*moved)))
        .map(|(i, _)| i);
    let mut run = Vec::new();
    while let Some(i) = at {
        run.push(i);
        at = best.get(i).and_then(|(_, previous)| *previous);
    }
    run.reverse();
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(segments: Value, zones: Value) -> Value {
        json!({"segments": {"version": 1, "list": segments}, "zones": zones})
    }

    fn campaign(id: &str, extra: Value) -> Value {
        let mut c =
            json!({"id": id, "content": {"type": "custom", "source": {"strategy": "trending"}}});
        if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), extra) {
            c.extend(extra);
        }
        c
    }

    #[test]
    fn a_list_change_is_named_campaign_by_campaign() {
        let before = doc(
            json!([{"id": "s", "rule": {"visitor": "new"}}, {"id": "gone", "rule": {"visitor": "new"}}]),
            json!({"HP-01": {"version": 1, "campaigns": [
                campaign("a", json!({})), campaign("b", json!({})), campaign("c", json!({})),
                campaign("d", json!({"content": {"type": "custom", "source": {"strategy": "trending"}, "pins": [{"product": "p", "place": 1}]}})),
            ]}, "PP-01": {"version": 1, "campaigns": [campaign("x", json!({}))]}}),
        );
        let after = doc(
            json!([{"id": "s", "rule": {"visitor": "returning"}}, {"id": "new", "rule": {"visitor": "new"}}]),
            json!({"HP-01": {"version": 2, "campaigns": [
                campaign("c", json!({})), campaign("a", json!({"enabled": false})),
                campaign("d", json!({"segment": "s"})), campaign("e", json!({})),
            ]}, "PP-01": {"version": 2}}),
        );
        assert_eq!(
            summary(&before, &after),
            "segments: segment s changed (rule), segment gone removed, segment new added; \
             zone HP-01: campaign b removed from place 2, campaign e added at place 4, \
             campaign c moved from place 3 to 1, campaign a paused, \
             campaign d changed (pins, segment); \
             zone PP-01: list removed: filled as configured"
        );
        let moved = changes(&before, &after)
            .into_iter()
            .find(|c| c["change"] == "moved")
            .unwrap();
        assert_eq!(
            moved,
            json!({"part": "zone:HP-01", "zone": "HP-01", "change": "moved", "campaign": "c", "from": 3, "to": 1})
        );
        assert_eq!(summary(&after, &after), "no change");
    }

    #[test]
    fn the_longest_run_that_kept_its_order_did_not_move() {
        // c dragged from the third place to the first: c moved, not a and b.
        assert_eq!(longest_increasing(&[(2, 0), (0, 1), (1, 2)]), vec![1, 2]);
        assert_eq!(longest_increasing(&[(0, 0), (1, 1), (2, 2)]), vec![0, 1, 2]);
        assert_eq!(longest_increasing(&[]), Vec::<usize>::new());
        // a dragged from the first place to the last: a moved.
        assert_eq!(longest_increasing(&[(1, 0), (2, 1), (0, 2)]), vec![0, 1]);
    }
}
