//! Identities: linking visitors to the user ids, emails and B2B account ids their
//! orders and details name, finding a shopper's other devices, and erasure
//! ([`Account::forget`]) of everything tied to an identifier.

use crate::tracking::key::IdentityKey;

use std::collections::HashSet;

use super::Account;
use super::visitor_view::MAX_DEVICES;
use crate::analytics::session_key;
use crate::event::Identity;

/// What [`Account::erasure_names`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErasureNames {
    /// The visitor ids.
    pub visitor_ids: Vec<String>,
    /// The user ids and emails, and the identifier itself.
    pub identities: Vec<String>,
}

/// The visitors, user ids and emails tied to an identifier.
struct Linked {
    visitor_ids: HashSet<String>,
    user_ids: HashSet<String>,
    emails: HashSet<String>,
}

/// What an erasure removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erasure {
    /// Visitors whose state was removed.
    pub visitors: usize,
    /// User records removed.
    pub users: usize,
}

impl Erasure {
    /// Whether anything matched.
    pub fn matched(&self) -> bool {
        self.visitors + self.users > 0
    }
}

impl Account {
    /// The visitor ids, user ids and emails an erasure of `identifier` would remove
    /// (see [`Account::forget`]), before it does.
    pub fn erasure_names(&self, identifier: &str) -> ErasureNames {
        let linked = self.linked(identifier);
        let mut identities: Vec<String> = linked.user_ids.into_iter().collect();
        identities.extend(linked.emails);
        identities.push(identifier.to_owned());
        ErasureNames {
            visitor_ids: linked.visitor_ids.into_iter().collect(),
            identities,
        }
    }

    /// Everything tied to `identifier`: matched by email (case-insensitive), user id,
    /// B2B account id or visitor id.
    fn linked(&self, identifier: &str) -> Linked {
        let email = identifier.to_lowercase();
        let mut visitor_ids: HashSet<String> = HashSet::new();
        let mut user_ids: HashSet<String> = HashSet::new();
        let mut emails: HashSet<String> = HashSet::new();
        if self.tracking.visitors.read().contains_key(identifier) {
            visitor_ids.insert(identifier.to_owned());
        }
        if self.tracking.users.contains_key(identifier) {
            user_ids.insert(identifier.to_owned());
        }
        for user in self.tracking.users.iter() {
            if user
                .email
                .as_deref()
                .is_some_and(|e| e.to_lowercase() == email)
            {
                user_ids.insert(user.user_id.clone());
            }
        }
        for key in [
            IdentityKey::User(identifier.to_owned()),
            IdentityKey::Email(email.clone()),
            IdentityKey::Account(identifier.to_owned()),
        ] {
            if let Some(linked) = self.tracking.identities.get(&key) {
                visitor_ids.extend(linked.iter().cloned());
                match key {
                    IdentityKey::User(id) => {
                        user_ids.insert(id);
                    }
                    IdentityKey::Email(e) => {
                        emails.insert(e);
                    }
                    IdentityKey::Account(_) => {}
                }
            }
        }
        // A person's user id and email lead to each other; a shared B2B account id does not
        // lead to its other users.
        for user_id in user_ids.clone() {
            if let Some(user) = self.tracking.users.get(&user_id)
                && let Some(e) = &user.email
            {
                emails.insert(e.to_lowercase());
            }
            if let Some(linked) = self.tracking.identities.get(&IdentityKey::User(user_id)) {
                visitor_ids.extend(linked.iter().cloned());
            }
        }
        for e in &emails {
            if let Some(linked) = self.tracking.identities.get(&IdentityKey::Email(e.clone())) {
                visitor_ids.extend(linked.iter().cloned());
            }
        }

        for visitor_id in &visitor_ids {
            if let Some(visitor) = self.tracking.visitors.read().get(visitor_id)
                && let Some(user_id) = &visitor.identity.user_id
            {
                user_ids.insert(user_id.clone());
            }
        }
        Linked {
            visitor_ids,
            user_ids,
            emails,
        }
    }

