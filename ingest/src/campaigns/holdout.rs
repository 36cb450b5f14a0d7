//! The store-wide holdout as a change of the campaign document's `experiments` part: a
//! `PUT` body (`{"share": 5, "strategy"?: "trending"}`) switches it on, or changes its
//! share or strategy (which starts a new period: the groups' figures would otherwise mix
//! two settings); switching it off ends the period. Compiled into the
//! [`Holdout`] the campaign set serves with.

use serde_json::Value;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::experiment::holdout::{
    Holdout, HoldoutDefinition, HoldoutPeriod, MAX_PERIODS, MAX_SHARE,
};
use vitrine_engine::zone::Strategy;
use vitrine_fields::{Errors, Fields, KeyMatch};

use super::experiments::NON_PERSONAL;
use super::rules::{only, whole};

/// What is done to the holdout.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Switched on, or its share or strategy changed (a `PUT` body).
    Put(&'a Value),
    /// Switched off.
    Off,
}

impl Action<'_> {
    /// Its name, as the audit log says it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Put(_) => "set",
            Action::Off => "switched off",
        }
    }
}

/// The holdout with `action` done at `now`; errors name the body's fields, or the rule
/// broken.
pub fn act(
    current: Option<&HoldoutDefinition>,
    action: Action<'_>,
    now: UnixMillis,
) -> Result<HoldoutDefinition, Errors> {
    let mut errors = Errors::default();
    let mut holdout = current.cloned().unwrap_or_default();
    let on = holdout.current().cloned();
    match action {
        Action::Put(body) => {
            let Some((share, strategy)) = read(body, &mut errors) else {
                return Err(errors);
            };
            if on
                .as_ref()
                .is_some_and(|p| p.share == share && p.strategy == strategy)
            {
                return Ok(holdout);
            }
            if let Some(last) = holdout.periods.last_mut()
                && last.to.is_none()
            {
                last.to = Some(now);
            }
            holdout.periods.push(HoldoutPeriod {
                from: now,
                to: None,
                share,
                strategy,
            });
            if holdout.periods.len() > MAX_PERIODS {
                holdout.periods.remove(0);
            }
        }
        Action::Off => {
            let Some(last) = holdout.periods.last_mut().filter(|p| p.to.is_none()) else {
                errors.push("holdout", "the holdout is off");
                return Err(errors);
            };
            last.to = Some(now);
        }
    }
    Ok(holdout)
}

/// The share and strategy of a `PUT` body.
fn read(body: &Value, errors: &mut Errors) -> Option<(u32, String)> {
    let fields = Fields::of(body, "", KeyMatch::Exact, errors)?;
    only(&fields, body, &["share", "strategy"], errors)?;
    let share = match fields.get("share") {
        Some(v) => whole(v, "share", 1, i64::from(MAX_SHARE), errors)?,
        None => {
            errors.push("share", "required");
            return None;
        }
    };
    let strategy = fields.opt_str("strategy", errors).unwrap_or("trending");
    if !NON_PERSONAL.contains(&strategy) {
        errors.push(
            "strategy",
            format!(
                "expected a strategy that does not read the shopper ({}), got {strategy:?}",
                NON_PERSONAL.join(", ")
            ),
        );
        return None;
    }
    errors.is_empty().then(|| {
        (
            u32::try_from(share).unwrap_or(MAX_SHARE),
            strategy.to_owned(),
        )
    })
}

/// The holdout in force, compiled (none while it is off).
pub fn compile(definition: Option<&HoldoutDefinition>) -> Option<Holdout> {
    let period = definition?.current()?;
    let strategy = Strategy::from_name(&period.strategy).unwrap_or(Strategy::Trending);
    Some(Holdout::of(period, strategy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn switching_on_changing_and_off_make_periods() {
        let on = act(None, Action::Put(&json!({"share": 5})), 1_000).unwrap();
        assert_eq!(on.current().unwrap().share, 5);
        assert_eq!(on.current().unwrap().strategy, "trending");
        // The same setting again keeps the period.
        let same = act(Some(&on), Action::Put(&json!({"share": 5})), 2_000).unwrap();
        assert_eq!(same, on);
        let changed = act(Some(&on), Action::Put(&json!({"share": 10})), 3_000).unwrap();
        assert_eq!(changed.periods.len(), 2);
        assert_eq!(changed.periods[0].to, Some(3_000));
        assert_eq!(changed.current().unwrap().from, 3_000);
        let off = act(Some(&changed), Action::Off, 4_000).unwrap();
        assert!(off.current().is_none());
        assert!(compile(Some(&off)).is_none());
        assert_eq!(compile(Some(&changed)).unwrap().share, 10);
        let error = act(Some(&off), Action::Off, 5_000).unwrap_err();
        assert!(
            error.joined().contains("holdout: the holdout is off"),
            "{error:?}"
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        for (body, expected) in [
            (json!({}), "share: required"),
            (json!({"share": 0}), "share"),
            (json!({"share": 51}), "share"),
            (json!({"share": 5.5}), "share"),
            (json!({"share": 5, "strategy": "personalized"}), "strategy"),
            (json!({"share": 5, "colour": "red"}), "colour"),
            (json!([5]), "expected an object"),
        ] {
            let error = act(None, Action::Put(&body), 1).unwrap_err();
            assert!(
                error.joined().contains(expected),
                "{body}: {}",
                error.joined()
            );
        }
    }
}
