//! Authentication: credentials travel in the JSON body, under field names that differ
//! per endpoint (see [`CredentialFields::of`]). Secrets are compared in constant time.

use constant_time_eq::constant_time_eq;
use std::sync::Arc;

use serde_json::Value;
use vitrine_fields::{Errors, Fields, JsonValue, KeyMatch};

use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::{AccountEntry, AppState};

/// The body fields carrying credentials on one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialFields {
    /// Field of the access key.
    pub access_key: &'static str,
    /// Field of the secret key; `None` where the contract has none.
    pub secret_key: Option<&'static str>,
}

impl CredentialFields {
    /// The table "Authentication" of the contract.
    pub fn of(endpoint: Endpoint) -> CredentialFields {
        let (access_key, secret_key) = match endpoint {
            Endpoint::Serverside => ("appId", Some("secretKey")),
            Endpoint::ProductFeed => ("appKey", Some("secretKey")),
            Endpoint::Delta | Endpoint::DeltaStatus => ("AppKey", Some("SecretKey")),
            Endpoint::ProductFeedStatus => ("AppKey", None),
            Endpoint::Forget => ("AccessKey", Some("SecretKey")),
            // The vendor's plugins.
            Endpoint::ProductDelta | Endpoint::ProductDeltaStatus => ("AppKey", Some("Secret")),
            Endpoint::FeedCreate | Endpoint::FeedAppend | Endpoint::FeedClose => {
                ("accessKey", Some("secretKey"))
            }
            Endpoint::PluginValidate
            | Endpoint::PluginDashboard
            | Endpoint::PluginDelete
            | Endpoint::PluginFeedback => ("AccessKey", Some("SecretKey")),
            Endpoint::NextStepsComplete => ("appkey", None),
            // The browser script's: the access key alone, from the path; a secret key
            // never reaches a browser.
            Endpoint::ClientScript | Endpoint::ClientSide | Endpoint::ClientClick => {
                ("appId", None)
            }
            // The admin API takes bearer admin tokens, never a store's keys.
            // Sign-up calls carry no account.
            Endpoint::PluginSignupRequest
            | Endpoint::PluginSignupStatus
            | Endpoint::PluginAddStore
            | Endpoint::Health
            | Endpoint::Metrics
            | Endpoint::OpenApi
            | Endpoint::Admin
            | Endpoint::Unrouted => ("", None),
        };
        CredentialFields {
            access_key,
            secret_key,
        }
    }
}

/// Credentials presented for an endpoint, not yet checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Presented<'v> {
    endpoint: Endpoint,
    access_key: &'v str,
    secret: Secret<'v>,
}

/// Why a request may be let in, beyond its access key. A request without a secret is
/// built only from a [`WithoutSecret`] (an endpoint whose contract has no secret field)
/// or from its sender's address (checked against the account's opt-in networks), so a
/// handler cannot skip the secret by leaving it out.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Secret<'v> {
    /// The secret key given, to be compared with the account's.
    Given(&'v str),
    /// None: the endpoint's contract has none.
    NotInContract,
    /// None: the sender's address, to be found in one of the account's
    /// `deltas_without_secret` networks.
    TrustedNetwork(std::net::IpAddr),
}

/// An endpoint whose contract has no secret field: the only kind a request may
/// present an access key alone to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithoutSecret(Endpoint);

impl WithoutSecret {
    /// The endpoint, when its contract has no secret field.
    pub fn of(endpoint: Endpoint) -> Option<WithoutSecret> {
        let fields = CredentialFields::of(endpoint);
        (fields.secret_key.is_none() && !fields.access_key.is_empty())
            .then_some(WithoutSecret(endpoint))
    }
}

/// Reads the credential fields; missing or mistyped ones are recorded as validation errors.
pub fn read<'v, V: JsonValue>(
    body: &Fields<'v, '_, V>,
    endpoint: Endpoint,
    errors: &mut Errors,
) -> Option<Presented<'v>> {
    let names = CredentialFields::of(endpoint);
    let access_key = body.req_nonempty_str(names.access_key, errors);
    let secret = match names.secret_key {
        Some(name) => Secret::Given(body.req_nonempty_str(name, errors)?),
        None => Secret::NotInContract,
    };
    Some(Presented {
        endpoint,
        access_key: access_key?,
        secret,
    })
}

