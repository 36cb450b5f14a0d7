//! Crawlers: their requests get the zones but are not tracked (no visitor, no counter,
//! no impression, no log record), so that search engines and link previews neither
//! grow the visitor table nor skew popularity and analytics.

/// Lower-case parts of the user agents of known crawlers and link-preview fetchers
/// (the major search engines, SEO tools, social networks' previews, HTTP libraries).
pub const CRAWLER_MARKS: &[&str] = &[
    "googlebot",
    "adsbot-google",
    "mediapartners-google",
    "google-inspectiontool",
    "bingbot",
    "bingpreview",
    "slurp",
    "duckduckbot",
    "baiduspider",
    "yandex",
    "sogou",
    "exabot",
    "applebot",
    "petalbot",
    "seznambot",
    "ahrefsbot",
    "semrushbot",
    "mj12bot",
    "dotbot",
    "rogerbot",
    "screaming frog",
    "facebookexternalhit",
    "facebookcatalog",
    "twitterbot",
    "linkedinbot",
    "pinterestbot",
    "slackbot",
    "discordbot",
    "telegrambot",
    "whatsapp",
    "embedly",
    "bytespider",
    "gptbot",
    "ccbot",
    "claudebot",
    "perplexitybot",
    "amazonbot",
    "ia_archiver",
    "archive.org_bot",
    "python-requests",
    "curl/",
    "wget/",
    "go-http-client",
    "headlesschrome-crawler",
    "crawler",
    "spider",
];

/// The marks as one case-insensitive automaton (`aho-corasick`): a user agent is read
/// once, whatever the number of marks, on every browser request.
static MARKS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
    std::sync::LazyLock::new(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(CRAWLER_MARKS)
            .ok()
    });

thread_local! {
    /// The user agent this thread judged last, and its verdict: shoppers of one store
    /// share a few browsers' agents, so the last one is often the next.
    static LAST: std::cell::RefCell<(String, bool)> = const { std::cell::RefCell::new((String::new(), false)) };
}

/// Whether a user agent is a known crawler's (case-insensitive); an empty one counts
/// as a crawler too (browsers always send one).
pub fn is_crawler(user_agent: &str) -> bool {
    if user_agent.trim().is_empty() {
        return true;
    }
    LAST.with(|last| match last.try_borrow_mut() {
        Ok(last) if last.0 == user_agent => last.1,
        Ok(mut last) => {
            let verdict = judged(user_agent);
            last.0.clear();
            last.0.push_str(user_agent);
            last.1 = verdict;
            verdict
        }
        Err(_) => judged(user_agent),
    })
}

/// [`is_crawler`], without the memo.
fn judged(user_agent: &str) -> bool {
    match MARKS.as_ref() {
        Some(marks) => marks.is_match(user_agent),
        // Not reached (the marks are fixed and valid), but never a panic.
        None => {
            let lower = user_agent.to_ascii_lowercase();
            CRAWLER_MARKS.iter().any(|mark| lower.contains(mark))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawlers_are_known_by_their_user_agents_and_browsers_are_not() {
        for crawler in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "curl/8.5.0",
            "",
        ] {
            assert!(is_crawler(crawler), "{crawler}");
        }
        for browser in [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
        ] {
            assert!(!is_crawler(browser), "{browser}");
        }
    }
}
