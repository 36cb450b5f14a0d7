//! Schedules: when a campaign runs. A window of instants (start included, end not), and
//! optionally days of the week and hours of the day in the account's IANA time zone,
//! judged at each request's `now`, daylight-saving changes included (the zone's rules
//! come from the time-zone database bundled with `jiff`, not from the host).

use jiff::Timestamp;
use jiff::civil::Weekday;
use jiff::tz::TimeZone;

use crate::catalogue::UnixMillis;

/// When a campaign runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The first instant it runs (none: it has always run).
    pub start: Option<UnixMillis>,
    /// The first instant it no longer runs (none: it runs on).
    pub end: Option<UnixMillis>,
    /// The days of the week it runs on in the account's time zone, a bit each from
    /// Monday (bit 0) to Sunday (bit 6); every day when all seven are set.
    pub days: u8,
    /// The hours of the day it runs in (local time), a bit each from 0 to 23.
    pub hours: u32,
    /// The account's time zone.
    pub zone: TimeZone,
}

/// Every day of the week.
pub const EVERY_DAY: u8 = 0x7f;
/// Every hour of the day.
pub const EVERY_HOUR: u32 = 0x00ff_ffff;

/// The day names a schedule takes, Monday first.
pub const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Why a schedule does not run at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// Before its start.
    NotStarted,
    /// At or after its end.
    Ended,
    /// Not on this day of the week.
    Day,
    /// Not in this hour of the day.
    Hour,
}

impl Outside {
    /// The reason in words.
    pub fn reason(self) -> &'static str {
        match self {
            Outside::NotStarted => "its schedule has not started",
            Outside::Ended => "its schedule has ended",
            Outside::Day => "its schedule does not run on this day of the week",
            Outside::Hour => "its schedule does not run at this hour",
        }
    }
}

impl Schedule {
    /// Whether it runs at `now`.
    pub fn runs_at(&self, now: UnixMillis) -> Result<(), Outside> {
        if self.start.is_some_and(|start| now < start) {
            return Err(Outside::NotStarted);
        }
        if self.end.is_some_and(|end| now >= end) {
            return Err(Outside::Ended);
        }
        if self.days & EVERY_DAY == EVERY_DAY && self.hours & EVERY_HOUR == EVERY_HOUR {
            return Ok(());
        }
        // An instant outside jiff's range is outside every day and hour.
        let local = Timestamp::from_millisecond(now)
            .map_err(|_| Outside::Day)?
            .to_zoned_datetime(self.zone.clone());
        let day = match local.weekday() {
            Weekday::Monday => 0,
            Weekday::Tuesday => 1,
            Weekday::Wednesday => 2,
            Weekday::Thursday => 3,
            Weekday::Friday => 4,
            Weekday::Saturday => 5,
            Weekday::Sunday => 6,
        };
        if self.days & (1 << day) == 0 {
            return Err(Outside::Day);
        }
        let hour = u32::try_from(local.hour()).unwrap_or(0);
        if self.hours & (1 << hour) == 0 {
            return Err(Outside::Hour);
        }
        Ok(())
    }