impl<'v> Presented<'v> {
    /// An access key alone, on an endpoint whose contract has no secret (the browser
    /// script's, where the key is in the path).
    pub fn access_key(endpoint: WithoutSecret, access_key: &'v str) -> Presented<'v> {
        Presented {
            endpoint: endpoint.0,
            access_key,
            secret: Secret::NotInContract,
        }
    }

    /// An access key and a secret key (a login with them, as SFTP's).
    pub fn with_secret(endpoint: Endpoint, access_key: &'v str, secret: &'v str) -> Presented<'v> {
        Presented {
            endpoint,
            access_key,
            secret: Secret::Given(secret),
        }
    }

    /// An access key alone from a sender whose address the account trusts instead of
    /// its secret (`deltas_without_secret`, on the .NET SDK's delta endpoints).
    fn from_network(
        endpoint: Endpoint,
        access_key: &'v str,
        sender: std::net::IpAddr,
    ) -> Presented<'v> {
        Presented {
            endpoint,
            access_key,
            secret: Secret::TrustedNetwork(sender),
        }
    }
}

/// Finds the account of the credentials and checks the secret (or what stands for it),
/// the region and the endpoint's rate limit: the one check of every door.
pub fn authenticate(
    state: &AppState,
    presented: Presented<'_>,
) -> Result<Arc<AccountEntry>, ApiError> {
    let endpoint = presented.endpoint;
    let names = CredentialFields::of(endpoint);
    let Some(entry) = state.account(presented.access_key) else {
        return Err(ApiError::Credentials(format!(
            "{}: unknown access key",
            names.access_key
        )));
    };
    let secret_field = names.secret_key.unwrap_or("secretKey");
    let let_in = match presented.secret {
        Secret::Given(secret) => secret_matches(&entry, secret),
        Secret::NotInContract => names.secret_key.is_none(),
        Secret::TrustedNetwork(sender) => {
            matches!(
                endpoint,
                Endpoint::ProductDelta | Endpoint::ProductDeltaStatus
            ) && entry
                .config
                .deltas_without_secret
                .iter()
                .any(|network| network.contains(&sender))
        }
    };
    if !let_in {
        return Err(ApiError::Credentials(format!(
            "{secret_field}: does not match the access key"
        )));
    }
    let region = state.config().region;
    if entry.config.region != region {
        return Err(ApiError::Credentials(format!(
            "{}: the account belongs to region {}; this server serves region {}",
            names.access_key,
            entry.config.region.name(),
            region.name()
        )));
    }
    entry.admit(endpoint)?;
    Ok(entry)
}

/// Whether `secret` is the account's secret key (compared in constant time).
pub fn secret_matches(entry: &AccountEntry, secret: &str) -> bool {
    constant_time_eq(secret.as_bytes(), entry.config.secret_key.as_bytes())
}

/// [`authenticated`], except that on the .NET SDK's endpoints
/// ([`Endpoint::ProductDelta`], [`Endpoint::ProductDeltaStatus`]) a body without its
/// secret key field is let in when its sender's address is in one of the account's
/// `deltas_without_secret` networks (an explicit opt-in per account, by network).
/// Everything else still needs the secret.
pub fn authenticated_or_trusted<'v>(
    state: &AppState,
    body: &'v Value,
    endpoint: Endpoint,
    sender: std::net::IpAddr,
) -> Result<(Arc<AccountEntry>, Fields<'v, 'static>), ApiError> {
    let names = CredentialFields::of(endpoint);
    let sdk = matches!(
        endpoint,
        Endpoint::ProductDelta | Endpoint::ProductDeltaStatus
    );
    let without_secret = sdk
        && names
            .secret_key
            .is_some_and(|field| body.get(field).is_none());
    if without_secret {
        let mut errors = Errors::default();
        let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
            return Err(errors.into());
        };
        let access_key = fields.req_nonempty_str(names.access_key, &mut errors);
        if let Some(access_key) = access_key
            && state.account(access_key).is_some_and(|entry| {
                entry
                    .config
                    .deltas_without_secret
                    .iter()
                    .any(|network| network.contains(&sender))
            })
        {
            let presented = Presented::from_network(endpoint, access_key, sender);
            return Ok((authenticate(state, presented)?, fields));
        }
    }
    authenticated(state, body, endpoint)
}

/// Reads and checks the credentials of a body, reporting other missing credential
/// fields together.
pub fn authenticated<'v>(
    state: &AppState,
    body: &'v Value,
    endpoint: Endpoint,
) -> Result<(Arc<AccountEntry>, Fields<'v, 'static>), ApiError> {
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let Some(presented) = read(&fields, endpoint, &mut errors) else {
        return Err(errors.into());
    };
    let entry = authenticate(state, presented)?;
    Ok((entry, fields))
}
