//! What a request says of where it comes from, for campaign segments: the device class
//! of its user agent (woothee's categories), the host of its referrer, and the UTM
//! parameters of its page's URL. Read on every tracked request, so that a visitor's
//! latest request is known when a segment that reads it is sized or previewed before it
//! goes live; a user agent is parsed once per process and then remembered by its hash
//! ([`DEVICE_CLASSES`]): a request pays a hash and a map lookup, a referrer's host and
//! a check of the URL for `utm_`.

use std::hash::BuildHasher;
use std::sync::LazyLock;

use dashmap::DashMap;
use vitrine_engine::campaign::{DeviceClass, RequestContext, UtmParameter};
use vitrine_fields::first_byte;

/// User agents told apart at most before the memo starts again (a store's traffic has
/// a few thousand distinct agents; a flood of made-up ones only costs their parsing).
const MAX_AGENTS: usize = 16_384;

/// Device classes by a user agent's hash (already keyed, so the map needs no keyed hash
/// of it).
type DeviceClasses = DashMap<u64, Option<DeviceClass>, rustc_hash::FxBuildHasher>;

/// The device class of each user agent met, by the agent's hash (keyed per process,
/// so that no agent can be made to collide with another on purpose).
static DEVICE_CLASSES: LazyLock<(DeviceClasses, foldhash::fast::RandomState)> =
    LazyLock::new(Default::default);

/// The device class of `agent`, parsed once and then remembered.
fn remembered_device_class(agent: &str) -> Option<DeviceClass> {
    let (classes, keys) = &*DEVICE_CLASSES;
    let key = keys.hash_one(agent);
    if let Some(class) = classes.get(&key) {
        return *class;
    }
    let class = device_class(agent);
    if classes.len() >= MAX_AGENTS {
        classes.clear();
    }
    classes.insert(key, class);
    class
}

/// Agents of each kind woothee tells apart (a desktop, a phone, a tablet, a crawler),
/// parsed once at start by [`prepare`].
const COMMON_AGENTS: [&str; 4] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];

/// Builds the user-agent parser's patterns (woothee compiles them on first use, a few
/// million instructions) and the memo, at start: the first shoppers' requests do not
/// pay for them. What an agent is found to be is not remembered here.
pub fn prepare() {
    LazyLock::force(&DEVICE_CLASSES);
    for agent in COMMON_AGENTS {
        std::hint::black_box(device_class(agent));
    }
}

/// The request's device, referrer host and UTM parameters, from its user agent,
/// `referer` and `currentUrl` (each already validated by [`super::parse`]).
pub fn request_context(
    user_agent: Option<&str>,
    referer: Option<&str>,
    current_url: Option<&str>,
) -> RequestContext {
    let mut context = RequestContext {
        device: user_agent
            .filter(|a| !a.is_empty())
            .and_then(remembered_device_class),
        referrer_host: referer.filter(|r| !r.is_empty()).and_then(host),
        ..RequestContext::default()
    };
    if let Some(query) = current_url
        // UTM parameters are in the query: most pages have none, found by one search of
        // a byte.
        .filter(|url| first_byte(url.as_bytes(), b'?').is_some() && url.contains("utm_"))
        .and_then(|url| url.parse::<http::Uri>().ok())
        .and_then(|uri| uri.query().map(str::to_owned))
    {
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let Some(parameter) = name.strip_prefix("utm_") else {
                continue;
            };
            let slot = UtmParameter::ALL
                .iter()
                .position(|(n, _)| *n == parameter)
                .and_then(|at| context.utm.get_mut(at));
            if let Some(slot) = slot
                && slot.is_none()
            {
                *slot = Some(value.as_ref().into());
            }
        }
    }
    context
}

/// The device class of a user agent: woothee's `pc` is a desktop, `smartphone` and
/// `mobilephone` a phone, except an iPad, or an Android device whose agent does not say
/// `Mobile` (Android tablets leave it out), which are tablets; crawlers and other
/// agents have none.
pub fn device_class(agent: &str) -> Option<DeviceClass> {
    let parsed = woothee::parser::Parser::new().parse(agent)?;
    match parsed.category {
        "pc" => Some(DeviceClass::Desktop),
        "smartphone" | "mobilephone" => {
            let tablet =
                parsed.os == "iPad" || (parsed.os == "Android" && !agent.contains("Mobile"));
            Some(if tablet {
                DeviceClass::Tablet
            } else {
                DeviceClass::Mobile
            })
        }
        _ => None,
    }
}

/// The host of a URL, lower-case.
fn host(url: &str) -> Option<vitrine_engine::CompactString> {
    let uri = url.parse::<http::Uri>().ok()?;
    Some(uri.host()?.to_ascii_lowercase().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_classes_of_common_agents() {
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
        let ipad = "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1";
        let android_phone = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36";
        let android_tablet = "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";
        let desktop = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";
        let bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
        assert_eq!(device_class(iphone), Some(DeviceClass::Mobile));
        assert_eq!(device_class(ipad), Some(DeviceClass::Tablet));
        assert_eq!(device_class(android_phone), Some(DeviceClass::Mobile));
        assert_eq!(device_class(android_tablet), Some(DeviceClass::Tablet));
        assert_eq!(device_class(desktop), Some(DeviceClass::Desktop));
        assert_eq!(device_class(bot), None);
        let [desktop_too, iphone_too, tablet_too, bot_too] = COMMON_AGENTS.map(device_class);
        assert_eq!(
            (desktop_too, iphone_too, tablet_too, bot_too),
            (
                Some(DeviceClass::Desktop),
                Some(DeviceClass::Mobile),
                Some(DeviceClass::Tablet),
                None
            )
        );
        for agent in [iphone, ipad, desktop, bot, iphone] {
            assert_eq!(remembered_device_class(agent), device_class(agent));
        }
    }

    #[test]
    fn referrer_host_and_utm_parameters() {
        let context = request_context(
            Some("curl/8"),
            Some("https://WWW.Google.co.uk/search?q=x"),
            Some("https://shop.example/?utm_source=newsletter&utm_medium=email&x=1"),
        );
        assert_eq!(context.referrer_host.as_deref(), Some("www.google.co.uk"));
        assert_eq!(context.utm(UtmParameter::Source), Some("newsletter"));
        assert_eq!(context.utm(UtmParameter::Medium), Some("email"));
        assert_eq!(context.utm(UtmParameter::Campaign), None);
    }
}
