//! Zone analytics of an account (see [`crate::analytics`]): impressions recorded when a
//! request's zones are filled, touches credited while its events are applied, and the
//! counters per zone × variant × day they add to.

use crate::account::Account;
use crate::account::track::EventAt;
use compact_str::CompactString;

use crate::analytics::{
    ShownZone, Spreads, Tally, Touch, ZoneCounts, ZoneDay, day_of, session_key,
};
use crate::catalogue::UnixMillis;
use crate::experiment::holdout::STORE_ZONE;
use crate::state::Clicked;
use crate::visitor::LiveVisitor;

impl Account {
    /// Remembers what the zones of a request showed the visitor and counts the answers
    /// (`key(z, i)`: the key of the `i`th product of the `z`th zone, see
    /// [`Account::shown_key_by_id`]).
    pub(crate) fn record_shown(
        &self,
        live: &mut LiveVisitor,
        shown: &[ShownZone],
        key: impl Fn(usize, usize) -> Option<u32>,
        session_id: &str,
        now: UnixMillis,
    ) {
        if shown.is_empty() {
            return;
        }
        let tallies = live
            .impressions_mut()
            .record(shown, key, session_key(session_id), now);
        for tally in tallies {
            self.tally(tally);
        }
    }

    /// The key of the `i`th product of the `z`th zone of `shown`, looked up by id: for a
    /// record replayed from the log, whose products are ids only.
    pub(crate) fn shown_key_by_id(&self, shown: &[ShownZone], z: usize, i: usize) -> Option<u32> {
        Some(self.models.product_keys.key(shown.get(z)?.products.get(i)?))
    }

    /// Credits what the visitor did with `product` (`touch` of its key) to the zone
    /// answer that showed it, if any (a product without a key was never shown).
    pub(crate) fn attribute(
        &self,
        live: &mut LiveVisitor,
        product: &str,
        touch: impl FnOnce(u32) -> Touch,
        at: &EventAt<'_>,
    ) {
        if live.impressions().is_none() {
            return;
        }
        self.attribute_key(live, self.models.product_keys.existing(product), touch, at);
    }

    /// [`Account::attribute`] for a product whose key is known (`None`: it has none).
    pub(crate) fn attribute_key(
        &self,
        live: &mut LiveVisitor,
        key: Option<u32>,
        touch: impl FnOnce(u32) -> Touch,
        at: &EventAt<'_>,
    ) {
        let (Some(impressions), Some(key)) = (live.existing_impressions_mut(), key) else {
            return;
        };
        if let Some(tally) = impressions.credit(touch(key), at.now, at.window) {
            self.tally(tally);
        }
    }

    pub(crate) fn tally(&self, tally: Tally) {
        self.figures
            .zones
            .entry(tally.key)
            .or_default()
            .add(&tally.counts);
    }

    /// The counters of every zone and variant on the days `from..=to` ([`day_of`]), by
    /// zone, variant and day (the store-wide ones apart: [`Account::store_analytics`]).
    ///
    /// [`day_of`]: crate::analytics::day_of
    pub fn zone_analytics(&self, from: i32, to: i32) -> Vec<(ZoneDay, ZoneCounts)> {
        self.counters(from, to, |zone| zone != STORE_ZONE)
    }

    /// The store-wide counters of the holdout's groups on the days `from..=to`, by
    /// group (as variant) and day: every visitor and order, whatever the zones showed.
    pub fn store_analytics(&self, from: i32, to: i32) -> Vec<(ZoneDay, ZoneCounts)> {
        self.counters(from, to, |zone| zone == STORE_ZONE)
    }

    fn counters(
        &self,
        from: i32,
        to: i32,
        zone: impl Fn(&str) -> bool,
    ) -> Vec<(ZoneDay, ZoneCounts)> {
        let mut found: Vec<(ZoneDay, ZoneCounts)> = self
            .figures
            .zones
            .iter()
            .filter(|e| (from..=to).contains(&e.key().day) && zone(&e.key().zone))
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    /// Every day's counters (for a state snapshot).
    pub(crate) fn analytics_entries(&self) -> Vec<(ZoneDay, ZoneCounts)> {
        self.counters(i32::MIN, i32::MAX, |_| true)
    }

    /// Restores one day's counters (keeping clicks restored before them).
    pub(crate) fn restore_zone_day(&self, key: ZoneDay, counts: ZoneCounts) {
        let mut entry = self.figures.zones.entry(key).or_default();
        let clicked = entry.clicked;
        let revenue_spread = std::mem::take(&mut entry.revenue_spread);
        *entry = ZoneCounts {
            clicked,
            revenue_spread,
            ..counts
        };
    }

    /// Restores one day's spread of per-visitor revenue.
    pub(crate) fn restore_revenue_spread(&self, key: ZoneDay, spread: Spreads) {
        self.figures.zones.entry(key).or_default().revenue_spread = spread;
    }

    /// Restores one day's clicks.
    pub(crate) fn restore_clicks(&self, key: ZoneDay, clicked: u64) {
        self.figures.zones.entry(key).or_default().clicked = clicked;
    }

    /// Whether a zone's answers are counted under more names than its own: it has a
    /// campaign list or an experiment of the console.
    fn answers_vary(&self, zone: &str) -> bool {
        let set = self.campaigns.load();
        set.zone(zone).is_some() || set.experiments.iter().any(|e| e.zone == zone)
    }

    /// Counts a click on a product the zone `zone` showed `visitor_id`, on the day of
    /// `now`, for the experiment variant the zone shows that visitor. False (nothing
    /// counted) when the account has no such zone or zone analytics are off.
    pub fn record_click(&self, clicked: &Clicked) -> bool {
        let settings = self.settings.load();
        if !settings.zone_analytics {
            return false;
        }
        let Some(spec) = settings.zones.iter().find(|z| z.id == clicked.zone) else {
            return false;
        };
        let variant = match settings.variant(spec, &clicked.visitor_id, clicked.now) {
            Some((_, v)) => CompactString::from(v.name.as_str()),
            // A zone with campaigns or an experiment of the console: the campaign or
            // variant of the latest answer the zone gave the visitor.
            None if self.answers_vary(&spec.id) => self
                .tracking
                .visitors
                .read()
                .get(&clicked.visitor_id)
                .and_then(|v| {
                    let answers = &v.impressions()?.answers;
                    let latest = answers.iter().rev().find(|a| a.zone == clicked.zone)?;
                    Some(latest.variant.clone())
                })
                .unwrap_or_default(),
            None => CompactString::default(),
        };
        let key = ZoneDay {
            zone: CompactString::from(spec.id.as_str()),
            variant,
            day: day_of(clicked.now),
        };
        self.figures.zones.entry(key).or_default().clicked += 1;
        true
    }
}
