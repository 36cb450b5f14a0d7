//! One SSH connection: password login against the accounts' keys, then session channels
//! that may start the `sftp` subsystem and nothing else.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use russh::server::{Auth, ChannelOpenHandle, Msg, Session as SshSession};
use russh::{Channel, ChannelId, MethodKind, MethodSet};

use super::area::Area;
use super::shared::Shared;
use crate::auth::{Presented, authenticate};
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AccountEntry;

/// The handler of one SSH connection.
pub(super) struct Session {
    shared: Arc<Shared>,
    peer: SocketAddr,
    /// The account logged in as, once the password was right.
    account: Option<Arc<AccountEntry>>,
    /// Session channels opened and not yet given to a subsystem.
    channels: HashMap<ChannelId, Channel<Msg>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("peer", &self.peer)
            .field(
                "account",
                &self.account.as_ref().map(|a| &a.config.access_key),
            )
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(super) fn new(shared: Arc<Shared>, peer: SocketAddr) -> Session {
        Session {
            shared,
            peer,
            account: None,
            channels: HashMap::new(),
        }
    }

    fn password_only() -> Auth {
        Auth::Reject {
            proceed_with_methods: Some(MethodSet::from(&[MethodKind::Password][..])),
            partial_success: false,
        }
    }

    /// Refuses a request on `channel` that this server never grants.
    fn refuse(
        &self,
        what: &str,
        channel: ChannelId,
        session: &mut SshSession,
    ) -> Result<(), russh::Error> {
        tracing::warn!(peer = %self.peer, account = ?self.account.as_ref().map(|a| &a.config.access_key), "SFTP server: refused a {what} request (SFTP only)");
        session.channel_failure(channel)
    }
}

impl russh::server::Handler for Session {
    type Error = russh::Error;

    async fn auth_none(&mut self, _user: &str) -> Result<Auth, Self::Error> {
        Ok(Session::password_only())
    }

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        _offer: russh::server::PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(Session::password_only())
    }

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        let address = self.peer.ip();
        let failures = &self.shared.failures;
        if failures.is_blocked(address) {
            tracing::warn!(peer = %self.peer, user, "SFTP login refused: too many failed logins from this address");
            return Ok(Session::password_only());
        }
        // The one check of every door: the secret, the region, the feed endpoint's rate
        // limit.
        let presented = Presented::with_secret(Endpoint::ProductFeed, user, password);
        match authenticate(&self.shared.state, presented) {
            Ok(entry) => {
                tracing::info!(peer = %self.peer, account = %entry.config.access_key, "SFTP login");
                self.account = Some(entry);
                Ok(Auth::Accept)
            }
            Err(error) => {
                // A login over the account's rate limit is not a wrong password.
                let blocked = !matches!(error, ApiError::RateLimited(..)) && failures.fail(address);
                let error = error.messages().join("; ");
                tracing::warn!(peer = %self.peer, user, blocked, %error, "SFTP login failed");
                Ok(Session::password_only())
            }
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        if self.account.is_none() {
            return Ok(());
        }
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        let (Some(entry), true) = (self.account.clone(), name == "sftp") else {
            return self.refuse("subsystem", channel, session);
        };
        let Some(opened) = self.channels.remove(&channel) else {
            return session.channel_failure(channel);
        };
        let area = Area::new(
            Arc::clone(&self.shared.state),
            Arc::clone(&self.shared.areas),
            entry,
            self.peer,
        );
        session.channel_success(channel)?;
        russh_sftp::server::run(opened.into_stream(), area).await;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        self.refuse("command", channel, session)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        self.refuse("shell", channel, session)
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        self.refuse("terminal", channel, session)
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        _value: &str,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        session.close(channel)
    }
}
