//! Backtests: a draft campaign list judged on the moments self-evaluation judged
//! lately, in seconds, instead of on live traffic for hours (a shadow test).
//!
//! Each request self-evaluation judges ([`crate::prequential`]) is kept as a
//! [`Moment`]: the shopper as the zone saw them before the request (their recent views,
//! basket and purchases by product key, identity, what segments read of them, their
//! latest page type and request context), the moment, and the products the request
//! brought (what they did next). The last [`MAX_MOMENTS`] are kept per account, within
//! [`MAX_MOMENT_BYTES`], in memory only; an erasure removes the person's.
//!
//! [`Account::backtest`] fills the zone for every kept moment as the live campaigns
//! and as the draft would have, resolved as serving resolves it (`resolve.rs`) at the
//! moment's time, on the page of the shopper's latest view, and judges both on what the
//! shopper did next, paired as a shadow test is ([`crate::shadow::Paired`]), with which
//! campaign each version showed, the exposure each product gains or loses, and the
//! share of shown products on offer, new, or outside their date window. It runs on
//! the caller's thread (and rayon's), never on a request's path; shoppers see nothing
//! of it.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::moments::Moment;

use super::{Backtest, BacktestError, Exposure, Reach, Shares, Version};
use crate::account::Account;
use crate::account::request::PageContext;
use crate::account::resolve::{Judged, Who, fill_judged};
use crate::account::visitor_view::{CurrencyAt, VisitorSnapshot};
use crate::campaign::CampaignSet;
use crate::catalogue::{Catalogue, ProductIdx};
use crate::event::PageType;
use crate::money::Currency;
use crate::prequential::rank_of;
use crate::shadow::Paired;
use crate::zone::ZoneKind;

/// What one version showed over the moments.
#[derive(Debug, Default)]
struct Shown {
    /// Times each campaign (by its position in the zone's list) was shown.
    campaigns: HashMap<usize, u64>,
    /// Moments no campaign qualified for (the list left the zone empty) or without a
    /// list (filled as configured).
    uncampaigned: u64,
    /// Times each product was shown.
    products: HashMap<ProductIdx, u64>,
    shares: Shares,
}

#[derive(Debug, Default)]
struct Partial {
    paired: Paired,
    moments: u64,
    live: Shown,
    draft: Shown,
}

impl Partial {
    fn merge(mut self, other: Partial) -> Partial {
        self.paired.merge(&other.paired);
        self.moments += other.moments;
        for (mine, theirs) in [(&mut self.live, other.live), (&mut self.draft, other.draft)] {
            for (at, n) in theirs.campaigns {
                *mine.campaigns.entry(at).or_default() += n;
            }
            mine.uncampaigned += theirs.uncampaigned;
            for (idx, n) in theirs.products {
                *mine.products.entry(idx).or_default() += n;
            }
            mine.shares.add(&theirs.shares);
        }
        self
    }
}

/// The dense indexes in `catalogue` of products by key (`names`: every id by key), those
/// it has.
fn dense<'a>(
    keys: &'a [u32],
    names: &'a [Arc<str>],
    keyed: &'a crate::models::KeyedIdx,
    catalogue: &'a Catalogue,
) -> impl Iterator<Item = ProductIdx> + 'a {
    keys.iter().filter_map(|&key| {
        let name = names.get(key as usize)?;
        keyed.idx(catalogue, key, name)
    })
}

