//! What a request says of where it comes from, as segments read it
//! ([`RequestContext`]: the device class of its user agent, its referrer's host, the UTM
//! parameters of its page's URL), and what a visitor keeps of its latest request
//! ([`LatestRequest`]) so that a segment's size counts each visitor as its latest request
//! would be judged.
//!
//! A visitor keeps its latest page type, currency and device class inline and its
//! referrer's host and UTM parameters boxed, only when the request had any (a store's
//! serverside calls often send an empty referrer): no heap at all for most visitors,
//! one allocation of [`RequestOrigin`] for the others. They are in state snapshots
//! ([`crate::state::StateEntry::LatestRequest`]), not in the log's records: after a
//! crash a visitor's latest request is the one the last snapshot holds until it makes
//! another.

use compact_str::CompactString;

use crate::event::PageType;
use crate::money::Currency;

/// The device class of a request, from its user agent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub enum DeviceClass {
    /// A phone.
    Mobile,
    /// A tablet.
    Tablet,
    /// A desktop or laptop computer.
    Desktop,
}

impl DeviceClass {
    /// Every class with its name in the campaign document.
    pub const ALL: [(&'static str, DeviceClass); 3] = [
        ("mobile", DeviceClass::Mobile),
        ("tablet", DeviceClass::Tablet),
        ("desktop", DeviceClass::Desktop),
    ];

    /// The class named `name` (as in the campaign document).
    pub fn from_name(name: &str) -> Option<DeviceClass> {
        DeviceClass::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, class)| *class)
    }

    /// Its name in the campaign document.
    pub fn name(self) -> &'static str {
        DeviceClass::ALL
            .iter()
            .find(|(_, class)| *class == self)
            .map_or("", |(name, _)| name)
    }
}

/// A UTM parameter of the page's URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UtmParameter {
    /// `utm_source`.
    Source,
    /// `utm_medium`.
    Medium,
    /// `utm_campaign`.
    Campaign,
    /// `utm_term`.
    Term,
    /// `utm_content`.
    Content,
}

impl UtmParameter {
    /// Every parameter with its name in the campaign document.
    pub const ALL: [(&'static str, UtmParameter); 5] = [
        ("source", UtmParameter::Source),
        ("medium", UtmParameter::Medium),
        ("campaign", UtmParameter::Campaign),
        ("term", UtmParameter::Term),
        ("content", UtmParameter::Content),
    ];
}

/// What a request says of where it comes from: filled by the edge from the user agent,
/// referrer and URL of every tracked request (and of a preview's or explain's made-up
/// request).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    /// The device class of the user agent (none: no agent, or not a known class).
    pub device: Option<DeviceClass>,
    /// The referrer's host, lower-case.
    pub referrer_host: Option<CompactString>,
    /// The UTM parameters of the page's URL, in the order of [`UtmParameter::ALL`].
    pub utm: [Option<CompactString>; 5],
}

impl RequestContext {
    /// The value of a UTM parameter.
    pub fn utm(&self, parameter: UtmParameter) -> Option<&str> {
        let at = UtmParameter::ALL
            .iter()
            .position(|(_, p)| *p == parameter)?;
        self.utm.get(at)?.as_deref()
    }

    /// Whether it has a referrer host or a UTM parameter.
    fn has_origin(&self) -> bool {
        self.referrer_host.is_some() || self.utm.iter().any(Option::is_some)
    }
}

/// The referrer's host and UTM parameters of a visitor's latest request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOrigin {
    /// The referrer's host, lower-case.
    pub referrer_host: Option<CompactString>,
    /// The UTM parameters, in the order of [`UtmParameter::ALL`].
    pub utm: [Option<CompactString>; 5],
}

/// What a visitor keeps of its latest request: what segments read of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatestRequest {
    /// Its page type.
    pub page_type: Option<PageType>,
    /// Its currency (none: no request yet).
    pub currency: Option<Currency>,
    /// The device class of its user agent.
    pub device: Option<DeviceClass>,
    /// Its referrer's host and UTM parameters, when it had any.
    pub origin: Option<Box<RequestOrigin>>,
}

