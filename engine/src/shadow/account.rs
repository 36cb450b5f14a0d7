//! An account's shadow tests ([`super`]): started, read and stopped by the admin
//! API, and judged on the requests self-evaluation judges.

use std::sync::Arc;

use super::{MAX_SHADOWS, Shadow, ShadowError};
use crate::account::Account;
use crate::account::request::PageContext;
use crate::account::resolve::{Judged, Who, fill_judged};
use crate::account::visitor_view::AskedFrom;
use crate::campaign::CampaignSet;
use crate::catalogue::{ProductIdx, UnixMillis};
use crate::event::PageType;
use crate::prequential::rank_of;
use crate::zone::{ZoneKind, ZoneSpec};

impl Account {
    /// Starts judging `set`'s list for `zone` beside the live one, in place of the
    /// zone's running shadow test if it has one.
    pub fn start_shadow(
        &self,
        zone: &str,
        set: Arc<CampaignSet>,
        now: UnixMillis,
    ) -> Result<Arc<Shadow>, ShadowError> {
        let settings = self.settings.load();
        if !settings
            .zones
            .iter()
            .any(|z| z.id == zone && z.kind == ZoneKind::RecommenderProduct)
        {
            return Err(ShadowError::NoZone(zone.to_owned()));
        }
        let mut shadows = self.shadows.write();
        shadows.retain(|s| s.zone != zone);
        if shadows.len() >= MAX_SHADOWS {
            return Err(ShadowError::TooMany);
        }
        let shadow = Arc::new(Shadow::new(zone, set, now));
        shadows.push(Arc::clone(&shadow));
        Ok(shadow)
    }

    /// Stops the shadow test of `zone`; whether one ran.
    pub fn stop_shadow(&self, zone: &str) -> bool {
        let mut shadows = self.shadows.write();
        let before = shadows.len();
        shadows.retain(|s| s.zone != zone);
        shadows.len() != before
    }

    /// The shadow test of `zone`, if one runs.
    pub fn shadow(&self, zone: &str) -> Option<Arc<Shadow>> {
        self.shadows.read().iter().find(|s| s.zone == zone).cloned()
    }

    /// Judges each running shadow test on `brought` (products new to the visitor that
    /// the request brings): the zone filled as the live campaigns and as the draft
    /// would show it to the visitor before the request, in `judged.ctx` (the page of
    /// their latest view), resolved as serving resolves it (`resolve.rs`) with what
    /// their latest request said of where it came from. Called by `judge_zones` on the
    /// requests it judges.
    pub(crate) fn judge_shadows(
        &self,
        judged: &Judged<'_, '_>,
        brought: &[ProductIdx],
        zones: &[ZoneSpec],
    ) {
        let shadows: Vec<Arc<Shadow>> = self.shadows.read().clone();
        let Judged {
            visitor_id,
            snapshot,
            ctx,
            latest:
                AskedFrom {
                    page_type: latest_page,
                    request,
                },
        } = *judged;
        // A test started after the snapshot was taken (without what segments read)
        // begins with the next judged request.
        if shadows.is_empty() || snapshot.segments.is_none() {
            return;
        }
        let settings = self.settings.load();
        let user = snapshot
            .identity
            .user_id
            .as_deref()
            .and_then(|id| self.user_facts(id));
        let page_context = PageContext {
            page_type: match ctx.product {
                Some(_) => Some(PageType::ProductPage),
                None => latest_page,
            },
            ..Default::default()
        };
        let shopper = snapshot.shopper(
            ctx,
            &page_context,
            request,
            user.as_ref(),
            settings.default_currency,
        );
        let live_set = self.campaigns.compiled();
        for shadow in &shadows {
            let Some(spec) = zones.iter().find(|z| z.id == shadow.zone) else {
                continue;
            };
            let who = Who::of(visitor_id, &snapshot.identity);
            let shown = |set: &CampaignSet| fill_judged(&settings, spec, who, set, &shopper, ctx).0;
            let (live_items, draft_items) = (shown(&live_set), shown(&shadow.set));
            for &product in brought {
                shadow.record(
                    rank_of(live_items.iter().map(|i| i.product), product),
                    rank_of(draft_items.iter().map(|i| i.product), product),
                );
            }
        }
    }
}
