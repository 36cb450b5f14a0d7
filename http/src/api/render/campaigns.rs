//! What a zone shows when a campaign fills it: the type its content gives (product
//! content keeps the zone's type; image content is `image`, or `image-carousel` with
//! more than one; html content is `html`), its title (the campaign's own, when it has
//! one), its images, and its html template, compiled once per version of the account's
//! campaigns.

use std::sync::Arc;

use vitrine_engine::account::{RenderedZone, ServeOutcome};
use vitrine_engine::campaign::CampaignSet;
use vitrine_engine::campaign::content::{Content, Image};
use vitrine_engine::zone::ZoneSpec;

/// The html templates of an account's campaigns, named `<zone>/<campaign id>`, for the
/// version of the campaigns they were compiled from.
#[derive(Debug, Default)]
pub struct CampaignTemplates {
    compiled: parking_lot::Mutex<Option<(u64, Arc<minijinja::Environment<'static>>)>>,
}

impl CampaignTemplates {
    /// The templates of `set`, compiled when its version is new.
    pub fn of(&self, set: &CampaignSet) -> Arc<minijinja::Environment<'static>> {
        let mut compiled = self.compiled.lock();
        if let Some((version, env)) = compiled.as_ref()
            && *version == set.version
        {
            return Arc::clone(env);
        }
        // The same environment as the configured zones' templates: escaped, strict.
        let mut env = vitrine_ingest::templates::environment();
        for list in &set.zones {
            for campaign in &list.campaigns {
                if let Content::Html { template, .. } = &campaign.content {
                    // Compiled when the change was accepted; one that fails here renders
                    // with an error in the answer's `errors`.
                    let _ = env.add_template_owned(
                        template_name(&list.zone, &campaign.id),
                        template.clone(),
                    );
                }
            }
        }
        let env = Arc::new(env);
        *compiled = Some((set.version, Arc::clone(&env)));
        env
    }
}

/// The name of a campaign's template.
pub(super) fn template_name(zone: &str, campaign: &str) -> String {
    format!("{zone}/{campaign}")
}

/// The wire type of a filled zone.
pub(super) fn zone_type(
    outcome: &ServeOutcome,
    zone: &RenderedZone,
    spec: &ZoneSpec,
) -> &'static str {
    match outcome.campaign(zone).map(|c| &c.content) {
        Some(Content::Image(images)) if images.len() > 1 => "image-carousel",
        Some(Content::Image(_)) => "image",
        Some(Content::Html { .. }) => "html",
        _ => spec.kind.name(),
    }
}

/// The title of a filled zone: the shown campaign's own, else the zone's configured one.
pub fn zone_title<'a>(
    outcome: &'a ServeOutcome,
    zone: &RenderedZone,
    spec: &'a ZoneSpec,
) -> &'a str {
    outcome
        .campaign(zone)
        .and_then(|c| c.title.as_deref())
        .unwrap_or(&spec.title)
}

/// The images a campaign shows in a zone, when its content is images.
pub(super) fn images<'a>(outcome: &'a ServeOutcome, zone: &RenderedZone) -> Option<&'a [Image]> {
    match &outcome.campaign(zone)?.content {
        Content::Image(images) => Some(images),
        _ => None,
    }
}

/// Whether a campaign fills the zone (its images and template replace the zone's own).
pub(super) fn by_campaign(zone: &RenderedZone) -> bool {
    zone.list.is_some()
}