    /// The identifiers this account knows a person by (visitor ids, user ids, emails,
    /// account ids) for which `matches` holds: how an erasure known only by a keyed hash
    /// (a cluster's) finds its person. A scan of every visitor: for erasures only.
    pub fn identifiers_matching(&self, matches: impl Fn(&str) -> bool) -> Vec<String> {
        let mut found: HashSet<String> = HashSet::new();
        let mut consider = |id: &str| {
            if !found.contains(id) && matches(id) {
                found.insert(id.to_owned());
            }
        };
        for visitor in self.tracking.visitors.read().iter() {
            consider(visitor.key());
        }
        for user in self.tracking.users.iter() {
            consider(&user.user_id);
            if let Some(email) = &user.email {
                consider(email);
            }
        }
        for entry in self.tracking.identities.iter() {
            match entry.key() {
                IdentityKey::User(id) | IdentityKey::Email(id) | IdentityKey::Account(id) => {
                    consider(id);
                }
            }
        }
        let mut found: Vec<String> = found.into_iter().collect();
        found.sort();
        found
    }

    /// Removes every record tied to `identifier`: matched by email (case-insensitive),
    /// user id, B2B account id or visitor id. Aggregate counters stay.
    pub fn forget(&self, identifier: &str) -> Erasure {
        let email = identifier.to_lowercase();
        let Linked {
            visitor_ids,
            mut user_ids,
            emails,
        } = self.linked(identifier);
        let mut erasure = Erasure::default();
        for visitor_id in &visitor_ids {
            self.models
                .similar_sessions
                .erase_visitor(session_key(visitor_id));
            if let Some((_, visitor)) = self.tracking.visitors.remove(visitor_id) {
                erasure.visitors += 1;
                if let Some(session) = &visitor.session_id {
                    self.tracking.sessions.remove(session);
                    self.figures.site.forget_session(session_key(session));
                }
                if let Some(user_id) = &visitor.identity.user_id {
                    user_ids.insert(user_id.clone());
                }
            }
        }
        for user_id in &user_ids {
            if self.tracking.users.remove(user_id).is_some() {
                erasure.users += 1;
            }
        }
        self.moments.forget(&visitor_ids, &user_ids, &emails);
        self.tracking.identities.retain(|key, linked| {
            linked.retain(|v| !visitor_ids.contains(v));
            let erased_key = match key {
                IdentityKey::User(id) => user_ids.contains(id),
                IdentityKey::Email(e) => emails.contains(e) || *e == email,
                IdentityKey::Account(_) => false,
            };
            !linked.is_empty() && !erased_key
        });
        erasure
    }

    pub(super) fn link_visitor(&self, visitor_id: &str, identity: &Identity) {
        if let Some(user_id) = &identity.user_id {
            self.link(IdentityKey::User(user_id.clone()), visitor_id);
        }
        if let Some(email) = &identity.email {
            self.link(IdentityKey::Email(email.to_lowercase()), visitor_id);
        }
        if let Some(account_id) = &identity.account_id {
            self.link(IdentityKey::Account(account_id.clone()), visitor_id);
        }
    }

    /// Other visitors linked to the same user id or email (a B2B account id is shared by
    /// a company's users and links nobody's history), at most [`MAX_DEVICES`].
    pub(super) fn same_person(&self, visitor_id: &str, identity: &Identity) -> Vec<String> {
        let keys = [
            identity.user_id.clone().map(IdentityKey::User),
            identity
                .email
                .as_ref()
                .map(|e| IdentityKey::Email(e.to_lowercase())),
        ];
        let mut others: Vec<String> = Vec::new();
        for key in keys.into_iter().flatten() {
            if let Some(linked) = self.tracking.identities.get(&key) {
                for other in linked.iter() {
                    if other != visitor_id && !others.contains(other) && others.len() < MAX_DEVICES
                    {
                        others.push(other.clone());
                    }
                }
            }
        }
        others.sort();
        others
    }

    fn link(&self, key: IdentityKey, visitor_id: &str) {
        self.tracking
            .identities
            .entry(key)
            .or_default()
            .insert(visitor_id.to_owned());
    }
}