impl Account {
    /// Keeps a judged request as a moment (see the module's documentation); called by
    /// `judge_zones` with the shopper as judged and the products the request brought.
    pub(crate) fn keep_moment(
        &self,
        judged: &Judged<'_, '_>,
        brought: &[ProductIdx],
        catalogue: &Catalogue,
        currency: Currency,
    ) {
        let indexed = self.models.product_keys.indexed(catalogue);
        fn keys<B: FromIterator<u32>>(
            idx: &[ProductIdx],
            catalogue: &Catalogue,
            indexed: &crate::models::IndexedKeys<'_>,
        ) -> B {
            idx.iter()
                .filter_map(|&i| Some(indexed.key(i, catalogue.product(i)?.id.as_str())))
                .collect()
        }
        let snapshot = judged.snapshot;
        let moment = Moment {
            visitor_id: judged.visitor_id.into(),
            identity: snapshot.identity.clone(),
            recent_views: keys(&snapshot.recent_views, catalogue, &indexed),
            basket: keys(&snapshot.basket, catalogue, &indexed),
            purchased: keys(&snapshot.purchased, catalogue, &indexed),
            segments: snapshot.segments.clone(),
            page_type: judged.latest.page_type,
            request: judged.latest.request.clone(),
            currency,
            now: judged.ctx.now,
            brought: keys(brought, catalogue, &indexed),
        };
        self.moments.keep(moment);
    }

    /// How many judged moments are kept, and the bytes they take.
    pub fn kept_moments(&self) -> (usize, usize) {
        self.moments.size()
    }

    /// Judges `draft`'s list for `zone` beside the live one on every kept moment (see
    /// the module's documentation).
    pub fn backtest(&self, zone: &str, draft: &CampaignSet) -> Result<Backtest, BacktestError> {
        let settings = self.settings.load_full();
        let Some(spec) = settings
            .zones
            .iter()
            .find(|z| z.id == zone && z.kind == ZoneKind::RecommenderProduct)
        else {
            return Err(BacktestError::NoZone(zone.to_owned()));
        };
        let moments = self.moments.all();
        let catalogue = self.catalogue();
        let rankings = self.rankings_for(&catalogue);
        let published = self.models.neighbours.load_full();
        let keyed = self.models.product_keys.idx_by_key(&catalogue);
        let names = self.models.product_keys.names();
        let live = self.campaigns.compiled();
        let judged = moments
            .par_iter()
            .fold(Partial::default, |mut partial, moment| {
                let snapshot = VisitorSnapshot {
                    identity: moment.identity.clone(),
                    recent_views: dense(&moment.recent_views, &names, &keyed, &catalogue).collect(),
                    basket: dense(&moment.basket, &names, &keyed, &catalogue).collect(),
                    purchased: dense(&moment.purchased, &names, &keyed, &catalogue).collect(),
                    segments: moment.segments.clone(),
                    ..VisitorSnapshot::default()
                };
                let ctx = snapshot.judged_context(
                    &catalogue,
                    &rankings,
                    &published,
                    CurrencyAt {
                        currency: moment.currency,
                        now: moment.now,
                    },
                );
                let user = snapshot
                    .identity
                    .user_id
                    .as_deref()
                    .and_then(|id| self.user_facts(id));
                let page = PageContext {
                    page_type: match ctx.product {
                        Some(_) => Some(PageType::ProductPage),
                        None => moment.page_type,
                    },
                    ..Default::default()
                };
                let shopper = snapshot.shopper(
                    &ctx,
                    &page,
                    &moment.request,
                    user.as_ref(),
                    settings.default_currency,
                );
                let who = Who::of(&moment.visitor_id, &snapshot.identity);
                let (live_items, live_campaign) =
                    fill_judged(&settings, spec, who, &live, &shopper, &ctx);
                let (draft_items, draft_campaign) =
                    fill_judged(&settings, spec, who, draft, &shopper, &ctx);
                for product in dense(&moment.brought, &names, &keyed, &catalogue) {
                    partial.paired.add(
                        rank_of(live_items.iter().map(|i| i.product), product),
                        rank_of(draft_items.iter().map(|i| i.product), product),
                    );
                }
                partial.moments += 1;
                for (shown, items, campaign) in [
                    (&mut partial.live, &live_items, live_campaign),
                    (&mut partial.draft, &draft_items, draft_campaign),
                ] {
                    match campaign {
                        Some(at) => *shown.campaigns.entry(at).or_default() += 1,
                        None => shown.uncampaigned += 1,
                    }
                    for item in items.iter() {
                        *shown.products.entry(item.product).or_default() += 1;
                        if let Some(product) = catalogue.product(item.product) {
                            shown.shares.count(product, moment.now);
                        }
                    }
                }
                partial
            })
            .reduce(Partial::default, Partial::merge);
        drop(rankings);
        let version = |shown: &Shown, set: &CampaignSet| {
            let list = set.zone(zone);
            let mut reach: Vec<Reach> = shown
                .campaigns
                .iter()
                .filter_map(|(&at, &times)| {
                    let campaign = list?.campaigns.get(at)?;
                    Some(Reach {
                        campaign: campaign.id.clone(),
                        segment: campaign.segment.map(|s| {
                            set.segments
                                .get(s)
                                .map_or_else(String::new, |seg| seg.id.clone())
                        }),
                        moments: times,
                    })
                })
                .collect();
            reach.sort_by(|a, b| b.moments.cmp(&a.moments).then(a.campaign.cmp(&b.campaign)));
            Version {
                reach,
                uncampaigned: shown.uncampaigned,
                shares: shown.shares,
            }
        };
        let mut exposure: Vec<Exposure> = judged
            .live
            .products
            .keys()
            .chain(judged.draft.products.keys())
            .collect::<std::collections::HashSet<_>>()
            .into_iter()
            .filter_map(|idx| {
                let live = judged.live.products.get(idx).copied().unwrap_or(0);
                let draft = judged.draft.products.get(idx).copied().unwrap_or(0);
                Some(Exposure {
                    product: catalogue.product(*idx)?.id.as_str().to_owned(),
                    live,
                    draft,
                })
            })
            .collect();
        exposure.sort_by(|a, b| {
            a.change()
                .cmp(&b.change())
                .then_with(|| a.product.cmp(&b.product))
        });
        Ok(Backtest {
            zone: zone.to_owned(),
            moments: judged.moments,
            paired: judged.paired,
            live: version(&judged.live, &live),
            draft: version(&judged.draft, draft),
            exposure,
        })
    }
}

