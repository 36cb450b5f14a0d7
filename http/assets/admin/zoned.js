// Times in the account's time zone: a schedule's start and end are entered and shown as
// the merchandiser's wall-clock time there (stored as instants, RFC 3339 in UTC), with
// daylight-saving changes taken from the browser's time-zone database; presets for
// today, this weekend and the next 7 days.
"use strict";

/** The wall-clock fields of `ms` in `zone`: year, month, day, hour, minute, weekday
 * (0 Monday … 6 Sunday). */
function wallClock(ms, zone) {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone, hourCycle: "h23", weekday: "short",
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
  }).formatToParts(new Date(ms));
  const get = (type) => parts.find((p) => p.type === type).value;
  return {
    year: Number(get("year")), month: Number(get("month")), day: Number(get("day")),
    hour: Number(get("hour")), minute: Number(get("minute")),
    weekday: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].indexOf(get("weekday")),
  };
}

/** How far `zone` is ahead of UTC at `ms`, in milliseconds. */
function zoneOffset(ms, zone) {
  const w = wallClock(ms, zone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute) - Math.floor(ms / 60000) * 60000;
}

/** The instant of a wall-clock time in `zone` (a time a clock change skips is read as
 * the hour after; one it repeats, as the first). */
function zonedInstant(year, month, day, hour, minute, zone) {
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  let guess = wall - zoneOffset(wall, zone);
  guess = wall - zoneOffset(guess, zone);
  return guess;
}

/** A `datetime-local` value (`YYYY-MM-DDTHH:MM`) for the instant `iso` in `zone`. */
function toZonedInput(iso, zone) {
  if (!iso) return "";
  const w = wallClock(Date.parse(iso), zone);
  const two = (n) => String(n).padStart(2, "0");
  return w.year + "-" + two(w.month) + "-" + two(w.day) + "T" + two(w.hour) + ":" + two(w.minute);
}

/** The instant (RFC 3339, UTC) a `datetime-local` value means in `zone`. */
function fromZonedInput(value, zone) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(value);
  if (!m) return null;
  const ms = zonedInstant(Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), zone);
  return new Date(ms).toISOString().replace(".000Z", "Z");
}

/** An instant as the merchandiser reads it in `zone`: "Sat 28 Nov 2026, 09:00". */
function zonedText(iso, zone) {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: zone, weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  }).format(new Date(iso));
}

/** A preset's start and end as `datetime-local` values in `zone`, from `now` (ms):
 * `today` (midnight to midnight), `weekend` (this or the coming Saturday 00:00 to
 * Monday 00:00), `week` (now to the same time 7 days later). */
function presetRange(preset, zone, now) {
  const w = wallClock(now, zone);
  const midnight = (daysAhead) => {
    const d = new Date(Date.UTC(w.year, w.month - 1, w.day + daysAhead));
    return zonedInstant(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), 0, 0, zone);
  };
  const iso = (ms) => new Date(ms).toISOString();
  let range;
  if (preset === "today") range = [midnight(0), midnight(1)];
  else if (preset === "weekend") {
    const toSaturday = w.weekday === 6 ? -1 : 5 - w.weekday;
    range = [midnight(toSaturday), midnight(toSaturday + 2)];
  } else range = [now, now + 7 * 86400000];
  return range.map((ms) => toZonedInput(iso(ms), zone));
}
