// Drafts kept on the server: a zone's campaign list and the segments, saved as the
// editor changes them (a moment after the last change), shown to every editor with who
// saved them and when, and discarded explicitly or by publishing them. The page warns
// before it is left with a change not yet saved. Uses `call`, `el` and `state`.
"use strict";

/** `value` as JSON text with every object's keys sorted: two lists that differ only
 * in the order of keys read the same. */
function canonical(value) {
  const sorted = (v) => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
    }
    return v;
  };
  return JSON.stringify(sorted(value));
}

/** How long ago an RFC 3339 instant was, in words. */
function ago(instant) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(instant)) / 1000));
  if (seconds < 60) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return minutes + (minutes === 1 ? " minute ago" : " minutes ago");
  const hours = Math.round(minutes / 60);
  if (hours < 48) return hours + (hours === 1 ? " hour ago" : " hours ago");
  return Math.round(hours / 24) + " days ago";
}

/** Every keeper, for the warning before the page is left. */
const draftKeepers = [];

/** The draft of one part (`zones/{zone}/draft` or `segments/draft`), whose body holds
 * `member` (`campaigns` or `segments`); its state is shown in the element `banner`. */
class DraftKeeper {
  constructor(member, banner) {
    this.member = member;
    this.banner = banner;
    this.path = null;
    this.saved = null; // canonical text of what the server holds for the part
    this.live = null; // canonical text of the live list
    this.pending = null; // the value waiting to be saved
    this.timer = null;
    this.draft = null;
    /** How long after the last change the draft is saved, in milliseconds. */
    this.delay = 400;
    draftKeepers.push(this);
  }

  /** Loads the part's draft at `path`, beside its `live` value: the draft's value, or
   * null when it has none. */
  async load(path, live) {
    await this.flush();
    this.path = path;
    this.live = canonical(live);
    this.saved = this.live;
    const answer = await call("GET", path);
    this.draft = answer.body.draft;
    if (this.draft) this.saved = canonical(this.draft.body[this.member]);
    this.show();
    return this.draft ? this.draft.body[this.member] : null;
  }

  /** The value changed: saved a moment later, or the draft discarded when the value is
   * the live one again. */
  changed(value) {
    if (!this.path || state.role !== "editor") return;
    this.pending = value;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.delay);
  }

  /** Whether a change is not saved yet. */
  unsaved() {
    return this.pending !== null && canonical(this.pending) !== this.saved;
  }

  /** Saves the pending change now. */
  async flush() {
    clearTimeout(this.timer);
    const value = this.pending;
    this.pending = null;
    if (value === null || !this.path) return;
    const text = canonical(value);
    if (text === this.saved) return;
    try {
      if (text === this.live) {
        await call("DELETE", this.path);
        this.draft = null;
      } else {
        const answer = await call("PUT", this.path, { [this.member]: value });
        this.draft = answer.body.draft;
      }
      this.saved = text;
      this.show();
    } catch (error) {
      if (this.pending === null) this.pending = value;
      this.banner.textContent = "The draft is not saved: " + error.message;
      this.banner.dataset.state = "error";
    }
  }

  /** Discards the draft on the server. */
  async discard() {
    clearTimeout(this.timer);
    this.pending = null;
    await call("DELETE", this.path);
    this.draft = null;
    this.saved = this.live;
    this.show();
  }

  show() {
    const draft = this.draft;
    this.banner.dataset.state = draft ? "draft" : "none";
    this.banner.dataset.author = draft ? draft.author : "";
    if (!draft) {
      this.banner.textContent = "";
      return;
    }
    let text = "Draft by " + draft.author + ", " + ago(draft.at) + ", kept on the server.";
    if (draft.basedOn !== draft.liveVersion) {
      text += " It was made from version " + draft.basedOn + "; the live list is now version " + draft.liveVersion + ".";
    }
    this.banner.textContent = text;
  }
}

window.addEventListener("beforeunload", (event) => {
  if (draftKeepers.some((keeper) => keeper.unsaved())) {
    event.preventDefault();
    event.returnValue = "";
  }
});
