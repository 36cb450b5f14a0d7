//! Judging the account's product zones against what a sampled visitor does next (see
//! [`super`]), before the request is applied.

use std::sync::atomic::Ordering;

use smallvec::SmallVec;

use super::{TOP_K, ZoneQuality, rank_of};
use crate::account::Account;
use crate::account::request::Sampled;
use crate::account::resolve::Judged;
use crate::account::visitor_view::{AskedFrom, CurrencyAt, VisitorSnapshot};
use crate::catalogue::ProductIdx;
use crate::event::Event;
use crate::models::AsOf;
use crate::recommend::fill_zone;
use crate::tuning::trial::{RecipeTrial, SessionsAsOf};
use crate::visitor::LiveVisitor;
use crate::zone::{ZoneKind, ZoneSpec};

impl Account {
    /// Judges each product zone of `zones` on the products `events` bring that are new
    /// to the visitor (not among their recent views, basket or purchases): filled as
    /// the zone would have been for the visitor before these events, on the page of
    /// their latest view, is each product in its top [`TOP_K`], and where.
    pub(crate) fn judge_zones(&self, sampled: &Sampled<'_>, live: &mut LiveVisitor) {
        let Sampled {
            visitor_id,
            events,
            catalogue,
            zones,
            currency,
            now,
        } = *sampled;
        let mut brought: SmallVec<[ProductIdx; 8]> = SmallVec::new();
        for event in events {
            let mut bring = |id: &str| {
                if let Some(product) = catalogue.idx_of(id)
                    && !brought.contains(&product)
                {
                    brought.push(product);
                }
            };
            match event {
                Event::ProductView { id } => bring(id),
                Event::SetBasket { items } => items.iter().for_each(|line| bring(&line.id)),
                Event::Order(order) => order.items.iter().for_each(|line| bring(&line.id)),
                _ => {}
            }
        }
        if brought.is_empty() {
            return;
        }
        // What segments read: a shadow test's campaigns, or a backtest's later, may
        // judge them.
        let reads = crate::account::resolve::JUDGED_READS;
        let mut snapshot = VisitorSnapshot::of(live, catalogue, reads);
        let latest = live.latest_request();
        let (latest_page, latest_request) = (latest.page_type, latest.context());
        brought.retain(|product| !snapshot.has(*product));
        if brought.is_empty() {
            return;
        }
        // Judging and the recipes' and the neighbourhood's trials have their own
        // bounds: any may be due.
        let judging = self.figures.predictions.due(now);
        let recipes = self.tuners.recipe.due(now);
        if let Some(grid) = self.tuners.sessions.due(now) {
            self.take_session_trial(sampled, &snapshot, &brought, grid);
        }
        if !judging && recipes.is_none() {
            return;
        }
        if judging && zones.iter().any(ZoneSpec::reads_sessions) {
            snapshot.similar_sessions = self.session_neighbourhood(
                visitor_id,
                &snapshot.latest_products(),
                catalogue,
                AsOf::Now,
            );
        }
        let rankings = self.rankings_for(catalogue);
        let published = self.models.neighbours.load_full();
        if judging {
            let ctx = snapshot.judged_context(
                catalogue,
                &rankings,
                &published,
                CurrencyAt { currency, now },
            );
            let judged = Judged {
                visitor_id,
                snapshot: &snapshot,
                ctx: &ctx,
                latest: AskedFrom {
                    page_type: latest_page,
                    request: &latest_request,
                },
            };
            self.judge_shadows(&judged, &brought, zones);
            self.keep_moment(&judged, &brought, catalogue, currency);
            for spec in zones
                .iter()
                .filter(|spec| spec.kind == ZoneKind::RecommenderProduct)
            {
                let shown = if spec.count == TOP_K {
                    fill_zone(spec, &ctx)
                } else {
                    let mut judged = spec.clone();
                    judged.count = TOP_K;
                    fill_zone(&judged, &ctx)
                };
                for &product in &brought {
                    let rank = rank_of(shown.iter().map(|item| item.product), product);
                    self.figures.predictions.record(&spec.id, rank);
                }
            }
        }
        // The recipes are filled off the request path, from what the request was
        // served with: the seeds' lists copied as they are, since a rebuild before the
        // trial is scored updates the published lists in place (and would show the
        // trial pairs counted from this very request and the ones after it).
        // The sessions likewise, as of the lists (read as recorded, they would be
        // fresher than the lists, and the trials would favour them for it): their
        // neighbourhood is read when the trial is scored, as of the lists' tick now.
        if let Some((zone, grid)) = recipes {
            let published = std::sync::Arc::new(published.lists_of(snapshot.products()));
            let sessions =
                (zone.reads_sessions() || grid.iter().any(|r| r.sessions > 0.0)).then(|| {
                    SessionsAsOf {
                        visitor_id: visitor_id.to_owned(),
                        tick: self.models.lists_tick.load(Ordering::Acquire),
                    }
                });
            snapshot.similar_sessions = Vec::new();
            self.tuners.recipe_trials.push(RecipeTrial {
                snapshot,
                catalogue: std::sync::Arc::clone(catalogue),
                rankings,
                published,
                currency,
                now,
                brought,
                zone,
                grid,
                sessions,
            });
        }
    }

