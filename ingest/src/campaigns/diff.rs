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

use serde::Serialize;
use serde_json::Value;
use vitrine_engine::campaign::document::{CampaignDefinition, CampaignDocument, SegmentDefinition};

/// The parts of a campaign's content named on their own.
const CONTENT_PARTS: [&str; 3] = ["filters", "pins", "boosts"];

/// One change between two versions (as the history and a restore's preview answer it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The part: `segments` or `zone:<id>`.
    pub part: String,
    /// The zone, for a change of a zone's list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// What happened.
    pub change: ChangeKind,
    /// The campaign it happened to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    /// The segment it happened to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// Where a campaign was added or removed (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<usize>,
    /// Where a moved campaign was (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Where a moved campaign is (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<usize>,
    /// The fields that changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<&'static str>,
}

/// What happened to a campaign, a segment or a zone's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    /// Added.
    Added,
    /// Removed.
    Removed,
    /// Moved to another place.
    Moved,
    /// Paused.
    Paused,
    /// Resumed.
    Resumed,
    /// Changed in [`Change::fields`].
    Changed,
    /// The zone's list removed: the zone is filled as configured.
    ListRemoved,
}

impl Change {
    fn of_zone(zone: &str, change: ChangeKind) -> Self {
        Change {
            part: format!("zone:{zone}"),
            zone: Some(zone.to_owned()),
            change,
            campaign: None,
            segment: None,
            place: None,
            from: None,
            to: None,
            fields: Vec::new(),
        }
    }

    fn of_segment(segment: &str, change: ChangeKind) -> Self {
        Change {
            part: "segments".to_owned(),
            zone: None,
            segment: Some(segment.to_owned()),
            ..Change::of_zone("", change)
        }
    }

    fn campaign(self, id: &str) -> Self {
        Change {
            campaign: Some(id.to_owned()),
            ..self
        }
    }
}

/// Every change from `before` to `after`, segments first, then zones by id.
pub fn changes(before: &CampaignDocument, after: &CampaignDocument) -> Vec<Change> {
    let mut found = Vec::new();
    segments(&before.segments.list, &after.segments.list, &mut found);
    let mut zones: Vec<&String> = before.zones.keys().chain(after.zones.keys()).collect();
    zones.sort();
    zones.dedup();
    for zone in zones {
        zone_changes(
            zone,
            before.zone_list(zone),
            after.zone_list(zone),
            &mut found,
        );
    }
    found
}

/// The changes as one sentence ("no change" when there are none).
pub fn summary(before: &CampaignDocument, after: &CampaignDocument) -> String {
    sentence(&changes(before, after))
}