impl LatestRequest {
    /// Keeps what a request on a page type, in a currency, with `context` says (the box
    /// reused or left alone when its contents are the same).
    pub fn remember(
        &mut self,
        page_type: Option<PageType>,
        currency: Option<Currency>,
        context: &RequestContext,
    ) {
        self.page_type = page_type;
        self.currency = currency;
        self.device = context.device;
        if !context.has_origin() {
            self.origin = None;
            return;
        }
        let same = self
            .origin
            .as_deref()
            .is_some_and(|o| o.referrer_host == context.referrer_host && o.utm == context.utm);
        if !same {
            let origin = self.origin.get_or_insert_with(Box::default);
            origin.referrer_host.clone_from(&context.referrer_host);
            origin.utm.clone_from(&context.utm);
        }
    }

    /// The request context segments judge it by.
    pub fn context(&self) -> RequestContext {
        let origin = self.origin.as_deref();
        RequestContext {
            device: self.device,
            referrer_host: origin.and_then(|o| o.referrer_host.clone()),
            utm: origin.map(|o| o.utm.clone()).unwrap_or_default(),
        }
    }

    /// Whether nothing is known of it.
    pub fn is_empty(&self) -> bool {
        self.page_type.is_none()
            && self.currency.is_none()
            && self.device.is_none()
            && self.origin.is_none()
    }

    /// Its form in a state snapshot.
    pub fn stored(&self) -> StoredRequest {
        let origin = self.origin.as_deref();
        StoredRequest {
            page_type: self.page_type,
            currency: self.currency,
            device: self.device,
            referrer_host: origin.and_then(|o| o.referrer_host.as_deref().map(str::to_owned)),
            utm: origin
                .map(|o| {
                    o.utm
                        .iter()
                        .map(|v| v.as_deref().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Read back from a state snapshot.
    pub fn from_stored(stored: &StoredRequest) -> LatestRequest {
        let mut utm: [Option<CompactString>; 5] = Default::default();
        for (slot, value) in utm.iter_mut().zip(&stored.utm) {
            *slot = value.as_deref().map(CompactString::from);
        }
        let context = RequestContext {
            device: stored.device,
            referrer_host: stored.referrer_host.as_deref().map(CompactString::from),
            utm,
        };
        let mut latest = LatestRequest::default();
        latest.remember(stored.page_type, stored.currency, &context);
        latest
    }
}

/// A visitor's latest request as a state snapshot holds it.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredRequest {
    /// Its page type.
    pub page_type: Option<PageType>,
    /// Its currency.
    pub currency: Option<Currency>,
    /// Its device class.
    pub device: Option<DeviceClass>,
    /// Its referrer's host.
    pub referrer_host: Option<String>,
    /// Its UTM parameters, in the order of [`UtmParameter::ALL`] (fewer: the rest none).
    pub utm: Vec<Option<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latest_request_boxes_only_a_referrer_or_utm_and_survives_a_snapshot() {
        let mut latest = LatestRequest::default();
        let phone = RequestContext {
            device: Some(DeviceClass::Mobile),
            ..RequestContext::default()
        };
        let gbp = Currency::from_code("GBP").ok();
        latest.remember(Some(PageType::Homepage), gbp, &phone);
        assert!(latest.origin.is_none());
        assert_eq!(latest.context(), phone);
        let mut from_ad = phone.clone();
        from_ad.referrer_host = Some("www.google.com".into());
        from_ad.utm[0] = Some("newsletter".into());
        latest.remember(Some(PageType::ProductPage), gbp, &from_ad);
        assert_eq!(latest.context(), from_ad);
        assert_eq!(
            latest.context().utm(UtmParameter::Source),
            Some("newsletter")
        );
        let restored = LatestRequest::from_stored(&latest.stored());
        assert_eq!(restored, latest);
        latest.remember(None, None, &RequestContext::default());
        assert!(latest.is_empty());
        assert!(std::mem::size_of::<LatestRequest>() <= 16);
    }
}