    /// How well each judged product zone predicts what shoppers do next (see
    /// [`crate::prequential`]).
    pub fn zone_predictions(&self) -> Vec<ZoneQuality> {
        self.figures.predictions.figures()
    }
}

#[cfg(test)]
mod tests {
    use crate::account::ServeRequest;
    use crate::catalogue::{Product, UnixMillis};
    use crate::event::Event;
    use crate::prequential::sampled;
    use crate::testing;
    use crate::zone::Strategy;

    const T0: UnixMillis = 1_800_000_000_000;

    /// An account of `ids`, each priced, with the zones `zones`.
    fn account_of<'a>(
        ids: impl IntoIterator<Item = &'a str>,
        zones: Vec<crate::zone::ZoneSpec>,
    ) -> crate::account::Account {
        let products = ids.into_iter().map(|id| Product {
            prices: testing::priced(100, "GBP"),
            ..testing::product(id)
        });
        testing::account(zones, testing::catalogue(products))
    }

    /// A trending zone "TR" of 4.
    fn trending() -> Vec<crate::zone::ZoneSpec> {
        vec![testing::zone("TR", Strategy::Trending, 4)]
    }

    /// The first `n` visitor ids self-evaluation samples.
    fn sampled_ids(n: usize) -> Vec<String> {
        (0..)
            .map(|i| format!("shopper-{i}"))
            .filter(|v| sampled(v))
            .take(n)
            .collect()
    }

    fn view(visitor: &str, product: &str, now: UnixMillis) -> ServeRequest {
        ServeRequest {
            search: None,
            visitor_id: Some(visitor.into()),
            session_id: None,
            currency: None,
            events: vec![Event::ProductView { id: product.into() }].into(),
            zones: Vec::new().into(),
            now,
            context: Default::default(),
        }
    }

    #[test]
    fn a_sampled_visitors_next_product_is_looked_up_in_every_product_zone() {
        let account = account_of(
            ["a", "b", "c", "d"],
            vec![
                testing::zone("TR", Strategy::Trending, 4),
                testing::zone("RV", Strategy::RecentlyViewed, 4),
            ],
        );
        let judged = sampled_ids(1).remove(0);
        let others: Vec<String> = (0..)
            .map(|n| format!("trainer-{n}"))
            .filter(|v| !sampled(v))
            .take(5)
            .collect();
        // "a" trends; requests of visitors who are not sampled are not judged.
        for (i, other) in others.iter().enumerate() {
            account.serve(view(other, "a", T0 + i64::try_from(i).unwrap_or(0)));
        }
        account.rebuild_models();
        assert!(account.zone_predictions().is_empty());

        // The judged visitor's first view: "a" is first in trending, and recently
        // viewed (which shows only what they viewed) cannot have predicted it.
        account.serve(view(&judged, "a", T0 + 100));
        // Viewing it again brings nothing new: no trial.
        account.serve(view(&judged, "a", T0 + 200));
        let figures = account.zone_predictions();
        let zone = |id: &str| {
            figures
                .iter()
                .find(|f| f.zone == id)
                .unwrap_or_else(|| panic!("{id} judged: {figures:?}"))
                .clone()
        };
        let trending = zone("TR");
        assert_eq!(
            (trending.trials, trending.hits_total),
            (1, 1),
            "{trending:?}"
        );
        assert!((trending.mrr - 1.0).abs() < 1e-12, "{trending:?}");
        let recent = zone("RV");
        assert_eq!((recent.trials, recent.hits_total), (1, 0), "{recent:?}");
        assert!(recent.hit_rate.abs() < f64::EPSILON, "{recent:?}");
    }

    #[test]
    fn an_account_with_self_evaluation_off_judges_nothing() {
        let account = account_of(["a", "b"], trending());
        let settings = (*account.settings()).clone();
        account.replace_settings(crate::account::AccountSettings {
            self_evaluation: false,
            ..settings
        });
        let judged = sampled_ids(1).remove(0);
        account.serve(view(&judged, "a", T0));
        assert!(account.zone_predictions().is_empty());
    }

    #[test]
    fn at_most_a_seconds_worth_of_requests_is_judged() {
        let ids: Vec<String> = (0..60).map(|n| format!("p{n}")).collect();
        let account = account_of(ids.iter().map(String::as_str), trending());
        let judged = sampled_ids(3);
        // 30 new products viewed by sampled visitors within one millisecond: a
        // second's worth is judged.
        for (n, id) in ids.iter().take(30).enumerate() {
            account.serve(view(&judged[n % 3], id, T0));
        }
        let trials = |account: &crate::account::Account| {
            account
                .zone_predictions()
                .first()
                .map_or(0, |zone| zone.trials)
        };
        assert_eq!(
            trials(&account),
            u64::from(crate::prequential::JUDGED_PER_SECOND)
        );
        // Half a second later, half a second's worth more.
        for (n, id) in ids.iter().skip(30).enumerate() {
            account.serve(view(&judged[n % 3], id, T0 + 500));
        }
        assert_eq!(
            trials(&account),
            u64::from(crate::prequential::JUDGED_PER_SECOND * 3 / 2)
        );
    }

    #[test]
    fn a_shadow_test_is_judged_on_the_same_bounded_requests_and_changes_nothing_shown() {
        use crate::campaign::CampaignSet;
        let ids: Vec<String> = (0..40).map(|n| format!("p{n}")).collect();
        let account = account_of(ids.iter().map(String::as_str), trending());
        // The draft: the zone as configured (no list of its own), judged twice.
        let shadow = account
            .start_shadow("TR", std::sync::Arc::new(CampaignSet::default()), T0)
            .expect("a product zone");
        let judged = sampled_ids(3);
        // 30 new products viewed within one millisecond: the shadow test has the trials
        // self-evaluation takes, a second's worth, no more.
        for (n, id) in ids.iter().take(30).enumerate() {
            let outcome = account.serve(ServeRequest {
                zones: vec!["TR".into()].into(),
                ..view(&judged[n % 3], id, T0)
            });
            assert!(outcome.zones.iter().all(|z| z.campaign.is_none()));
        }
        let paired = shadow.paired();
        let bound = u64::from(crate::prequential::JUDGED_PER_SECOND);
        assert_eq!(paired.live.trials, bound, "{paired:?}");
        // The same fill on both sides: the same hits.
        assert_eq!(paired.live, paired.draft, "{paired:?}");
        assert_eq!(account.zone_predictions()[0].trials, bound);
        // Stopped, it takes no more.
        assert!(account.stop_shadow("TR"));
        for (n, id) in ids.iter().skip(30).enumerate() {
            account.serve(view(&judged[n % 3], id, T0 + 5_000));
        }
        assert_eq!(shadow.paired().live.trials, bound);
        assert!(account.shadow("TR").is_none());
    }
}
