//! The routing table: every endpoint of the contract and the routes beside it, with its
//! path, method, `rate_limits` name and position (metrics and rate limiters index by it).

/// The endpoints of the contract, plus routes outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
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
    /// `GET /healthz`
    Health,
    /// `GET /metrics`: Prometheus metrics (on `metrics_listen` instead, when set).
    Metrics,
    /// `GET /openapi.json`: the OpenAPI document of every endpoint.
    OpenApi,
    /// `GET /admin/...`: the admin API and dashboard (bearer admin tokens).
    Admin,
    /// Any other path.
    Unrouted,
}

impl Endpoint {
    /// The endpoint of a path.
    pub fn of_path(path: &str) -> Endpoint {
        if path == "/admin" || path.starts_with("/admin/") {
            return Endpoint::Admin;
        }
        Endpoint::ALL
            .into_iter()
            .find(|endpoint| *endpoint != Endpoint::Unrouted && endpoint.name() == path)
            .unwrap_or(Endpoint::Unrouted)
    }

    /// Every endpoint, in declaration order ([`Endpoint::index`] is a position in it).
    pub const ALL: [Endpoint; 18] = [
        Endpoint::Serverside,
        Endpoint::ProductFeed,
        Endpoint::Delta,
        Endpoint::DeltaStatus,
        Endpoint::ProductFeedStatus,
        Endpoint::Forget,
        Endpoint::ProductDelta,
        Endpoint::FeedCreate,
        Endpoint::FeedAppend,
        Endpoint::FeedClose,
        Endpoint::PluginValidate,
        Endpoint::PluginDashboard,
        Endpoint::PluginDelete,
        Endpoint::Health,
        Endpoint::Metrics,
        Endpoint::OpenApi,
        Endpoint::Admin,
        Endpoint::Unrouted,
    ];

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
            Endpoint::FeedCreate => "/feed-create",
            Endpoint::FeedAppend => "/feed-append",
            Endpoint::FeedClose => "/feed-close",
            Endpoint::PluginValidate => "/api/plugin/validate-account",
            Endpoint::PluginDashboard => "/api/plugin/dashboard",
            Endpoint::PluginDelete => "/api/plugin/delete",
            Endpoint::Health => "/healthz",
            Endpoint::Metrics => "/metrics",
            Endpoint::OpenApi => "/openapi.json",
            Endpoint::Admin => "/admin",
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
            Endpoint::FeedCreate => "feed_create",
            Endpoint::FeedAppend => "feed_append",
            Endpoint::FeedClose => "feed_close",
            Endpoint::PluginValidate => "plugin_validate",
            Endpoint::PluginDashboard => "plugin_dashboard",
            Endpoint::PluginDelete => "plugin_delete",
            Endpoint::Health
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

    /// The method the endpoint answers.
    pub fn method(self) -> http::Method {
        match self {
            Endpoint::Health | Endpoint::Metrics | Endpoint::OpenApi | Endpoint::Admin => {
                http::Method::GET
            }
            _ => http::Method::POST,
        }
    }
}