#[cfg(test)]
mod tests {
    use smallvec::SmallVec;

    use super::*;
    use crate::backtest::moments::{MAX_MOMENT_BYTES, MAX_MOMENTS, Moments};
    use crate::campaign::RequestContext;
    use crate::event::Identity;

    fn moment(visitor: &str, email: Option<&str>) -> Moment {
        Moment {
            visitor_id: visitor.into(),
            identity: Identity {
                email: email.map(str::to_owned),
                ..Identity::default()
            },
            recent_views: SmallVec::from_slice(&[1, 2, 3]),
            basket: SmallVec::new(),
            purchased: SmallVec::new(),
            segments: None,
            page_type: None,
            request: RequestContext::default(),
            currency: crate::testing::gbp(),
            now: 0,
            brought: SmallVec::from_slice(&[4]),
        }
    }

    #[test]
    fn the_newest_moments_are_kept_within_their_bounds_and_an_erasure_removes_a_persons() {
        let moments = Moments::default();
        for i in 0..MAX_MOMENTS + 5 {
            moments.keep(moment(&format!("v-{i}"), None));
        }
        let (kept, bytes) = moments.size();
        assert_eq!(kept, MAX_MOMENTS);
        assert_eq!(bytes, MAX_MOMENTS * moment("v-0", None).bytes());
        assert!(bytes <= MAX_MOMENT_BYTES);
        assert!(moments.all().first().is_some_and(|m| m.visitor_id == "v-5"));

        moments.keep(moment("phone", Some("Ann@Example.com")));
        let set = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        moments.forget(&set(&["v-7"]), &set(&[]), &set(&["ann@example.com"]));
        let left = moments.all();
        assert_eq!(left.len(), MAX_MOMENTS - 2);
        assert!(
            left.iter()
                .all(|m| m.visitor_id != "v-7" && m.visitor_id != "phone")
        );
        assert_eq!(
            moments.size().1,
            left.iter().map(|m| m.bytes()).sum::<usize>()
        );
    }
}