/// Changes as one sentence: each part's changes after its name.
pub fn sentence(changes: &[Change]) -> String {
    let mut parts: Vec<(String, Vec<String>)> = Vec::new();
    for change in changes {
        let part = match &change.zone {
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

fn describe(change: &Change) -> String {
    let number = |n: Option<usize>| n.map_or(String::new(), |n| n.to_string());
    let fields = change.fields.join(", ");
    if let (Some(segment), None) = (&change.segment, &change.zone) {
        return match change.change {
            ChangeKind::Changed => format!("segment {segment} changed ({fields})"),
            ChangeKind::Added => format!("segment {segment} added"),
            _ => format!("segment {segment} removed"),
        };
    }
    let campaign = change.campaign.as_deref().unwrap_or_default();
    match change.change {
        ChangeKind::Added => format!(
            "campaign {campaign} added at place {}",
            number(change.place)
        ),
        ChangeKind::Removed => format!(
            "campaign {campaign} removed from place {}",
            number(change.place)
        ),
        ChangeKind::Moved => format!(
            "campaign {campaign} moved from place {} to {}",
            number(change.from),
            number(change.to)
        ),
        ChangeKind::Changed => format!("campaign {campaign} changed ({fields})"),
        ChangeKind::ListRemoved => "list removed: filled as configured".to_owned(),
        ChangeKind::Paused => format!("campaign {campaign} paused"),
        ChangeKind::Resumed => format!("campaign {campaign} resumed"),
    }
}

fn segments(was: &[SegmentDefinition], now: &[SegmentDefinition], found: &mut Vec<Change>) {
    for old in was {
        match now.iter().find(|s| s.id == old.id) {
            None => found.push(Change::of_segment(&old.id, ChangeKind::Removed)),
            Some(new) => {
                let mut fields = Vec::new();
                if old.name != new.name {
                    fields.push("name");
                }
                if old.rule != new.rule {
                    fields.push("rule");
                }
                if !fields.is_empty() {
                    found.push(Change {
                        fields,
                        ..Change::of_segment(&old.id, ChangeKind::Changed)
                    });
                }
            }
        }
    }
    for new in now.iter().filter(|s| !was.iter().any(|o| o.id == s.id)) {
        found.push(Change::of_segment(&new.id, ChangeKind::Added));
    }
}

fn zone_changes(
    zone: &str,
    was: Option<&[CampaignDefinition]>,
    now: Option<&[CampaignDefinition]>,
    found: &mut Vec<Change>,
) {
    let entry = |change: ChangeKind| Change::of_zone(zone, change);
    let (was, now) = match (was, now) {
        (Some(_), None) => {
            found.push(entry(ChangeKind::ListRemoved));
            return;
        }
        (None, None) => return,
        (was, now) => (was.unwrap_or_default(), now.unwrap_or_default()),
    };
    let place_of =
        |list: &[CampaignDefinition], wanted: &str| list.iter().position(|c| c.id == wanted);
    for (at, old) in was.iter().enumerate() {
        if place_of(now, &old.id).is_none() {
            found.push(Change {
                place: Some(at + 1),
                ..entry(ChangeKind::Removed).campaign(&old.id)
            });
        }
    }
    for (at, new) in now.iter().enumerate() {
        if place_of(was, &new.id).is_none() {
            found.push(Change {
                place: Some(at + 1),
                ..entry(ChangeKind::Added).campaign(&new.id)
            });
        }
    }
    // The campaigns in both, in the new order, with their old places: those outside the
    // longest run that kept its order moved.
    let common: Vec<(usize, usize, &CampaignDefinition, &CampaignDefinition)> = now
        .iter()
        .enumerate()
        .filter_map(|(to, new)| {
            let from = place_of(was, &new.id)?;
            Some((from, to, was.get(from)?, new))
        })
        .collect();
    let kept = longest_increasing(&common.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>());
    for (at, (from, to, _, new)) in common.iter().enumerate() {
        if !kept.contains(&at) {
            found.push(Change {
                from: Some(from + 1),
                to: Some(to + 1),
                ..entry(ChangeKind::Moved).campaign(&new.id)
            });
        }
    }
    for (_, _, old, new) in &common {
        match (old.enabled(), new.enabled()) {
            (true, false) => found.push(entry(ChangeKind::Paused).campaign(&old.id)),
            (false, true) => found.push(entry(ChangeKind::Resumed).campaign(&old.id)),
            _ => {}
        }
        let fields = changed_fields(old, new);
        if !fields.is_empty() {
            found.push(Change {
                fields,
                ..entry(ChangeKind::Changed).campaign(&old.id)
            });
        }
    }
}

/// The names of a campaign's fields that differ (its id and whether it is paused
/// aside), in the order of their names; its content is `content`, and its filters, pins
/// and boosts each by name.
fn changed_fields(old: &CampaignDefinition, new: &CampaignDefinition) -> Vec<&'static str> {
    let mut fields = Vec::new();
    let without_parts = |content: &Value| {
        let mut content = content.clone();
        if let Some(map) = content.as_object_mut() {
            for part in CONTENT_PARTS {
                map.remove(part);
            }
        }
        content
    };
    if without_parts(&old.content) != without_parts(&new.content) {
        fields.push("content");
    }
    for part in CONTENT_PARTS {
        if old.content.get(part) != new.content.get(part) {
            fields.push(part);
        }
    }
    let named = [
        ("minItems", old.min_items != new.min_items),
        ("name", old.name != new.name),
        ("schedule", old.schedule != new.schedule),
        ("segment", old.segment != new.segment),
        ("title", old.title != new.title),
    ];
    fields.extend(
        named
            .into_iter()
            .filter(|(_, differs)| *differs)
            .map(|(name, _)| name),
    );
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

    use serde_json::json;

    fn doc(segments: Value, zones: Value) -> CampaignDocument {
        serde_json::from_value(
            json!({"segments": {"version": 1, "list": segments}, "zones": zones}),
        )
        .expect("a document")
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
            .find(|c| c.change == ChangeKind::Moved)
            .unwrap();
        assert_eq!(
            serde_json::to_value(moved).unwrap(),
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
