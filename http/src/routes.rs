//! The routing table: every endpoint of the contract and the routes beside it, with its
//! path, method, `rate_limits` name and position (metrics and rate limiters index by it).

/// Declares [`Endpoint`] and [`Endpoint::ALL`] from one list, so that the list holds
/// every variant in declaration order (rate limiters and metrics are built in its
/// order and found by [`Endpoint::index`]).
macro_rules! endpoints {
    ($($(#[$doc:meta])* $variant:ident,)*) => {
        /// The endpoints of the contract, plus routes outside it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Endpoint {
            $($(#[$doc])* $variant,)*
        }

        impl Endpoint {
            /// Every endpoint, in declaration order ([`Endpoint::index`] is a position
            /// in it).
            pub const ALL: [Endpoint; [$(Endpoint::$variant),*].len()] =
                [$(Endpoint::$variant),*];
        }
    };
}

endpoints! {
    /// `POST /api/serverside`
    Serverside,
    /// `POST /api/productfeed`
    ProductFeed,
    /// `POST /api/delta`
    Delta,
    /// `POST /api/deltastatus`
    DeltaStatus,
    /// `POST /api/productfeedstatus`
    ProductFeedStatus,
    /// `POST /api/user/forget`
    Forget,
    /// `POST /api/productdelta`: a delta as the vendor's PHP SDK sends it.
    ProductDelta,
    /// `POST /api/productdeltastatus`: delta statuses as the vendor's .NET SDK asks.
    ProductDeltaStatus,
    /// `POST /feed-create`: a feed streamed by the vendor's plugins opens.
    FeedCreate,
    /// `POST /feed-append`: the next part of a streamed feed.
    FeedAppend,
    /// `POST /feed-close`: a streamed feed is complete.
    FeedClose,
    /// `POST /api/plugin/validate-account`
    PluginValidate,
    /// `POST /api/plugin/dashboard`
    PluginDashboard,
    /// `POST /api/plugin/delete`: the plugin was uninstalled.
    PluginDelete,
    /// `POST /api/plugin/feedback`: the plugin was deactivated, with the admin's reason.
    PluginFeedback,
    /// `POST /api/plugin/signuprequest`: a sign-up, refused (nothing to sign up for).
    PluginSignupRequest,
    /// `POST /api/plugin/signupstatus`: a sign-up's progress, refused likewise.
    PluginSignupStatus,
    /// `POST /api/plugin/add-store`: a store added to a vendor account, refused likewise.
    PluginAddStore,
    /// `POST /api/next-steps/complete`: a step of the plugin's dashboard done.
    NextStepsComplete,
    /// `GET /healthz`
    Health,
    /// `GET /metrics`: Prometheus metrics (on `metrics_listen` instead, when set).
    Metrics,
    /// `GET /openapi.json`: the OpenAPI document of every endpoint.
    OpenApi,
    /// `GET /admin/...`: the admin API and dashboard (bearer admin tokens).
    Admin,
    /// `GET /<accessKey>/cs.js`: the browser script of an account.
    ClientScript,
    /// `POST /api/clientside/<accessKey>` (and its CORS preflight): a page's events and
    /// zones, from the browser script.
    ClientSide,
    /// `POST /api/clientside/<accessKey>/click` (and its preflight): a click on a zone's
    /// item, sent as a beacon by the browser script.
    ClientClick,
    /// Any other path.
    Unrouted,
}

impl Endpoint {
    /// The endpoint of a path.
    pub fn of_path(path: &str) -> Endpoint {
        Endpoint::route(path).0
    }

    /// The endpoint of a path, and the access key (still percent-encoded) in it for the
    /// browser's endpoints, whose paths name their account.
    pub fn route(path: &str) -> (Endpoint, Option<&str>) {
        if path == "/admin" || path.starts_with("/admin/") {
            return (Endpoint::Admin, None);
        }
        if let Some(rest) = path.strip_prefix("/api/clientside/") {
            return match rest.split_once('/') {
                None if !rest.is_empty() => (Endpoint::ClientSide, Some(rest)),
                Some((key, "click")) if !key.is_empty() => (Endpoint::ClientClick, Some(key)),
                _ => (Endpoint::Unrouted, None),
            };
        }
        if let Some(key) = path
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix("/cs.js"))
            && !key.is_empty()
            && !key.contains('/')
        {
            return (Endpoint::ClientScript, Some(key));
        }
        let endpoint = Endpoint::ALL
            .into_iter()
            .find(|endpoint| {
                *endpoint != Endpoint::Unrouted
                    && !endpoint.is_clientside()
                    && endpoint.name() == path
            })
            .unwrap_or(Endpoint::Unrouted);
        (endpoint, None)
    }

    /// The endpoint's path, as metrics and logs name it (`other` for unrouted paths,
    /// whose paths are the client's choice).
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Serverside => "/api/serverside",
            Endpoint::ProductFeed => "/api/productfeed",
            Endpoint::Delta => "/api/delta",
            Endpoint::DeltaStatus => "/api/deltastatus",
            Endpoint::ProductFeedStatus => "/api/productfeedstatus",
            Endpoint::Forget => "/api/user/forget",
            Endpoint::ProductDelta => "/api/productdelta",
            Endpoint::ProductDeltaStatus => "/api/productdeltastatus",
            Endpoint::FeedCreate => "/feed-create",
            Endpoint::FeedAppend => "/feed-append",
            Endpoint::FeedClose => "/feed-close",
            Endpoint::PluginValidate => "/api/plugin/validate-account",
            Endpoint::PluginDashboard => "/api/plugin/dashboard",
            Endpoint::PluginDelete => "/api/plugin/delete",
            Endpoint::PluginFeedback => "/api/plugin/feedback",
            Endpoint::PluginSignupRequest => "/api/plugin/signuprequest",
            Endpoint::PluginSignupStatus => "/api/plugin/signupstatus",
            Endpoint::PluginAddStore => "/api/plugin/add-store",
            Endpoint::NextStepsComplete => "/api/next-steps/complete",
            Endpoint::Health => "/healthz",
            Endpoint::Metrics => "/metrics",
            Endpoint::OpenApi => "/openapi.json",
            Endpoint::Admin => "/admin",
            Endpoint::ClientScript => "/{accessKey}/cs.js",
            Endpoint::ClientSide => "/api/clientside/{accessKey}",
            Endpoint::ClientClick => "/api/clientside/{accessKey}/click",
            Endpoint::Unrouted => "other",
        }
    }

    /// The endpoint's name in a configuration's `rate_limits` table, for the endpoints
    /// an account's credentials reach.
    pub fn config_name(self) -> Option<&'static str> {
        Some(match self {
            Endpoint::Serverside => "serverside",
            Endpoint::ProductFeed => "productfeed",
            Endpoint::Delta => "delta",
            Endpoint::DeltaStatus => "deltastatus",
            Endpoint::ProductFeedStatus => "productfeedstatus",
            Endpoint::Forget => "forget",
            Endpoint::ProductDelta => "productdelta",
            Endpoint::ProductDeltaStatus => "productdeltastatus",
            Endpoint::FeedCreate => "feed_create",
            Endpoint::FeedAppend => "feed_append",
            Endpoint::FeedClose => "feed_close",
            Endpoint::PluginValidate => "plugin_validate",
            Endpoint::PluginDashboard => "plugin_dashboard",
            Endpoint::PluginDelete => "plugin_delete",
            Endpoint::PluginFeedback => "plugin_feedback",
            Endpoint::NextStepsComplete => "next_steps_complete",
            Endpoint::ClientSide => "clientside",
            Endpoint::ClientClick => "clientside_click",
            Endpoint::ClientScript
            | Endpoint::PluginSignupRequest
            | Endpoint::PluginSignupStatus
            | Endpoint::PluginAddStore
            | Endpoint::Health
            | Endpoint::Metrics
            | Endpoint::OpenApi
            | Endpoint::Admin
            | Endpoint::Unrouted => {
                return None;
            }
        })
    }

    /// The endpoint of a `rate_limits` name.
    pub fn of_config_name(name: &str) -> Option<Endpoint> {
        Endpoint::ALL
            .into_iter()
            .find(|endpoint| endpoint.config_name() == Some(name))
    }

    /// The endpoint's position in [`Endpoint::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the endpoint takes a streamed feed (served on `feeds.stream_listen` too).
    pub fn is_feed_stream(self) -> bool {
        matches!(
            self,
            Endpoint::FeedCreate | Endpoint::FeedAppend | Endpoint::FeedClose
        )
    }

    /// Whether the endpoint is the browser script's (its path names the account).
    pub fn is_clientside(self) -> bool {
        matches!(
            self,
            Endpoint::ClientScript | Endpoint::ClientSide | Endpoint::ClientClick
        )
    }

    /// The method the endpoint answers.
    pub fn method(self) -> http::Method {
        match self {
            Endpoint::Health
            | Endpoint::Metrics
            | Endpoint::OpenApi
            | Endpoint::Admin
            | Endpoint::ClientScript => http::Method::GET,
            _ => http::Method::POST,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_sits_at_its_index_and_routes_back_to_itself() {
        for (at, endpoint) in Endpoint::ALL.into_iter().enumerate() {
            assert_eq!(endpoint.index(), at, "{endpoint:?}");
            match endpoint {
                Endpoint::Unrouted => {}
                Endpoint::ClientScript => {
                    assert_eq!(Endpoint::route("/k/cs.js"), (endpoint, Some("k")));
                }
                Endpoint::ClientSide => {
                    assert_eq!(Endpoint::route("/api/clientside/k"), (endpoint, Some("k")));
                }
                Endpoint::ClientClick => {
                    let path = "/api/clientside/k/click";
                    assert_eq!(Endpoint::route(path), (endpoint, Some("k")));
                }
                _ => assert_eq!(Endpoint::of_path(endpoint.name()), endpoint),
            }
        }
        assert_eq!(Endpoint::of_path("/nowhere"), Endpoint::Unrouted);
    }
}