    /// The next instant after `now` at which whether it runs may change (its start, its
    /// end, or the next local hour when it keeps to days or hours); `None` when it
    /// never changes again.
    pub fn next_boundary(&self, now: UnixMillis) -> Option<UnixMillis> {
        let mut next = [self.start, self.end]
            .into_iter()
            .flatten()
            .filter(|at| *at > now)
            .min();
        if self.days & EVERY_DAY != EVERY_DAY || self.hours & EVERY_HOUR != EVERY_HOUR {
            // Local hours start on the hour in every zone this database holds but a
            // few historical ones; the hour after `now` is a safe bound either way.
            let hour = 3_600_000;
            let at = (now.div_euclid(hour) + 1) * hour;
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        next
    }
}

/// How far ahead [`Schedule::next_change`] looks: a year of local hours.
const NEXT_CHANGE_STEPS: usize = 366 * 24 + 2;

impl Schedule {
    /// The next instant after `now` at which it starts or stops running, and whether it
    /// starts then; none within a year (for the console's list, off the request path).
    pub fn next_change(&self, now: UnixMillis) -> Option<(UnixMillis, bool)> {
        let running = self.runs_at(now).is_ok();
        let mut at = now;
        for _ in 0..NEXT_CHANGE_STEPS {
            at = self.next_boundary(at)?;
            if self.runs_at(at).is_ok() != running {
                return Some((at, !running));
            }
        }
        None
    }
}

/// The time zone named `name` (IANA, e.g. `Europe/London`), from the bundled database.
pub fn time_zone(name: &str) -> Option<TimeZone> {
    TimeZone::get(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(rfc3339: &str) -> UnixMillis {
        rfc3339
            .parse::<Timestamp>()
            .map(|t| t.as_millisecond())
            .unwrap_or(0)
    }

    fn london() -> TimeZone {
        time_zone("Europe/London").unwrap_or(TimeZone::UTC)
    }

    #[test]
    fn the_window_holds_its_first_second_and_not_its_end() {
        let schedule = Schedule {
            start: Some(millis("2026-11-28T00:00:00Z")),
            end: Some(millis("2026-11-30T00:00:00Z")),
            days: EVERY_DAY,
            hours: EVERY_HOUR,
            zone: TimeZone::UTC,
        };
        assert_eq!(
            schedule.runs_at(millis("2026-11-27T23:59:59.999Z")),
            Err(Outside::NotStarted)
        );
        assert_eq!(schedule.runs_at(millis("2026-11-28T00:00:00Z")), Ok(()));
        assert_eq!(schedule.runs_at(millis("2026-11-29T23:59:59Z")), Ok(()));
        assert_eq!(
            schedule.runs_at(millis("2026-11-30T00:00:00Z")),
            Err(Outside::Ended)
        );
    }

    #[test]
    fn hours_follow_daylight_saving_in_the_accounts_zone() {
        // 9:00 to 9:59 local time, in London: 09:00Z in winter, 08:00Z in summer.
        let schedule = Schedule {
            start: None,
            end: None,
            days: EVERY_DAY,
            hours: 1 << 9,
            zone: london(),
        };
        // The clocks went forward on 29 March 2026 at 01:00Z.
        assert_eq!(schedule.runs_at(millis("2026-03-28T09:30:00Z")), Ok(()));
        assert_eq!(
            schedule.runs_at(millis("2026-03-28T08:30:00Z")),
            Err(Outside::Hour)
        );
        assert_eq!(schedule.runs_at(millis("2026-03-30T08:30:00Z")), Ok(()));
        assert_eq!(
            schedule.runs_at(millis("2026-03-30T09:30:00Z")),
            Err(Outside::Hour)
        );
    }

    #[test]
    fn days_are_local_days() {
        // Saturday and Sunday in New York: Friday 23:30 there is Saturday in UTC.
        let schedule = Schedule {
            start: None,
            end: None,
            days: (1 << 5) | (1 << 6),
            hours: EVERY_HOUR,
            zone: time_zone("America/New_York").unwrap_or(TimeZone::UTC),
        };
        assert_eq!(
            schedule.runs_at(millis("2026-11-28T04:30:00Z")),
            Err(Outside::Day)
        );
        assert_eq!(schedule.runs_at(millis("2026-11-28T05:30:00Z")), Ok(()));
    }

    #[test]
    fn the_next_change_is_the_next_start_or_end_in_local_time() {
        // Saturdays and Sundays from 9:00 to 10:59 in London, from 28 March 2026.
        let schedule = Schedule {
            start: Some(millis("2026-03-28T00:00:00Z")),
            end: Some(millis("2026-04-06T00:00:00Z")),
            days: (1 << 5) | (1 << 6),
            hours: (1 << 9) | (1 << 10),
            zone: london(),
        };
        // Before the start: it starts Saturday at 9:00 (GMT).
        assert_eq!(
            schedule.next_change(millis("2026-03-20T12:00:00Z")),
            Some((millis("2026-03-28T09:00:00Z"), true))
        );
        // Running: it stops at 11:00.
        assert_eq!(
            schedule.next_change(millis("2026-03-28T09:30:00Z")),
            Some((millis("2026-03-28T11:00:00Z"), false))
        );
        // Sunday after the clocks went forward: 9:00 BST is 08:00Z.
        assert_eq!(
            schedule.next_change(millis("2026-03-28T11:00:00Z")),
            Some((millis("2026-03-29T08:00:00Z"), true))
        );
        // After the end: never again.
        assert_eq!(schedule.next_change(millis("2026-04-07T00:00:00Z")), None);
    }

    #[test]
    fn an_unknown_zone_is_none() {
        assert!(time_zone("Mars/Olympus_Mons").is_none());
        assert!(time_zone("Europe/London").is_some());
    }
}
